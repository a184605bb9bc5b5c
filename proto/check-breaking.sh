#!/usr/bin/env bash
# Breaking-change check (buf FILE rules) of proto/ against the previous commit.
# Usage: proto/check-breaking.sh <path to buf>; run from anywhere, it works from the repo root.
# Skipped (exit 0, with the reason) when there is nothing to compare against: no previous commit
# (first commit, or a shallow clone where HEAD~1 is missing) or a previous commit without proto/.
set -euo pipefail

buf="${1:?usage: $0 <path to buf>}"
cd "$(dirname "$0")/.."
case "$buf" in
    /*) ;;
    *) buf="$PWD/${buf#./}" ;;
esac

if ! git rev-parse --git-dir >/dev/null 2>&1; then
    echo "buf breaking: skipped, not a git checkout"
    exit 0
fi
if ! git rev-parse --verify --quiet 'HEAD~1^{commit}' >/dev/null; then
    if [ "$(git rev-parse --is-shallow-repository)" = "true" ]; then
        echo "buf breaking: skipped, shallow clone without the previous commit (HEAD~1)"
    else
        echo "buf breaking: skipped, HEAD has no previous commit"
    fi
    exit 0
fi
previous_protos="$(git ls-tree -r --name-only 'HEAD~1' -- proto)"
if ! grep -q '\.proto$' <<<"$previous_protos"; then
    echo "buf breaking: skipped, the previous commit (HEAD~1) has no .proto files under proto/"
    exit 0
fi

"$buf" breaking proto --against '.git#ref=HEAD~1,subdir=proto'
echo "buf breaking: proto/ is compatible with HEAD~1"
