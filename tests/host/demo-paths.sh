#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# host test demo-paths: ./dev demo's last step (tests/vm/demo.sh
# --real-guest) names build outputs that exist, so that a binary moving in
# the tree fails here in seconds, not minutes into the demo's test VM (it
# happened: rdmagatectl left broker/ for ctl/ and the demo kept the old
# path).
# Usage: demo-paths.sh SOURCE_DIR BUILD_DIR
set -u
. "$1/tests/tap.sh"

args=()
mapfile -t args < <("$1/tests/vm/demo.sh" --real-guest-args "$2")
check "demo.sh --real-guest-args gives pvrdma-operator.sh's five arguments (${#args[@]})" \
	test "${#args[@]}" = 5
for f in "${args[@]}"; do
	check "the demo's real-guest step names $f: an executable the build made" \
		test -f "$f" -a -x "$f"
done
tap_end
