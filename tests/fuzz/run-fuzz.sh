#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs one libFuzzer target for a bounded time on a copy of its seed corpus
# in the build directory (the source tree is never written), and prints the
# number of executions. -error_exitcode=1: libFuzzer's default (77) would
# read as "skipped" to meson.
# Usage: run-fuzz.sh BINARY SEED_DIR WORK_DIR SECONDS [LIBFUZZER_OPTION...]
set -eu
bin=$1 seeds=$2 work=$3 secs=$4
shift 4
mkdir -p "$work/corpus" "$work/artifacts"
cp "$seeds"/* "$work/corpus/"
rc=0
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
	-artifact_prefix="$work/artifacts/" "$@" "$work/corpus" || rc=$?
# A finding on a CI machine is lost with the machine: print each
# artifact so that the log alone reproduces it (base64 -d > FILE).
if [ "$rc" -ne 0 ]; then
	for a in "$work"/artifacts/*; do
		[ -f "$a" ] || continue
		echo "run-fuzz: artifact $(basename "$a") (base64):"
		base64 "$a"
	done
fi
exit "$rc"
