#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm test: rdmagate-guest perf, every test once with small counts between
# two simulated guests on two workers (rxe0, rxe1): both sides must exit 0
# and each side that reports must print its figure line, with numbers.
set -u
. "$(dirname "$0")/lib.sh"

two_devices
start_worker a "$RDMAGATE_VM_DEV0" || exit 1
start_worker b "$RDMAGATE_VM_DEV1" || exit 1
fail=0
port=18600
# a side whose peer failed may wait for it forever: bound each run
T=60

# The figure lines perf prints (see docs/guest-simulator.md).
N='[0-9][0-9.]*'
LAT=": avg $N us, median $N us, min $N us, p99 $N us (.*round trip)\$"
BW=": $N MiB/s, $N Gbit/s, $N Mpps, $N s\$"

# expect NAME FILE REGEX: FILE has a line matching REGEX
expect() {
	grep -q "$3" "$2" && return 0
	echo "FAIL: $1: no line matching '$3' in ${2##*.}"
	fail=1
}

# pair NAME "PERF ARGS" SERVER_REGEX CLIENT_REGEX: the server on worker b,
# the client on worker a; an empty regex: that side prints no figure.
pair() {
	name=$1 args=$2
	srv=$RG_DIR/$name.srv cli=$RG_DIR/$name.cli
	port=$((port + 1))
	echo "== $name: perf $args"
	timeout $T "$GUEST" --transport "$RG_TRANSPORT" \
		--socket "$RG_DIR/b.sock" --gid "1=$gid_b" \
		perf $args -p $port >"$srv" 2>&1 &
	p=$!
	# the client retries its connection for 5 s while the server starts
	timeout $T "$GUEST" --transport "$RG_TRANSPORT" \
		--socket "$RG_DIR/a.sock" --gid "1=$gid_a" \
		perf $args -p $port 127.0.0.1 >"$cli" 2>&1
	rc=$?
	wait $p
	rs=$?
	sed 's/^/  server: /' "$srv"
	sed 's/^/  client: /' "$cli"
	# 124: killed by timeout
	[ $rc -eq 0 ] || { echo "FAIL: $name: client exit $rc"; fail=1; }
	[ $rs -eq 0 ] || { echo "FAIL: $name: server exit $rs"; fail=1; }
	[ -z "$3" ] || expect "$name" "$srv" "$3"
	[ -z "$4" ] || expect "$name" "$cli" "$4"
	! grep -q "^perf: .*:" "$srv" || [ -n "$3" ] ||
		{ echo "FAIL: $name: the server reported"; fail=1; }
}

pair send_lat "-t send_lat -s 64 -n 200" "" \
	"^perf: send_lat 64 B x 200$LAT"
pair send_lat_ev "-t send_lat -s 64 -n 100 -e" "" \
	"^perf: send_lat 64 B x 100 events$LAT"
pair write_lat "-t write_lat -s 64 -n 200" \
	"^perf: write_lat 64 B x 200$LAT" "^perf: write_lat 64 B x 200$LAT"
pair read_lat "-t read_lat -s 64 -n 200" "" \
	"^perf: read_lat 64 B x 200$LAT"
pair write_bw "-t write_bw -s 4096 -n 300 -D 32" "" \
	"^perf: write_bw 4096 B x 300$BW"
pair read_bw "-t read_bw -s 4096 -n 300 -D 32" "" \
	"^perf: read_bw 4096 B x 300$BW"
pair send_bw "-t send_bw -s 64 -n 1000" \
	"^perf: send_bw 64 B x 1000 (receiver, from the first)$BW" \
	"^perf: send_bw 64 B x 1000$BW"

echo "== reg: perf -t reg -s 32M -R 2"
out=$RG_DIR/reg.out
timeout $T "$GUEST" --transport "$RG_TRANSPORT" \
	--socket "$RG_DIR/a.sock" --gid "1=$gid_a" perf -t reg \
	-s 32M -R 2 >"$out" 2>&1
rc=$?
sed 's/^/  /' "$out"
[ $rc -eq 0 ] || { echo "FAIL: reg: exit $rc"; fail=1; }
[ "$(grep -c "^perf: reg 32 MiB: $N ms\$" "$out")" -eq 2 ] ||
	{ echo "FAIL: reg: not two 'perf: reg 32 MiB: X ms' lines"; fail=1; }

if [ $fail -ne 0 ]; then
	show_worker_logs
	exit 1
fi
echo "ok: every perf test ran on both sides and printed its figures"
