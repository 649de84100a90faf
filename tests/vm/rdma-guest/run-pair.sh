#!/bin/sh
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
start_worker -t "${pair#*,}" b "$RDMAGATE_VM_DEV1" || exit 1
"$PAIR" -t "$pair" "$RG_DIR/a.sock" "$gid_a" "$RG_DIR/b.sock" "$gid_b"
rc=$?
[ $rc -eq 0 ] || show_worker_logs
exit $rc
