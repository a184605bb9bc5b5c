# syntax=docker/dockerfile:1
# One image for all four services (matchmaking, table, scoring, wallet). The service is chosen by
# argument: the entry point is `python -m`, so `docker run IMAGE services.table` runs exactly what
# `make run` starts for the table server (`python -m services.table`). See deploy/README.md.
#
# PYTHON_IMAGE: the base. Any Debian bookworm image with python3.11 on PATH as `python` and its
# venv module: the official slim image by default, or the local one deploy/local/base.sh builds
# from Debian's packages where no registry is reachable.
# WHEELHOUSE: a directory of the build context with wheels of every dependency (`pip wheel`, as
# deploy/compose-test.sh makes on the host). With wheels there the build installs from them alone
# (`--no-index`: it needs no network); the default directory holds none, and pip uses PyPI.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
ARG WHEELHOUSE=deploy/docker/wheels

# --- build: dependencies and generated protobuf code --------------------------------------------
FROM ${PYTHON_IMAGE} AS build
ARG WHEELHOUSE
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
COPY ${WHEELHOUSE} /wheels
# From PyPI, gcc and headers for wheels that must compile on this platform (they stay in this
# stage); from a wheelhouse nothing compiles, and the venv's pip is told to look nowhere else.
RUN python -m venv /opt/venv \
    && if ls /wheels/*.whl >/dev/null 2>&1; then \
        printf '[global]\nno-index = true\nfind-links = /wheels\n' > /opt/venv/pip.conf; \
    else \
        apt-get update \
        && apt-get install -y --no-install-recommends gcc libc6-dev \
        && rm -rf /var/lib/apt/lists/* \
        && /opt/venv/bin/pip install --upgrade pip; \
    fi
ENV PATH=/opt/venv/bin:$PATH
WORKDIR /app
COPY pyproject.toml README.md ./
COPY proto ./proto
COPY libs ./libs
COPY services ./services
# Code generation inside the build, as `make gen` does (generated code is never committed).
RUN pip install "grpcio-tools>=1.60" \
    && rm -rf libs/duelmahjong/v1 && mkdir -p libs/duelmahjong/v1 \
    && python -m grpc_tools.protoc -Iproto --python_out=libs --grpc_python_out=libs \
        proto/duelmahjong/v1/*.proto \
    && printf '"""Generated from proto/duelmahjong/v1 at image build. Do not edit."""\n' \
        > libs/duelmahjong/v1/__init__.py
# Installed the way `make install` installs it (editable, so SQL migrations and other data files
# are read from /app exactly as in a checkout), without the local/dev extras: NATS and Postgres
# are real servers next to the container, never embedded ones.
RUN pip install -e . && python -c "import duelmahjong.v1, services"
# The rules library's lookup tables take seconds to build; build them once here so no container
# builds them at start (and a read-only root filesystem costs nothing).
ENV DUELMAHJONG_CACHE_DIR=/opt/duelmahjong-cache
RUN python -c "import sys; from duelmahjong.rules.tables import get_tables, cache_path; \
get_tables(); cache_path().is_file() or sys.exit(f'no rule tables at {cache_path()}')"

# --- test: the runner that the compose file uses to play the end-to-end tests -------------------
FROM build AS test
COPY tests ./tests
RUN pip install -e '.[dev]'
ENTRYPOINT ["python", "-m"]
CMD ["pytest", "tests/deploy/test_deployed_stack.py"]

# --- runtime: slim, non-root, no compiler -------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime
ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 PATH=/opt/venv/bin:$PATH \
    DUELMAHJONG_CACHE_DIR=/opt/duelmahjong-cache GRPC_HOST=0.0.0.0 GRPC_PORT=50051 METRICS_PORT=9100
RUN groupadd --system --gid 10001 duel \
    && useradd --system --uid 10001 --gid duel --home-dir /app --shell /usr/sbin/nologin duel
COPY --from=build /opt/venv /opt/venv
COPY --from=build /app /app
COPY --from=build /opt/duelmahjong-cache /opt/duelmahjong-cache
COPY deploy/docker/grpc_health_probe.py /usr/local/bin/grpc-health-probe
# The wheelhouse stayed in the build stage: the runtime's pip is pointed at no local index.
RUN chmod 0755 /usr/local/bin/grpc-health-probe && rm -f /opt/venv/pip.conf
WORKDIR /app
USER 10001:10001
EXPOSE 50051 9100
# Probes the gRPC health service of whichever service runs in this container (compose healthcheck;
# Kubernetes runs it as an exec probe: the kubelet's own gRPC probe cannot speak TLS).
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 CMD ["grpc-health-probe"]
# python is PID 1 and the platform handles SIGTERM itself (graceful shutdown, table drain). No
# default service on purpose: compose and the manifests always name one (services.<name>).
ENTRYPOINT ["python", "-m"]
