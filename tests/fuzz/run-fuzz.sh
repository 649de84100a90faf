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
exec "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
	-artifact_prefix="$work/artifacts/" "$@" "$work/corpus"
