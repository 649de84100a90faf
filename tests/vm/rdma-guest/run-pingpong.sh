#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm test: rdmagate-guest rc_pingpong / ud_pingpong / srq_pingpong against
# the native ibv_rc_pingpong / ibv_ud_pingpong / ibv_srq_pingpong
# (ibverbs-utils), the guest as server then as client, polling and events.
set -u
. "$(dirname "$0")/lib.sh"

[ "${RDMAGATE_VM_NDEV:-0}" -ge 2 ] || {
	echo "needs two rxe devices (rdmagate-vm -n 2)"; exit 77; }
for t in ibv_rc_pingpong ibv_ud_pingpong ibv_srq_pingpong; do
	command -v $t >/dev/null || {
		echo "$t (ibverbs-utils) is not installed"; exit 77; }
done
set -- $(host_gid "$RDMAGATE_VM_DEV0") || exit 1
gidx_g=$1 gid_g=$2
set -- $(host_gid "$RDMAGATE_VM_DEV1") || exit 1
gidx_n=$1
start_worker g "$RDMAGATE_VM_DEV0" || exit 1
fail=0

# field WHICH FILE: the QPN of the "local"/"remote" address line
qpn() {
	sed -n "s/^  $1 *address: *LID 0x[0-9a-f]*, QPN \(0x[0-9a-f]*\),.*/\1/p" "$2"
}

# run NAME TOOL GUEST_ARGS NATIVE_ARGS GUEST_IS_SERVER (TOOL: rc, ud, srq)
run() {
	name=$1 tool=$2 gargs=$3 nargs=$4 gserver=$5
	out_g=$RG_DIR/$name.guest out_n=$RG_DIR/$name.native
	echo "== $name"
	if [ "$gserver" = 1 ]; then
		"$GUEST" --transport "$RG_TRANSPORT" \
			--socket "$RG_DIR/g.sock" --gid "$gidx_g=$gid_g" \
			${tool}_pingpong -g "$gidx_g" $gargs >"$out_g" 2>&1 &
		p=$!
		# the native client does not retry: wait for the listener
		wait_for 10 tcp_listening 18515
		ibv_${tool}_pingpong -d "$RDMAGATE_VM_DEV1" -g "$gidx_n" \
			$nargs "$RDMAGATE_VM_IP0" >"$out_n" 2>&1
		rn=$?
		wait $p
		rg=$?
	else
		ibv_${tool}_pingpong -d "$RDMAGATE_VM_DEV1" -g "$gidx_n" \
			$nargs >"$out_n" 2>&1 &
		p=$!
		wait_for 10 tcp_listening 18515
		"$GUEST" --transport "$RG_TRANSPORT" \
			--socket "$RG_DIR/g.sock" --gid "$gidx_g=$gid_g" \
			${tool}_pingpong -g "$gidx_g" $gargs "$RDMAGATE_VM_IP1" \
			>"$out_g" 2>&1
		rg=$?
		wait $p
		rn=$?
	fi
	sed 's/^/  guest:  /' "$out_g"
	sed 's/^/  native: /' "$out_n"
	ok=1
	[ $rg -eq 0 ] || { echo "FAIL: $name: guest exit $rg"; ok=0; }
	[ $rn -eq 0 ] || { echo "FAIL: $name: native exit $rn"; ok=0; }
	for f in "$out_g" "$out_n"; do
		grep -q "iters in .* usec/iter" "$f" ||
			{ echo "FAIL: $name: no result line in ${f##*.}"; ok=0; }
		! grep -q "invalid data" "$f" ||
			{ echo "FAIL: $name: ${f##*.} saw invalid data"; ok=0; }
	done
	# each side talked to the QP the other announced
	if [ "$(qpn local "$out_g")" != "$(qpn remote "$out_n")" ] ||
	   [ "$(qpn local "$out_n")" != "$(qpn remote "$out_g")" ] ||
	   [ -z "$(qpn local "$out_g")" ]; then
		echo "FAIL: $name: QPNs do not match across the two sides"
		ok=0
	else
		echo "ok: $name: guest QPN(s) $(qpn local "$out_g" | xargs)," \
			"native QPN(s) $(qpn local "$out_n" | xargs)," \
			"both completed"
	fi
	[ $ok = 1 ] || fail=1
}

run "rc: guest server, native client" rc "-n 200 -s 4096 -c" \
	"-n 200 -s 4096 -c" 1
run "rc: native server, guest client" rc "-n 200 -s 8192 -c" \
	"-n 200 -s 8192 -c" 0
run "rc: guest server, events" rc "-n 100 -s 1024 -e" "-n 100 -s 1024 -e" 1
run "ud: guest server, native client" ud "-n 200 -s 1024" "-n 200 -s 1024" 1
run "ud: native server, guest client, events" ud "-n 100 -s 512 -e" \
	"-n 100 -s 512 -e" 0
run "srq: guest server, native client, 16 QPs" srq "-n 320" "-n 320" 1
run "srq: native server, guest client, 4 QPs, events" srq "-n 100 -q 4 -e" \
	"-n 100 -q 4 -e" 0
[ $fail = 0 ] || show_worker_logs
echo "$([ $fail = 0 ] && echo PASS || echo FAIL): rc/ud/srq_pingpong interop"
exit $fail
