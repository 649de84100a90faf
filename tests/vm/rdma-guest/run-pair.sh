#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm test: two simulated guests through two workers (rxe0, rxe1): SEND,
# WRITE, READ, atomics, UD, SRQ, events, data checked (guest-pair).
# RG_PAIR=TRANSPORT_A,TRANSPORT_B gives each guest its own device (e.g.
# pvrdma,virtio-rdma); both are $RG_TRANSPORT by default.
set -u
. "$(dirname "$0")/lib.sh"
PAIR=$RDMAGATE_BUILD/tests/vm/rdma-guest/guest-pair

two_devices
echo "guest A: worker on $RDMAGATE_VM_DEV0, host GID $gid_a"
echo "guest B: worker on $RDMAGATE_VM_DEV1, host GID $gid_b"
pair=${RG_PAIR:-$RG_TRANSPORT,$RG_TRANSPORT}
echo "transports: guest A ${pair%,*}, guest B ${pair#*,}"
start_worker -t "${pair%,*}" a "$RDMAGATE_VM_DEV0" || exit 1
# guest-pair counts worker a's host MRs (rdma res show mr) around the
# DMA_UNMAP and the reset of a PVRDMA guest A
RG_WORKER_A_PID=$RG_LAST_PID
export RG_WORKER_A_PID
start_worker -t "${pair#*,}" b "$RDMAGATE_VM_DEV1" || exit 1
"$PAIR" -t "$pair" "$RG_DIR/a.sock" "$gid_a" "$RG_DIR/b.sock" "$gid_b"
rc=$?
# a PVRDMA guest A's writable MR over a read-only DMA region: refused for
# that reason (the guest sees only an error status)
if [ "${pair%,*}" = pvrdma ]; then
	if grep -q "in a read-only DMA region; write access" "$RG_DIR/a.log"
	then
		echo "ok  : worker a refused the writable MR over read-only memory"
	else
		echo "FAIL: worker a's log has no read-only DMA region refusal"
		rc=1
	fi
fi
[ $rc -eq 0 ] || show_worker_logs
exit $rc
