#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The release .deb of a source tree, built once per tree content and shared
# by the tests that need it (the host suite's package test, the vm suite's
# systemd-units-vm, the sanitizer build's host suite): a copy of the tree
# without .git or Meson build directories, `dpkg-buildpackage -us -uc -b`
# there (the unit suite runs at package build, as a Debian build does).
# Cached under $RDMAGATE_VM_CACHE/deb/KEY/ with its build.log, .changes and
# the seconds the build took (file `seconds`); prints the .deb's path, and
# on stderr whether it was built or reused.
# Usage: build-deb.sh SRC
set -euo pipefail
SRC=$(cd "$1" && pwd -P)
CACHE=${RDMAGATE_VM_CACHE:-/var/tmp/rdmagate-vm}/deb
mkdir -p "$CACHE"

# the tree: no .git, no Meson build directory
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
cached() {
	[ -s "$out/deb" ] && [ -f "$(cat "$out/deb")" ] || return 1
	echo "build-deb: reused $(cat "$out/deb") (built in $(cat "$out/seconds" 2>/dev/null || echo ?)s)" >&2
	cat "$out/deb"
}
cached && exit 0
exec 9> "$CACHE/.lock"
flock 9
cached && exit 0
find "$CACHE" -mindepth 1 -maxdepth 1 -type d -mmin +1440 -exec rm -rf {} +
rm -rf "$out"
mkdir -p "$out/src"
tree | tar -C "$out/src" -xf -
t0=$(date +%s)
if ! (cd "$out/src" && DEB_BUILD_OPTIONS=parallel=2 \
	dpkg-buildpackage -us -uc -b) > "$out/build.log" 2>&1; then
	tail -n 40 "$out/build.log" >&2
	echo "build-deb: dpkg-buildpackage failed (log: $out/build.log)" >&2
	exit 1
fi
deb=$(ls "$out"/rdmagate_*.deb | head -n 1)
rm -rf "$out/src"
echo $(( $(date +%s) - t0 )) > "$out/seconds"
echo "build-deb: built ${deb##*/} in $(cat "$out/seconds")s" >&2
echo "$deb" > "$out/deb"
echo "$deb"
