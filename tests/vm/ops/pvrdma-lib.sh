# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# The operator's path for a PVRDMA VM (sourced after lib.sh, inside the
# test VM): VM vm-p of tests/host/hook/domains/vm-p-pvrdma.xml in the
# policy with frontend = pvrdma and its own QEMU identity, the libvirt hook
# given that domain XML to start and stop its worker, and what must hold
# while it runs and after it stopped.  Shared by the vm test pvrdma-broker
# (the guest simulator as the VMM) and the guest test pvrdma-operator (QEMU
# 11.1 and vmw_pvrdma).  Expects HOOK (rdmagate-libvirt-hook) set.

OP_XML=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../host/hook/domains" &&
	pwd -P)/vm-p-pvrdma.xml
# what the document says (its metadata and <seclabel>), checked against
# what the broker made of it
OP_VM=vm-p
OP_SOCK=/run/rdmagate/vm/vm-p.sock
OP_ADDR=10.99.2.2
OP_GID=$(v4_gid "$OP_ADDR") # sysfs form (host-gid.sh)
OP_VMM=64201 # the VM's QEMU uid and gid
OP_CG=/sys/fs/cgroup/rdmagate/$OP_VM

# pvrdma_vm_policy VM DEVICE ADDRESS [VMM_ID]: a PVRDMA VM's section in
# $T/policy.conf, VMM_ID its QEMU's uid and gid if given. The broker's
# default socket_dir (/run/rdmagate/vm) holds its socket, as on an
# installed host. max_pinned covers all the guest's RAM (512 MiB):
# vmw_pvrdma's GET_DMA_MR registers all of it for the guest kernel's own
# use, and lib.sh's default (64M) refuses that with ENOMEM.
pvrdma_vm_policy() {
	{
		printf '[vm %s]\ndevice = %s\nfrontend = pvrdma\naddresses = %s\n' \
			"$1" "$2" "$3"
		[ -z "${4:-}" ] || printf 'vmm_uid = %s\nvmm_gid = %s\n' "$4" "$4"
		echo "max_pinned = 1G"
	} >> "$T/policy.conf"
}
pvrdma_vm_policy "$OP_VM" "$RDMAGATE_VM_DEV0" "$OP_ADDR" "$OP_VMM"

# op_hook OPERATION SUB-OPERATION: the hook as libvirtd runs it (the domain
# XML on stdin); its stderr line into $T/hook.log and on stdout
op_hook() {
	"$HOOK" --control "$T/control.sock" "$OP_VM" "$1" "$2" - \
		< "$OP_XML" 2> >(tee -a "$T/hook.log")
}

op_worker_pid() { ctl list --json | jq -r ".[] | select(.vm == \"$OP_VM\") | .pid"; }

# op_started: the hook's prepare begin, and the worker as op_worker_up
# checks it.  Sets OP_PID.
op_started() {
	local out
	out=$(op_hook prepare begin 2>&1)
	check "hook: $OP_VM prepare begin starts its worker: $out" \
		grep -q "worker/$OP_VM: pid [0-9]*, uid [0-9]*" <<< "$out"
	op_worker_up
}

# op_worker_up: once the hook ran (by hand or by libvirtd), the worker as
# the document and the policy say: sandboxed under its own uid, serving
# PVRDMA on the device, its socket the VM's QEMU identity's.  Sets OP_PID.
op_worker_up() {
	local st
	OP_PID=$(op_worker_pid)
	check "rdmagatectl list: $OP_VM's worker (pid ${OP_PID:-none}) on the document's socket $OP_SOCK" \
		test -n "$OP_PID" -a \
		"$(ctl list --json | jq -r ".[] | select(.vm == \"$OP_VM\") | .socket")" = "$OP_SOCK"
	[ -n "$OP_PID" ] || return 1
	check "the worker serves PVRDMA on $RDMAGATE_VM_DEV0 (policy frontend = pvrdma) to uid/gid $OP_VMM only" \
		grep -q -- "--peer-uid $OP_VMM --peer-gid $OP_VMM --device $RDMAGATE_VM_DEV0 .*--frontend pvrdma " \
		< <(tr '\0' ' ' < /proc/"$OP_PID"/cmdline)
	# the policy sets no depths: a PVRDMA VM gets the frontend's, not the
	# virtio-rdma ring's 512 (ibv_srq_pingpong's CQ is 1024 entries)
	check "with PVRDMA's queue depths: $(tr '\0' ' ' < /proc/"$OP_PID"/cmdline | grep -o -- '--max-cqe [0-9]* --max-qp-wr [0-9]* --max-srq-wr [0-9]*')" \
		grep -q -- "--max-cqe 4096 --max-qp-wr 1024 --max-srq-wr 1024 " \
		< <(tr '\0' ' ' < /proc/"$OP_PID"/cmdline)
	st=$(awk '/^Uid:/ { print $2 } /^Seccomp:/ { print $2 } /^NoNewPrivs:/ { print $2 } /^CapEff:/ { print $2 }' \
		/proc/"$OP_PID"/status | xargs)
	check "the worker is sandboxed: uid, no_new_privs, seccomp, CapEff = $st" \
		eval '[[ "$st" =~ ^(6[0-9]{4})\ 0000000000000000\ 1\ 2$ ]]'
	check "the worker is in its own cgroup with rdma.max set" \
		bash -c 'grep -qx "0::/rdmagate/$1" /proc/"$2"/cgroup &&
			grep -q hca_object "$3/rdma.max"' _ "$OP_VM" "$OP_PID" "$OP_CG"
	check "the socket belongs to the VM's QEMU identity: $(stat -c '%u:%g %a' "$OP_SOCK")" \
		test "$(stat -c '%u:%g %a %F' "$OP_SOCK")" = "$OP_VMM:$OP_VMM 660 socket"
}

# op_as_vmm COMMAND...: COMMAND as the VM's QEMU identity (the <seclabel>)
op_as_vmm() { setpriv --reuid "$OP_VMM" --regid "$OP_VMM" --clear-groups -- "$@"; }

# op_stopped: the hook's release end, and nothing of the VM is left.
# OP_STOP_WHY: how the broker says the worker ended [killed by SIGTERM]
op_stopped() {
	local out
	out=$(op_hook release end 2>&1)
	check "hook: $OP_VM release end stops its worker: $out" \
		grep -qF "worker/$OP_VM (pid $OP_PID) ${OP_STOP_WHY:-killed by SIGTERM}" <<< "$out"
	op_gone
}

# op_gone: nothing of the VM is left on the host: worker, socket, cgroup,
# address, GID, state record
op_gone() {
	check "no worker listed" test -z "$(op_worker_pid)"
	[ -z "${OP_PID:-}" ] ||
		check "the worker process is gone" not test -e /proc/"$OP_PID"
	check "its socket is gone" not test -e "$OP_SOCK"
	check "its cgroup is gone" not test -e "$OP_CG"
	check "the guest's address is gone from $RDMAGATE_VM_NETDEV0" \
		not grep -q "inet $OP_ADDR/" < <(ip -4 -o addr show dev "$RDMAGATE_VM_NETDEV0")
	check "its GID is gone from $RDMAGATE_VM_DEV0's table" \
		not has_v2 "$RDMAGATE_VM_DEV0" "$OP_GID"
	check "its state file is gone" not test -e "$T/state/workers/$OP_VM.state"
}
