#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sVirt under a real libvirtd (issue 27 item 4), in the test VM booted
# SELinux enforcing (rdmagate-vm --selinux: Debian's reference policy, the
# rdmagate modules and the test module tests/vm/selinux/rdmagate_test_vmm.te).
# Debian's libvirtd gives each domain with a dynamic <seclabel
# model='selinux'> its own MCS pair and starts its QEMU 11.1 in svirt_t at
# that pair; the hook, at start begin, passes the pair to the broker, which
# starts the worker's sandbox and labels its socket at it. Checked:
#  - each QEMU runs in svirt_t at the pair of its live XML's <label>, its
#    worker in rdmagate_worker_sandbox_t at the same pair, the socket file
#    rdmagate_vm_runtime_t at it, and QEMU's vfio-user connection is
#    accepted, its guest RAM (a memfd QEMU made: svirt_tmpfs_t at the
#    pair) mapped by the worker and the worker's PVRDMA UAR BAR (a memfd
#    the worker made: rdmagate_worker_tmpfs_t) by QEMU; two domains, two
#    pairs;
#  - by policy alone, both ways: a process in vm-q's QEMU's exact context
#    and with the uid vm-p's socket belongs to is refused vm-p's socket
#    (EACCES, an AVC of svirt_t at vm-q's pair writing the sock_file at
#    vm-p's), and the same from vm-p's to vm-q's;
#  - a third domain whose QEMU, given vm-p's DAC identity, dials vm-p's
#    socket: libvirt gives it a pair of its own, and QEMU is refused (an
#    AVC naming both pairs); vm-p's QEMU and worker go on;
#  - no other AVC denial from libvirtd's start to the domains' end;
#  - virsh destroy: the hook's release end stops each worker, nothing left.
# No nested guest boots: the domains run their firmware only.
# libvirtd itself runs in init_t, not virtd_t: the VM's root is 9p, whose
# files are all lib_t, so it cannot be given virtd_exec_t (the test module
# lets init_t do what virtd_t does here: exec QEMU in svirt_t on request).
# docs/libvirt-hook.md ("sVirt: the QEMU's MCS pair").
#
# Usage: libvirt-svirt.sh BROKER RDMAGATECTL WORKER MUX HOOK VMM_CONNECT
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../tap.sh"
. "$here/../lib.sh" # wait_for, elapsed
. "$here/lib.sh"
. "$here/libvirt-lib.sh"

X_VM='vm-x' # the third domain: vm-p's socket and DAC identity, no metadata

# ---- level 2, the test VM
# svirt_doc NAME: NAME's document for this VM: libvirt's dynamic SELinux
# label, no NIC (firmware only: the PVRDMA function alone at 10.0), QEMU
# 11.1's firmware directories
svirt_doc() {
	local fw="    <qemu:arg value='-L'/>\n    <qemu:arg value='$QLIB/usr/share/qemu'/>\n    <qemu:arg value='-L'/>\n    <qemu:arg value='$QLIB/usr/share/seabios'/>"
	domain_xml "$1" | sed -e '/<interface /,/<\/interface>/d' \
		-e 's/"addr":"10.1"/"addr":"10.0"/' \
		-e "s|^\( *\)<seclabel type='static' model='dac'|\1<seclabel type='dynamic' model='selinux' relabel='yes'/>\n&|" \
		-e "s|^\( *\)</qemu:commandline>|$fw\n&|"
}

# live_level NAME: the MCS pair of the running domain's live <label>
live_level() {
	virsh dumpxml "$1" | sed -n "s|.*<label>system_u:system_r:svirt_t:\(s0:c[0-9]*,c[0-9]*\)</label>.*|\1|p" | head -n 1
}

in_vm() {
	local BROKER_SRC=$1 CTL_SRC=$2 WORKER_SRC=$3 HOOK_SRC=$5 VMM_CONNECT_SRC=$6
	local T0=$SECONDS L T QROOT QLIB QEMU out vm wp AVC0 own other
	PIDS='' # (global: stopped at exit)
	local own_uid x_avc rc
	local -A QP LVL
	[ "${RDMAGATE_VM_SELINUX:-}" = 1 ] || skip_all "not inside rdmagate-vm --selinux"
	T=$(mktemp -d /run/libvirt-svirt.XXXXXX)
	L=$T
	# shellcheck source=../vm/selinux/lib.sh
	. "$here/../vm/selinux/lib.sh"
	# shellcheck source=../vm/ops/pvrdma-lib.sh
	. "$here/../vm/ops/pvrdma-lib.sh"
	pvrdma_vm_policy "$Q_VM" "$RDMAGATE_VM_DEV1" "$Q_ADDR" "$Q_VMM"
	on_exit 'stop $PIDS'

	check "SELinux enforcing, this test in init_t" \
		test "$(getenforce)" = Enforcing -a "$(id -Z)" = system_u:system_r:init_t:s0
	# ---- the programs where the .fc labels them; QEMU 11.1 as a host
	# installs it: a program labelled qemu_exec_t that runs by itself (its
	# root's loader and libraries written into it: patchelf). Its root is
	# copied to the labelled tmpfs first: a program in svirt_t may not map
	# code from the VM's /var, an overlay (the kernel checks the mapping
	# against the file the overlay opened, as kernel_t: docs/selinux.md)
	QROOT=$("$QEMU11" -q --print-root) || { not_ok "QEMU 11.1's root"; tap_end; exit 1; }
	QEMU=/usr/local/libexec/rdmagate-test/qemu-system-x86_64
	QLIB=/usr/local/lib/rdmagate-test/qemu-11
	mkdir -p "$QLIB/usr/lib" "$QLIB/usr/share" &&
		cp -a "$QROOT/usr/lib/x86_64-linux-gnu" "$QROOT/usr/lib64" "$QLIB/usr/lib/" &&
		mv "$QLIB/usr/lib/lib64" "$QLIB/usr/lib64" &&
		cp -a "$QROOT/usr/share/qemu" "$QROOT/usr/share/seabios" "$QLIB/usr/share/" &&
		sel_install "$BROKER_SRC" "$BROKER" "$WORKER_SRC" "$WORKER" "$CTL_SRC" "$CTL" \
			"$HOOK_SRC" "$HOOK" "$VMM_CONNECT_SRC" "$VMM_CONNECT" \
			"$QROOT/usr/bin/qemu-system-x86_64" "$QEMU" &&
		patchelf --set-interpreter "$QLIB/usr/lib64/ld-linux-x86-64.so.2" \
			--force-rpath --set-rpath "$QLIB/usr/lib/x86_64-linux-gnu" "$QEMU" &&
		restorecon -RF "$QLIB" &&
		chcon -t qemu_exec_t "$VMM_CONNECT" "$QEMU"
	rc=$?
	check "installed and labelled (QEMU 11.1: $(stat -c %C "$QEMU" 2> /dev/null), its libraries: $(stat -L -c %C "$QLIB/usr/lib/x86_64-linux-gnu/libc.so.6" 2> /dev/null))" test "$rc" = 0 ||
		{ tap_end; exit 1; }
	{
		printf '[broker]\ncgroup_parent = /rdmagate\n\n'
		cat "$T/policy.conf"
	} | sel_policy
	check "QEMU 11.1 runs by itself: $("$QEMU" --version 2>&1 | head -n 1)" \
		bash -c '"$1" --version | grep -q "version 11\.1"' _ "$QEMU"
	# TCG (type='qemu': the test VM has no KVM) translates guest code into
	# memory it then executes: libvirt's capability probe (in libvirtd's
	# domain, here init_t: allow_execmem; virtd_t may always) and every
	# QEMU in svirt_t (virt_use_execmem, off by default: a KVM host needs
	# it not) need execmem (docs/libvirt-hook.md)
	out=$(setsebool allow_execmem=1 virt_use_execmem=1 2>&1)
	check "setsebool allow_execmem=1 virt_use_execmem=1 (TCG) $out" test $? = 0
	# libvirtd's directories, labelled as virtd_t's type transitions would
	# make them (/run/libvirt/qemu: svirt_runtime_t, where QEMU writes its
	# pid file; libvirtd runs in init_t here, which has no transitions)
	for d in /run/libvirt /var/lib/libvirt /var/cache/libvirt /var/log/libvirt; do
		mkdir -p "$d" && mount -t tmpfs tmpfs "$d" && mkdir "$d/qemu"
	done
	restorecon -RF /run/libvirt /var/log/libvirt /var/lib/libvirt /var/cache/libvirt

	# ---- the broker, as its unit starts it; libvirtd
	elapsed "daemons"
	AVC0=$(avcs | wc -l)
	avcs | sed 's/^/# before the daemons: /'
	start broker "$BROKER" --policy /etc/rdmagate/policy.conf --worker "$WORKER"
	check "rdmagate-broker is up, in rdmagate_broker_t" \
		wait_for 20 eval '$CTL list > /dev/null && test "$(domain_of "$(< "$L/broker.pid")")" = rdmagate_broker_t'
	LV_EMULATOR=$QEMU LV_QEMU_ROOT=$QLIB LV_CONTROL=/run/rdmagate/control
	if ! libvirt_up; then
		not_ok "libvirtd is up: $(tail -n 5 "$T/libvirtd.out" "$T/libvirtd.log")"
		tap_end
		exit 1
	fi
	ok "libvirtd is up: $(/usr/sbin/libvirtd --version) (in $(domain_of "$LV_PID"))"

	# ---- two domains, each at the pair libvirt draws for it
	elapsed "domains"
	for vm in "$OP_VM" "$Q_VM"; do
		svirt_doc "$vm" > "$T/$vm.xml"
		out=$(virsh define "$T/$vm.xml" 2>&1)
		check "virsh define $vm (a dynamic <seclabel model='selinux'>): $out" test $? = 0
		out=$(virsh start "$vm" 2>&1)
		check "virsh start $vm: $out" test $? = 0 || continue
		QP[$vm]=$(qemu_pid "$vm")
		LVL[$vm]=$(live_level "$vm")
		check "$vm: libvirt gave its QEMU (pid ${QP[$vm]}) the pair ${LVL[$vm]:-none}, and it runs in svirt_t at it" \
			bash -c '[[ $2 =~ ^s0:c[0-9]+,c[0-9]+$ ]] &&
				[ "$(tr -d "\0" < /proc/"$1"/attr/current)" = "system_u:system_r:svirt_t:$2" ]' \
			_ "${QP[$vm]}" "${LVL[$vm]}"
		wp=$(worker_field "$vm" pid)
		check "$vm's worker (pid ${wp:-none}), spawned by the hook at start begin, runs in rdmagate_worker_sandbox_t at ${LVL[$vm]}" \
			bash -c '[ -n "$1" ] && [ "$(tr -d "\0" < /proc/"$1"/attr/current)" = "system_u:system_r:rdmagate_worker_sandbox_t:$2" ]' \
			_ "$wp" "${LVL[$vm]}"
		check "$vm's socket is rdmagate_vm_runtime_t at ${LVL[$vm]}" \
			label_is "/run/rdmagate/vm/$vm.sock" "system_u:object_r:rdmagate_vm_runtime_t:${LVL[$vm]}"
		check "$vm's worker accepted its QEMU" \
			wait_for 60 in_named_log broker "worker/$vm: frontend connected"
		check "$vm's worker maps its guest's RAM (QEMU's memfd: $(stat -L -c %C /proc/"${QP[$vm]}"/fd/* 2> /dev/null | grep -m1 svirt_tmpfs_t))" \
			wait_for 30 grep -q 'memfd:' "/proc/$wp/maps"
		check "$vm's QEMU maps its worker's PVRDMA UAR BAR (the worker's memfd: $(stat -L -c %C /proc/"$wp"/fd/* 2> /dev/null | grep -m1 rdmagate_worker_tmpfs_t))" \
			wait_for 30 grep -q 'memfd:rdmagate-pvrdma-uar' "/proc/${QP[$vm]}/maps"
	done
	check "the two domains' pairs differ" test "${LVL[$OP_VM]:-}" != "${LVL[$Q_VM]:-}"

	# ---- by policy alone, both ways: each QEMU's exact context, with the
	# uid the other VM's socket belongs to (so that DAC lets it through)
	elapsed "cross"
	for own in "$OP_VM:$Q_VM" "$Q_VM:$OP_VM"; do
		other=${own#*:} own=${own%%:*}
		[ -n "${LVL[$own]:-}" ] && [ -n "${LVL[$other]:-}" ] || continue
		own_uid=$(stat -c %u "/run/rdmagate/vm/$other.sock")
		out=$(setpriv --reuid "$own_uid" --regid "$own_uid" --clear-groups -- \
			runcon "system_u:system_r:svirt_t:${LVL[$own]}" "$VMM_CONNECT" \
			"-/run/rdmagate/vm/$other.sock" 2>&1 < /dev/null)
		check "$own's QEMU context, as uid $own_uid, is refused $other's socket: $out" test $? = 0
		check "... an AVC denial: svirt_t at ${LVL[$own]} writing the sock_file at ${LVL[$other]}" \
			wait_for 5 eval 'avcs | tail -n +$((AVC0 + 1)) | grep -q "scontext=system_u:system_r:svirt_t:${LVL[$own]} tcontext=system_u:object_r:rdmagate_vm_runtime_t:${LVL[$other]} tclass=sock_file"'
	done

	# ---- a third domain's QEMU dials vm-p's socket as vm-p's QEMU uid
	sed -e '/<metadata>/,/<\/metadata>/d' \
		-e "s|<name>$OP_VM</name>|<name>$X_VM</name>|" "$OP_XML" > "$T/$X_VM.base.xml"
	OP_XML=$T/$X_VM.base.xml svirt_doc "$OP_VM" > "$T/$X_VM.xml"
	out=$(virsh define "$T/$X_VM.xml" 2>&1)
	check "virsh define $X_VM: $out" test $? = 0
	out=$(virsh start "$X_VM" 2>&1)
	rc=$?
	echo "$out" | diag
	check "virsh start $X_VM (vm-p's socket and DAC identity, a pair of its own) fails" \
		test "$rc" != 0
	x_avc="scontext=system_u:system_r:svirt_t:s0:c[0-9]*,c[0-9]* tcontext=system_u:object_r:rdmagate_vm_runtime_t:${LVL[$OP_VM]:-none} tclass=sock_file"
	check "... an AVC denial: its QEMU in svirt_t at another pair writing vm-p's socket" \
		wait_for 5 eval 'avcs | tail -n +$((AVC0 + 1)) | grep -v "svirt_t:${LVL[$Q_VM]:-none} " | grep -q "$x_avc"'
	check "vm-p's QEMU and worker go on, connected once" bash -c \
		'kill -0 "$1" && [ "$(grep -c "worker/$2: frontend connected" "$3")" = 1 ]' \
		_ "${QP[$OP_VM]:-0}" "$OP_VM" "$L/broker.log"
	virsh undefine "$X_VM" > /dev/null 2>&1

	# ---- nothing else denied; the domains' end
	elapsed "denials"
	# an rdmagate type on either side: only the refused sockets; QEMU's
	# own denials (what the reference policy does not give QEMU 11.1 and
	# QEMU does without: io_uring, a sysfs read) are printed
	mapfile -t new < <(avcs | tail -n +$((AVC0 + 1)) | grep 'rdmagate_' |
		grep -v 'scontext=system_u:system_r:svirt_t:s0:c[0-9]*,c[0-9]* tcontext=system_u:object_r:rdmagate_vm_runtime_t:s0:c[0-9]*,c[0-9]* tclass=sock_file')
	if [ ${#new[@]} = 0 ]; then
		ok "no AVC denial of or on an rdmagate type but the refused sockets, from the broker's start on"
	else
		not_ok "${#new[@]} AVC denials of or on rdmagate types besides the refused sockets"
		printf '%s\n' "${new[@]}" | diag
	fi
	avcs | tail -n +$((AVC0 + 1)) | grep -v 'rdmagate_' | sed 's/^/QEMU went on without: /' | diag
	check "audit lost no record" test -z "$(lost)"
	for vm in "$OP_VM" "$Q_VM"; do
		wp=$(worker_field "$vm" pid)
		out=$(virsh destroy "$vm" 2>&1)
		check "virsh destroy $vm: $out" test $? = 0
		check "$vm: the hook's release end stopped its worker, its socket is gone" \
			wait_for 30 bash -c '! kill -0 "$1" 2> /dev/null && ! test -e "$2" &&
				[ -z "$(worker_field "$3")" ]' _ "${wp:-0}" "/run/rdmagate/vm/$vm.sock" "$vm"
	done
	elapsed "done"
	[ "$failed" = 0 ] || {
		tail -n 20 "$L/broker.log" "$T/libvirtd.log" /var/log/libvirt/qemu/*.log 2> /dev/null | diag
		avcs | tail -n +$((AVC0 + 1)) | diag
	}
	tap_end
}

case ${1:-} in
--in-vm) shift; in_vm "$@"; exit ;;
esac

# ---- level 1, the host
operator_args libvirt-svirt.sh "${@:1:5}"
[ -f "${6:-}" ] && [ -x "$6" ] || { echo "libvirt-svirt.sh: ${6:-VMM_CONNECT}: not an executable file" >&2; exit 2; }
for f in /usr/sbin/libvirtd /usr/sbin/virtlogd /usr/bin/virsh /usr/bin/patchelf; do
	[ -x "$f" ] || skip_all "no $f (./dev installs libvirt-daemon, libvirt-daemon-driver-qemu, libvirt-clients and patchelf)"
done
GUEST_VM_OPTS=(--selinux --no-cm)
guest_run_in_test_vm 900 "$here/libvirt-svirt.sh" --in-vm "$@"
