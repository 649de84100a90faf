#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Host B's side of two-hosts-vm: runs each request host A drops into the
# shared directory DIR (req.ID: a bash script) in the background, its
# output into out.ID and its exit status into rc.ID (written last, renamed
# into place), until DIR/stop appears. Says it is up with DIR/ready.
set -u
D=$1
[ -d "$D" ] || { echo "peer-agent: no directory $D" >&2; exit 2; }
exec {tick}<> <(:)
pause() { read -r -t "$1" -u "$tick" _ || true; }
declare -A seen
uname -n > "$D/ready.tmp" && mv "$D/ready.tmp" "$D/ready"
while [ ! -e "$D/stop" ]; do
	for f in "$D"/req.*; do
		[ -e "$f" ] || continue
		id=${f##*/req.}
		[ -z "${seen[$id]:-}" ] || continue
		seen[$id]=1
		(
			bash "$f" > "$D/out.$id" 2>&1 < /dev/null
			echo $? > "$D/rc.$id.tmp"
			mv "$D/rc.$id.tmp" "$D/rc.$id"
		) &
	done
	pause 0.1
done
jobs -p | xargs -r kill 2>/dev/null
exit 0
