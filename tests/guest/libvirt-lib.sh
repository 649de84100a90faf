# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# libvirtd in the test VM for the guest suite (sourced after lib.sh and, in
# the VM, tests/vm/ops/pvrdma-lib.sh): Debian's libvirtd and virtlogd with
# the hook installed, vm-p's document for them, and what a refused start
# must leave; the second domain's Q_*. Expects T, HOOK, PIDS and OP_*
# (pvrdma-lib.sh) set.
# docs/libvirt-hook.md ("Under libvirtd"). LV_EMULATOR: the domains'
# <emulator> (QEMU 11.1's wrapper by default); LV_QEMU_ROOT: the root of
# the QEMU 11.1 an LV_EMULATOR of another path runs (its modules);
# LV_CONTROL: the broker's control socket ($T/control.sock by default).

LV_EMULATOR=${LV_EMULATOR:-$QEMU11}
# the second domain: vm-p's document for tap1's guest, its own QEMU uid
Q_VM=vm-q Q_ADDR=10.99.3.2 Q_VMM=64202 Q_SOCK=/run/rdmagate/vm/vm-q.sock

# virsh ARGS...: the system instance, as an operator runs it
virsh() { command virsh -q -c qemu:///system "$@"; }

# libvirt_up: what Debian's libvirt-daemon-system would have made (its
# libvirt-qemu user and group, the default QEMU identity: libvirtd's QEMU
# driver does not start without them), QEMU 11.1's own module directory over the host's QEMU 7.2
# one (the root's QEMU looks there too, and aborts on a module of another
# build: the capability probe's qom-list-types loads every module), the
# hook, virtlogd (QEMU's stdout and stderr) and libvirtd.
libvirt_up() {
	local mods=/usr/lib/x86_64-linux-gnu/qemu root
	getent group kvm > /dev/null || groupadd -r kvm
	getent group libvirt-qemu > /dev/null || groupadd -r libvirt-qemu
	getent passwd libvirt-qemu > /dev/null ||
		useradd -r -g kvm -G libvirt-qemu -d /var/lib/libvirt \
			-s /usr/sbin/nologin libvirt-qemu
	root=${LV_QEMU_ROOT:-}
	if [ -z "$root" ] && [ "$LV_EMULATOR" = "$QEMU11" ]; then
		root=$("$QEMU11" -q --print-root) || return 1
	fi
	if [ -n "$root" ] && [ -d "$mods" ]; then
		mount --bind "$root$mods" "$mods" || return 1
	fi
	install -d -m 0755 /etc/libvirt/hooks/qemu.d
	# docs/libvirt-hook.md: the wrapper for a broker whose control socket
	# is not the default one
	printf '#!/bin/sh\nexec %s --control %s "$@"\n' "$HOOK" \
		"${LV_CONTROL:-$T/control.sock}" > /etc/libvirt/hooks/qemu.d/rdmagate
	chmod 0755 /etc/libvirt/hooks/qemu.d/rdmagate
	cat > /etc/libvirt/libvirtd.conf <<-END
	log_filters = "1:util.hook 3:*"
	log_outputs = "1:file:$T/libvirtd.log"
	END
	/usr/sbin/virtlogd > "$T/virtlogd.out" 2>&1 &
	PIDS="$PIDS $!"
	/usr/sbin/libvirtd > "$T/libvirtd.out" 2>&1 &
	LV_PID=$!
	PIDS="$PIDS $LV_PID"
	# its drivers start after its socket: a domain list needs the QEMU one
	wait_for 120 virsh list --all > /dev/null 2>&1 && kill -0 "$LV_PID"
}

# domain_xml NAME: vm-p's document for libvirt here: LV_EMULATOR, TCG;
# for another NAME, its name and socket, rxe1, Q_ADDR, tap1, a MAC and Q_VMM
domain_xml() {
	local s="s|type='kvm'|type='qemu'|; s|<emulator>.*</emulator>|<emulator>$LV_EMULATOR</emulator>|"
	[ "$1" = "$OP_VM" ] ||
		s="$s; s|vm-p|$1|g; s|name=\"rxe0\"|name=\"rxe1\"|; s|$OP_ADDR|$Q_ADDR|; s|tap0|tap1|; s|02:00:00:00:02:02|02:00:00:00:03:02|; s|+$OP_VMM:+$OP_VMM|+$Q_VMM:+$Q_VMM|"
	sed "$s" "$OP_XML"
}

# qemu_pid NAME: the pid of the domain's QEMU, from libvirt's pid file
qemu_pid() { cat "/run/libvirt/qemu/$1.pid" 2> /dev/null; }

# nothing_started NAME OUT REASON: after a refused virsh start whose
# output is OUT: the hook's one line (its REASON a grep pattern) is
# libvirt's error, and no QEMU runs for the domain
nothing_started() {
	check "virsh start $1 fails with the hook's line: $(grep -o 'rdmagate-libvirt-hook: .*' <<< "$2")" \
		grep -q "rdmagate-libvirt-hook: error: vm $1: cannot start its rdmagate worker: $3" <<< "$2"
	check "$1 is shut off, no QEMU runs for it" bash -c \
		'[ "$(virsh -q -c qemu:///system domstate "$1")" = "shut off" ] &&
			! pgrep -f "guest=$1," > /dev/null' _ "$1"
}
