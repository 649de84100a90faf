# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Inside rdmagate-vm --selinux (in init_t, Debian's reference policy and
# the rdmagate modules enforcing; sourced after tests/tap.sh and
# tests/lib.sh): the programs where the .fc labels them (the VM's
# /usr/local is a labelled tmpfs), the daemons started as their units
# start them, and what the kernel's SELinux says.  Used by the vm test
# selinux-flow-vm and the guest test libvirt-svirt.  Expects L (a
# directory for the daemons' logs) and PIDS (the test stops them at exit:
# on_exit, tests/exit.sh).

BROKER=/usr/local/sbin/rdmagate-broker
WORKER=/usr/local/libexec/rdmagate/rdmagate-worker
MUX=/usr/local/bin/rdmagate-mux
TRACE=/usr/local/bin/rdmagate-trace
CTL=/usr/local/bin/rdmagatectl
HOOK=/usr/local/bin/rdmagate-libvirt-hook # bin_t: runs in init_t, as root
VMM_CONNECT=/usr/local/libexec/rdmagate-test/vmm-connect # qemu_exec_t
ENTRY=/run/rdmagate-vm-init/bash	# init_exec_t (rdmagate-vm --selinux)

# sel_install SRC DST [SRC DST]...: each program of the build installed at
# DST as `meson install` installs it, and labelled as the .fc says
sel_install() {
	local dsts=()
	while [ $# -ge 2 ]; do
		install -D -m 755 "$1" "$2" || return 1
		dsts+=("$2")
		shift 2
	done
	restorecon -F "${dsts[@]}"
}

# sel_policy: /etc/rdmagate/policy.conf from stdin, and /run/rdmagate as
# systemd's RuntimeDirectory= makes it, labelled
sel_policy() {
	mkdir -p /etc/rdmagate /run/rdmagate &&
		chmod 755 /run/rdmagate &&
		cat > /etc/rdmagate/policy.conf &&
		chmod 644 /etc/rdmagate/policy.conf &&
		restorecon -RF /etc/rdmagate /run/rdmagate /usr/local/libexec/rdmagate
}

# every AVC denial the kernel logged, and whether audit lost any
avcs() { dmesg | grep -a 'avc:  denied'; }
lost() { dmesg | grep -a -E 'audit_lost=[1-9]|audit: .*callbacks suppressed'; }
# start NAME CMD...: CMD in the background, its output (through a pipe this
# shell makes, as systemd hands its units a stream) in $L/NAME.log, its pid
# in $L/NAME.pid
start() {
	local name=$1
	shift
	( echo "$BASHPID" > "$L/$name.pid"; exec "$@" ) < /dev/null 2>&1 |
		cat > "$L/$name.log" &
	PIDS="$PIDS $!"
	wait_for 5 test -s "$L/$name.pid"
	PIDS="$PIDS $(< "$L/$name.pid")"
}
in_named_log() { grep -qF -- "$2" "$L/$1.log"; } # NAME TEXT
domain_of() { cut -d: -f3 < "/proc/$1/attr/current" 2>/dev/null | tr -d '\0'; }
level_of() { cut -d: -f4- < "/proc/$1/attr/current" 2>/dev/null | tr -d '\0'; }
label_is() { [ "$(stat -c %C "$1")" = "$2" ]; }
worker_field() { $CTL list --json | jq -r ".[] | select(.vm == \"$1\") | .$2"; }
