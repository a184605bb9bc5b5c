#!/usr/bin/env bash
# The local base image, for machines that reach Debian's packages but no container registry:
# a minimal Debian bookworm rootfs (mmdebstrap --variant=minbase) with python3, venv and
# ca-certificates, imported as localhost/duel-base:bookworm. Beside it, localhost/duel-debs:bookworm,
# an image holding only the .deb files the local Postgres and Prometheus images install
# (/debs-postgres, /debs-prometheus: the closure of postgresql-15 and of prometheus over that
# rootfs, downloaded here on the host), so no image build needs the network.
#   deploy/local/base.sh ENGINE CACHE_DIR
# Cached by the hash of this script: both images in the engine's storage (a fresh clone on the
# same machine finds them there), and the tarballs under CACHE_DIR (for when that storage was
# emptied). A run with the images present does nothing.
set -euo pipefail
engine="$1"
cache_root="$2"
cd "$(dirname "$0")"
key="$(sha256sum base.sh | cut -c1-16)"
cache="$cache_root/base-$key"
base="localhost/duel-base:$key"
debs="localhost/duel-debs:$key"

# What every local image starts from; wget for the health checks of the compose file,
# passwd for the runtime stage's useradd, python-is-python3 for the image's `python -m` entry point.
packages=python3,python3-venv,python-is-python3,ca-certificates,passwd,wget

have() { "$engine" image inspect "$1" >/dev/null 2>&1; }
import_image() { # import TARBALL IMAGE [--change ...]: its progress lines only on failure
    local tarball="$1" image="$2" out
    shift 2
    if ! out="$("$engine" import "$@" "$tarball" "$image" 2>&1)"; then
        echo "$out" >&2
        exit 1
    fi
}

if ! have "$base" || ! have "$debs"; then
    if [[ ! -f $cache/base.tar || ! -f $cache/debs.tar ]]; then
        rm -rf "$cache" "$cache.tmp"
        mkdir -p "$cache.tmp/debs/debs-postgres" "$cache.tmp/debs/debs-prometheus"
        sources=()
        [[ -f /etc/apt/sources.list.d/debian.sources ]] && sources=(/etc/apt/sources.list.d/debian.sources)
        echo "local base: mmdebstrap --variant=minbase bookworm (+ postgresql-15, prometheus debs)" >&2
        # The debs are downloaded inside the finished rootfs, so they are exactly what it lacks.
        download() {
            printf '%s' "chroot \"\$1\" apt-get install -qq --download-only --no-install-recommends -y $1 \
                && mv \"\$1\"/var/cache/apt/archives/*.deb $cache.tmp/debs/debs-$2/"
        }
        mmdebstrap --quiet --variant=minbase --mode=root --format=tar --include="$packages" \
            --customize-hook="$(download postgresql-15 postgres)" \
            --customize-hook="$(download prometheus prometheus)" \
            bookworm "$cache.tmp/base.tar" "${sources[@]}"
        tar -C "$cache.tmp/debs" -cf "$cache.tmp/debs.tar" debs-postgres debs-prometheus
        rm -rf "$cache.tmp/debs"
        mv "$cache.tmp" "$cache"
        # Only this version is kept: older bases are dead weight.
        find "$cache_root" -maxdepth 1 -name 'base-*' ! -name "base-$key" -exec rm -rf {} +
    fi
    import_image "$cache/base.tar" "$base" \
        --change "ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        --change "ENV=LANG=C.UTF-8"
    import_image "$cache/debs.tar" "$debs"
fi
"$engine" tag "$base" localhost/duel-base:bookworm
"$engine" tag "$debs" localhost/duel-debs:bookworm
