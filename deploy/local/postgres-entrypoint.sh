#!/bin/sh
# The local Postgres image's entry point (postgres.Containerfile): on an empty PGDATA it does what
# the official image's does for this project's compose file (a cluster owned by POSTGRES_USER with
# POSTGRES_PASSWORD, the database POSTGRES_DB, then every *.sh and *.sql of
# /docker-entrypoint-initdb.d), then runs the server in the foreground as user postgres.
set -eu
if [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA" /run/postgresql
    chown postgres:postgres "$PGDATA" /run/postgresql
    chmod 0700 "$PGDATA"
    exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
: "${POSTGRES_PASSWORD:?the compose file sets POSTGRES_PASSWORD}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    password_file="$(mktemp)"
    printf '%s' "$POSTGRES_PASSWORD" > "$password_file"
    initdb --username="$POSTGRES_USER" --pwfile="$password_file" --encoding=UTF8 \
        --auth-local=trust --auth-host=scram-sha-256 >/dev/null
    rm -f "$password_file"
    echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
    # Initialised on the socket only: nobody connects over the network before it is ready.
    pg_ctl --wait --silent -o "-c listen_addresses=''" start
    if [ "$POSTGRES_DB" != postgres ]; then
        psql -v ON_ERROR_STOP=1 --username="$POSTGRES_USER" --dbname=postgres \
            -c "CREATE DATABASE \"$POSTGRES_DB\"" >/dev/null
    fi
    for script in /docker-entrypoint-initdb.d/*; do
        case "$script" in
            *.sh) echo "postgres-entrypoint: $script"; . "$script" ;;
            *.sql) echo "postgres-entrypoint: $script"
                psql -v ON_ERROR_STOP=1 --username="$POSTGRES_USER" --dbname="$POSTGRES_DB" -f "$script" ;;
        esac
    done
    pg_ctl --wait --silent stop
fi
exec postgres -c listen_addresses='*'
