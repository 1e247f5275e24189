#!/usr/bin/env bash
# Stage the Space: this folder's files plus salon's sources under salon/, ready for
#   space/stage.sh /tmp/salon-space && cd /tmp/salon-space && openenv push --repo-id ME/salon-paint
set -euo pipefail
dest="${1:?usage: space/stage.sh DIR}"
here="$(cd "$(dirname "$0")" && pwd)"; root="$(dirname "$here")"
mkdir -p "$dest/salon" "$dest/outputs"
cp "$here"/openenv.yaml "$here"/Dockerfile "$here"/README.md "$here"/__init__.py "$here"/client.py \
   "$here"/pyproject.toml "$dest/"
(cd "$root" && git ls-files -- pyproject.toml README.md package.json package-lock.json models curate pool judges train apps \
   | tar -cf - -T -) | tar -xf - -C "$dest/salon"
echo "staged $dest: openenv push from there"
