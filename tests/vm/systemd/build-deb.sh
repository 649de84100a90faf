#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds (or reuses) the release .deb of a source tree with the package
# test's recipe (a copy of the tree, `dpkg-buildpackage -us -uc -b`) and
# prints its path.  Cached by the tree's content under
# $RDMAGATE_VM_CACHE/deb/, so the vm suite builds it once per change.
# Usage: build-deb.sh SRC
set -euo pipefail
SRC=$(cd "$1" && pwd -P)
CACHE=${RDMAGATE_VM_CACHE:-/var/tmp/rdmagate-vm}/deb
mkdir -p "$CACHE"

# the tree as the package test copies it: no .git, no Meson build directory
excludes=(--exclude=./.git)
for d in "$SRC"/*/; do
	[ -d "$d/meson-private" ] && excludes+=("--exclude=./$(basename "$d")")
done
tree() {
	tar -C "$SRC" "${excludes[@]}" --sort=name --mtime=@0 --owner=0 \
		--group=0 --numeric-owner -cf - .
}
key=$(tree | sha256sum | cut -c1-16)
out=$CACHE/$key
if [ -s "$out/deb" ] && [ -f "$(cat "$out/deb")" ]; then
	cat "$out/deb"
	exit 0
fi
exec 9> "$CACHE/.lock"
flock 9
if [ -s "$out/deb" ] && [ -f "$(cat "$out/deb")" ]; then
	cat "$out/deb"
	exit 0
fi
find "$CACHE" -mindepth 1 -maxdepth 1 -type d -mmin +1440 -exec rm -rf {} +
rm -rf "$out"
mkdir -p "$out/src"
tree | tar -C "$out/src" -xf -
t0=$(date +%s)
if ! (cd "$out/src" && DEB_BUILD_OPTIONS="nocheck parallel=2" \
	dpkg-buildpackage -us -uc -b) > "$out/build.log" 2>&1; then
	tail -n 30 "$out/build.log" >&2
	echo "build-deb: dpkg-buildpackage failed (log: $out/build.log)" >&2
	exit 1
fi
deb=$(ls "$out"/rdmagate_*.deb | head -n 1)
rm -rf "$out/src"
echo "build-deb: built ${deb##*/} in $(( $(date +%s) - t0 ))s" >&2
echo "$deb" > "$out/deb"
echo "$deb"
