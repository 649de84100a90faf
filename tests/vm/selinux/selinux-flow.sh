#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm test (inside rdmagate-vm --selinux --no-cm -n 2, so in init_t with
# Debian's reference policy and the rdmagate modules enforcing), in TAP:
#  - the binaries installed at the packaged paths get their types
#    (restorecon, selinux/rdmagate.fc);
#  - the demo flow: rdmagate-mux, rdmagate-trace and rdmagate-broker started
#    from init_t as their units start them, two workers spawned (vm-a's
#    virtio-rdma over vhost-user, vm-b's PVRDMA over vfio-user, its UAR BAR
#    a memfd of the worker's that the VMM maps), two guests (rdmagate-guest
#    as the VMM, in unconfined_t) claim their addresses and exchange RDMA
#    across the veth pair, the broker's stats, the tracer's
#    counters: each process in its domain, and ZERO AVC denials (every
#    denial is printed);
#  - per-VM MCS categories: each worker's sandbox and its socket file at
#    the level the broker derives from its uid (broker/mcs_level.c);
#  - a worker's forbidden actions (the test hook, in its sandbox domain and
#    before its seccomp filter, so that SELinux alone decides): open a file,
#    create a socket to connect the control socket, signal a process of its
#    own uid: each refused with EACCES and an AVC denial of the sandbox;
#  - libvirt's sVirt level: the second pair of workers spawned by
#    rdmagate-libvirt-hook at "start begin" with the domain XML on stdin as
#    libvirtd writes it (a dynamic <seclabel> whose <label> holds the
#    QEMU's pair): each worker and its socket at that pair, not its uid's;
#  - MCS at work: QEMU's domain svirt_t (VMM_CONNECT, the stand-in, run at
#    a VM's categories) connects to its VM's socket and is refused the other
#    VM's; VM A's worker refuses a VMM at VM B's categories (the connection
#    carries the client's level).
# Usage: selinux-flow.sh BROKER RDMAGATECTL WORKER GUEST MUX TRACE VMM_CONNECT
#                        HOOK
set -u

BROKER_SRC=$1 CTL_SRC=$2 WORKER_SRC=$3 GUEST=$4 MUX_SRC=$5 TRACE_SRC=$6
VMM_CONNECT_SRC=$7 HOOK_SRC=$8
here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../../tap.sh"
. "$here/../two-vms.sh" # A, B, two_vm_policy; host-gid.sh
. "$here/../../lib.sh" # wait_for, elapsed
. "$here/lib.sh" # the installed paths, start, avcs, domain_of, level_of

[ "${RDMAGATE_VM_SELINUX:-}" = 1 ] || skip_all "not inside rdmagate-vm --selinux"
[ "${RDMAGATE_VM_NDEV:-0}" -ge 2 ] || skip_all "needs rdmagate-vm -n 2"

L=$(mktemp -d /run/selinux-test.XXXXXX)
PIDS=
on_exit 'stop $PIDS'

# the level the broker gives the worker of uid $1 (broker/mcs_level.h: the
# (uid mod 523776)-th pair of c0..c1023 in the order (0,1), (0,2) .. (1,2) ..)
mcs_of_uid() {
	local k=$(($1 % 523776)) a=0
	while [ $k -ge $((1023 - a)) ]; do
		k=$((k - (1023 - a)))
		a=$((a + 1))
	done
	echo "s0:c$a,c$((a + 1 + k))"
}
declare -A LV # VM -> its worker's level
dump() {
	for f in "$L"/*.log; do
		echo "---- $f"
		tail -n 30 "$f"
	done
	echo "---- kernel (uverbs, SELinux)"
	dmesg | grep -a -i -E 'uverbs|security context|selinux' | tail -n 20
}

check "SELinux enforcing, this test in init_t" \
	test "$(getenforce)" = Enforcing -a "$(id -Z)" = system_u:system_r:init_t:s0
elapsed "install"
# ---- installed as `meson install` installs them -------------------------------
sel_install "$BROKER_SRC" $BROKER "$WORKER_SRC" $WORKER "$MUX_SRC" $MUX \
	"$TRACE_SRC" $TRACE "$CTL_SRC" $CTL "$HOOK_SRC" $HOOK \
	"$VMM_CONNECT_SRC" $VMM_CONNECT &&
	chcon -t qemu_exec_t $VMM_CONNECT || { not_ok "install"; tap_end; exit 1; }
elapsed "restorecon"
{
	printf '[broker]\ncgroup_parent = /rdmagate\n\n'
	two_vm_policy
	# vm-b's section: a negative nice needs sys_nice and setsched; the
	# PVRDMA frontend, so that its worker serves vfio-user and shares its
	# doorbell page (rdmagate_worker_tmpfs_t) with its VMM
	echo "worker_nice = -3"
	echo "frontend = pvrdma"
} | sel_policy
for f in $BROKER:rdmagate_broker_exec_t $WORKER:rdmagate_worker_exec_t \
	$MUX:rdmagate_mux_exec_t $TRACE:rdmagate_trace_exec_t \
	/etc/rdmagate/policy.conf:rdmagate_conf_t /run/rdmagate:rdmagate_var_run_t \
	/dev/infiniband/umad0:rdmagate_umad_device_t \
	/dev/infiniband/uverbs0:infiniband_device_t; do
	check "${f%%:*} is ${f##*:}" label_is "${f%%:*}" "system_u:object_r:${f##*:}:s0"
done

AVC0=$(avcs | wc -l)
avcs | sed 's/^/# before the test: /'
# ---- the demo flow --------------------------------------------------------
elapsed "daemons"
start mux $MUX
check "rdmagate-mux is up" wait_for 20 test -S /run/rdmagate/mux.sock
start trace $TRACE --keep -i 600 --worker $WORKER --broker $BROKER --mux $MUX
check "rdmagate-trace attached" wait_for 60 in_named_log trace "Tracing"
start broker $BROKER --policy /etc/rdmagate/policy.conf --worker $WORKER \
	--mux /run/rdmagate/mux.sock
check "rdmagate-broker is up" wait_for 20 eval "$CTL list > /dev/null"
check "the broker connected to the mux" \
	wait_for 10 in_named_log broker "mux /run/rdmagate/mux.sock: connected"
for d in mux:rdmagate_mux_t trace:rdmagate_trace_t broker:rdmagate_broker_t; do
	p=$(< "$L/${d%%:*}.pid")
	check "${d%%:*} (pid $p) runs in ${d##*:}" test "$(domain_of "$p")" = "${d##*:}"
done

elapsed "workers"
for vm in vm-a vm-b; do
	out=$($CTL spawn --vm $vm --socket $vm.sock 2>&1)
	check "spawn $vm: $out" grep -q "worker/$vm: pid" <<<"$out"
done
# a daemon that did not start ends the test here: what follows needs them
[ "$failed" = 0 ] || { avcs | tail -n +$((AVC0 + 1)) | diag; dump | diag; tap_end; exit 1; }
for vm in vm-a vm-b; do
	wp=$(worker_field $vm pid)
	check "$vm's worker (pid $wp) entered rdmagate_worker_sandbox_t" \
		wait_for 20 eval 'test "$(domain_of '"$wp"')" = rdmagate_worker_sandbox_t'
	LV[$vm]=$(mcs_of_uid "$(worker_field $vm uid)")
	check "$vm's worker runs at its categories, ${LV[$vm]}" \
		test "$(level_of "$wp")" = "${LV[$vm]}"
	want=0; [ $vm = vm-b ] && want=-3
	check "$vm's worker runs at nice $want (worker_nice)" \
		test "$(sed 's/.*) //' "/proc/$wp/stat" | cut -d' ' -f17)" = "$want"
	fe=virtio-rdma; [ $vm = vm-b ] && fe=pvrdma
	check "$vm's worker serves the $fe frontend" \
		grep -q -- "--frontend $fe " < <(tr '\0' ' ' < "/proc/$wp/cmdline")
	check "$vm's socket is rdmagate_vm_runtime_t at ${LV[$vm]}" \
		label_is /run/rdmagate/vm/$vm.sock system_u:object_r:rdmagate_vm_runtime_t:${LV[$vm]}
done
check "the two VMs' categories differ" test "${LV[vm-a]}" != "${LV[vm-b]}"

elapsed "guests"
# the VMM: a user's QEMU (unconfined_t), which the module lets the workers
# serve (rdmagate_worker_use_vmm_memory); svirt_t is libvirt's
VMM=(timeout 150 runcon -t unconfined_t $ENTRY -c 'exec "$@"' vmm)
route_pair "$A" "$B"
"${VMM[@]}" "$GUEST" --socket /run/rdmagate/vm/vm-a.sock --gid "1=::ffff:$A" \
	rc_pingpong -g 1 -n 50 -s 4096 > "$L/guest-a.log" 2>&1 &
ga=$!
PIDS="$PIDS $ga"
wait_for 60 tcp_listening 18515
"${VMM[@]}" "$GUEST" --socket /run/rdmagate/vm/vm-b.sock --gid "1=::ffff:$B" \
	--transport pvrdma rc_pingpong -g 1 -n 50 -s 4096 127.0.0.1 > "$L/guest-b.log" 2>&1
rb=$?
wait "$ga"
ra=$?
# rxe posts sends with write() on the uverbs fd, which the kernel refuses
# (EACCES, no AVC) from a process whose credentials changed after opening
# it (ib_safe_file_access()): the worker opens its device after its
# setcon() (docs/selinux.md), so both guests must get through.
for g in "vm-a:$ra" "vm-b:$rb"; do
	check "guest ${g%%:*}'s rc_pingpong completed" test "${g#*:}" = 0
done
check "the kernel refused no uverbs write() for a changed context" eval \
	"! dmesg | grep -a -q 'uverbs_write: process [0-9]* (rdmagate-worker) changed security contexts'"
[ "$ra$rb" = 00 ] || { avcs | tail -n +$((AVC0 + 1)) | diag; dump | diag; }
grep -h 'iters in' "$L"/guest-*.log | diag
out=$($CTL stats --vm vm-a 2>&1)
check "stats of vm-a through the broker" grep -q . <<<"$out"
diag <<<"$out"
kill -INT "$(< "$L/trace.pid")"
wait_for 20 in_named_log trace "vm-a"
check "the tracer counted vm-a's verbs" in_named_log trace "vm-a"
for vm in vm-a vm-b; do
	out=$($CTL stop --vm $vm 2>&1)
	check "stop $vm" test $? = 0
	diag <<<"$out"
done
bp=$(< "$L/broker.pid")
kill -TERM "$bp"
check "the broker stopped" wait_for 20 gone "$bp"

elapsed "denials"
mapfile -t new < <(avcs | tail -n +$((AVC0 + 1)))
if [ ${#new[@]} = 0 ]; then
	ok "no AVC denial during the flow"
else
	not_ok "${#new[@]} AVC denials during the flow"
	printf '%s\n' "${new[@]}" | diag
	dump | diag
fi
check "audit lost no record" test -z "$(lost)"

# ---- a worker's forbidden actions -----------------------------------------
elapsed "forbidden actions"
# a process of worker vm-p's uid, in init_t: what kill(-1) can reach past DAC
wuid=60999
setpriv --reuid=$wuid --regid=$wuid --clear-groups sleep 300 &
decoy=$!
PIDS="$PIDS $decoy"
cat >> /etc/rdmagate/policy.conf <<EOP

[vm vm-p]
device = $RDMAGATE_VM_DEV0
uid = $wuid
EOP
start broker2 $BROKER --policy /etc/rdmagate/policy.conf --worker $WORKER
wait_for 20 eval "$CTL list > /dev/null"
AVC1=$(avcs | wc -l)
declare -A want=([selinux_open]="open /etc/passwd: Permission denied"
	[selinux_connect]="socket(AF_UNIX) and connect /run/rdmagate/control: Permission denied"
	[selinux_kill]="kill(-1, 0): Permission denied")
# (opening: read is the first permission the sandbox lacks on etc_t, and the
# constraint vetoes open on any file)
declare -A avc=([selinux_open]='{ \(read\|open\) } .*name="passwd" .*tclass=file'
	[selinux_connect]='{ create } .*tclass=unix_stream_socket'
	[selinux_kill]='{ signull } .*tcontext=system_u:system_r:init_t:s0 tclass=process')
sandbox_avc() {
	avcs | tail -n +$((AVC1 + 1)) |
		grep 'scontext=system_u:system_r:rdmagate_worker_sandbox_t:s0' |
		grep -q "denied  $1"
}
exits() { grep -c 'worker/vm-p (pid [0-9]*) exited with status 0' "$L/broker2.log"; }
i=0
for probe in selinux_open selinux_connect selinux_kill; do
	i=$((i + 1))
	$CTL spawn --vm vm-p --socket vm-p.sock --test-syscall $probe > /dev/null 2>&1
	check "$probe: ${want[$probe]}" \
		wait_for 20 in_named_log broker2 "TEST HOOK: $probe: ${want[$probe]}"
	check "$probe: the worker exited with status 0 (refused)" \
		wait_for 10 eval '[ "$(exits)" = '$i' ]'
	check "$probe: an AVC denial of rdmagate_worker_sandbox_t" \
		wait_for 5 sandbox_avc "${avc[$probe]}"
	$CTL stop --vm vm-p > /dev/null 2>&1
done
grep -a 'TEST HOOK' "$L/broker2.log" | diag
avcs | tail -n +$((AVC1 + 1)) | diag

# ---- MCS: each VM's QEMU and worker at its own categories -----------------
elapsed "MCS"
# spawned as libvirtd spawns them: the hook at start begin, the domain XML
# on stdin with libvirt's dynamic label (the pair it gave the VM's QEMU)
LV[vm-a]=s0:c123,c456 LV[vm-b]=s0:c7,c900
for vm in vm-a vm-b; do
	out=$("$HOOK" $vm start begin - 2>&1 <<XML
<domain type='kvm'>
  <name>$vm</name>
  <metadata>
    <rdmagate:device xmlns:rdmagate="https://rdmagate.dev/xmlns/libvirt/1" socket="$vm.sock"/>
  </metadata>
  <seclabel type='dynamic' model='selinux' relabel='yes'>
    <label>system_u:system_r:svirt_t:${LV[$vm]}</label>
    <imagelabel>system_u:object_r:svirt_image_t:${LV[$vm]}</imagelabel>
  </seclabel>
</domain>
XML
)
	check "the hook spawns $vm at start begin (libvirt's label ${LV[$vm]}): $out" \
		grep -q "worker/$vm: pid" <<<"$out"
	wp=$(worker_field $vm pid)
	wait_for 20 eval 'test "$(domain_of '"$wp"')" = rdmagate_worker_sandbox_t'
	check "$vm's worker (pid $wp) runs at its QEMU's pair ${LV[$vm]}, not its uid's ($(mcs_of_uid "$(worker_field $vm uid)"))" \
		test "$(level_of "$wp")" = "${LV[$vm]}"
	check "$vm's socket is rdmagate_vm_runtime_t at ${LV[$vm]}" \
		label_is /run/rdmagate/vm/$vm.sock system_u:object_r:rdmagate_vm_runtime_t:${LV[$vm]}
done
AVC2=$(avcs | wc -l)
new_avc() { avcs | tail -n +$((AVC2 + 1)) | grep -q -- "$1"; }
# svirt_t, libvirt's QEMU domain (MCS-constrained), at one VM's categories
for p in vm-a:vm-b vm-b:vm-a; do
	own=${p%%:*} other=${p##*:}
	out=$(runcon "system_u:system_r:svirt_t:${LV[$own]}" $VMM_CONNECT \
		+/run/rdmagate/vm/$own.sock -/run/rdmagate/vm/$other.sock 2>&1 < /dev/null)
	check "svirt_t at $own's categories connects to $own's socket, is refused $other's (EACCES)" \
		test $? = 0
	diag <<<"$out"
	check "... an AVC denial: svirt_t:${LV[$own]} writing $other's socket file" \
		wait_for 5 new_avc "scontext=system_u:system_r:svirt_t:${LV[$own]} tcontext=system_u:object_r:rdmagate_vm_runtime_t:${LV[$other]} tclass=sock_file"
done
# a VMM at vm-b's categories (unconfined_t: not MCS-constrained, it may
# connect to any socket file) connecting to vm-a's: SELinux labels the
# worker's end of a unix stream connection with its client's level, which
# vm-a's worker may not read or write: the guest never gets its device
timeout 30 runcon -t unconfined_t -l "${LV[vm-b]}" $ENTRY -c 'exec "$@"' vmm \
	"$GUEST" --socket /run/rdmagate/vm/vm-a.sock rc_pingpong -g 1 -n 1 \
	> "$L/guest-mcs.log" 2>&1 < /dev/null
check "a VMM at vm-b's categories is refused by vm-a's worker: the guest failed" \
	test $? != 0
check "... an AVC denial: vm-a's sandbox (${LV[vm-a]}) on the connection at ${LV[vm-b]}" \
	wait_for 5 new_avc "scontext=system_u:system_r:rdmagate_worker_sandbox_t:${LV[vm-a]} tcontext=system_u:system_r:rdmagate_broker_t:${LV[vm-b]} tclass=unix_stream_socket"
out=$(runcon "system_u:system_r:svirt_t:${LV[vm-a]}" $VMM_CONNECT \
	+/run/rdmagate/vm/vm-a.sock 2>&1 < /dev/null)
check "vm-a's worker still serves its own VM's QEMU after" test $? = 0
tail -n 3 "$L/guest-mcs.log" | diag
avcs | tail -n +$((AVC2 + 1)) | diag
[ "$failed" = 0 ] || dump | diag
elapsed "done"
tap_end
