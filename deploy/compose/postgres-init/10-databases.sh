#!/bin/sh
# Postgres init (/docker-entrypoint-initdb.d, run once on an empty data volume by the official image
# and by the local one alike): one database per service that keeps data, named in
# POSTGRES_DATABASES (space- or comma-separated), beside the admin database POSTGRES_DB. A service
# gains a database by adding its name there and its URL to its environment.
set -eu
for database in $(echo "${POSTGRES_DATABASES:-}" | tr ',' ' '); do
    echo "creating database $database"
    psql -v ON_ERROR_STOP=1 --username="$POSTGRES_USER" --dbname="$POSTGRES_DB" \
        -c "CREATE DATABASE \"$database\"" >/dev/null
done
