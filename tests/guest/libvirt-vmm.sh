#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# libvirt-vmm.sh: tests/guest/nested-guest's QEMU (NESTED_GUEST_QEMU) when
# the nested guest is a libvirt domain (the guest test libvirt-operator).
# tests/vm/rdmagate-vm runs it with the QEMU arguments it would run; it
# turns them into the domain's document and waits while libvirtd runs it:
#   - the domain LV_NESTED_IN (vm-p's document as domain_xml makes it)
#     gets the harness's kernel, initramfs and command line (<os>), -cpu
#     max, no USB controller and no balloon (as lean as the harness's own
#     VM under TCG), and the harness's console, virtio-serial ports and 9p
#     shares as <qemu:arg>s; what the document has already (RAM as a
#     shared memfd, vmxnet3 on tap0, the vfio-user-pci function,
#     aux-ram-share) or libvirt sets (machine, memory, vCPUs, -nodefaults)
#     is dropped, any other argument refused;
#   - the harness's run directory and FIFOs go to the domain's QEMU
#     identity LV_NESTED_ID (uid:gid, the <seclabel>'s): libvirt runs QEMU
#     as that uid without capabilities, and QEMU opens them itself;
#   - no -no-reboot: `virsh reset` must reset the guest, not end it
#     (QEMU turns a reset into a shutdown under -no-reboot);
#   - writes the document to LV_NESTED_OUT (atomically), for the test to
#     `virsh define` and `virsh start`;
#   - waits for the domain's QEMU (libvirt's pid file of LV_NESTED_VM) to
#     run and then to end: the guest's power-off (libvirt destroys the
#     domain at the guest's shutdown), `virsh destroy`, or QEMU's crash.
#     Exit status 0 then; the harness reads the command's status from
#     the guest as always (125 when there is none).
set -uo pipefail

prog=${0##*/}
here=$(cd "$(dirname "$0")" && pwd -P)
die() { echo "$prog: error: $*" >&2; exit 125; }
. "$here/lib.sh" # nap

: "${LV_NESTED_IN:?the domain document to complete}"
: "${LV_NESTED_OUT:?where the completed document goes}"
: "${LV_NESTED_VM:?the domain name}"
: "${LV_NESTED_ID:?the domain QEMU identity, uid:gid}"
# how long the test may take to start the domain
LV_NESTED_WAIT=${LV_NESTED_WAIT:-600}

# esc TEXT: TEXT for an XML attribute value or text
esc() {
	local s=${1//&/&amp;}
	s=${s//</&lt;} s=${s//>/&gt;} s=${s//\'/&apos;} s=${s//\"/&quot;}
	printf '%s' "$s"
}

kernel= initrd= append= args= ctl=
while [ $# -gt 0 ]; do
	case $1 in
	-nodefaults | -no-user-config | -no-reboot) shift ;;
	-kernel) kernel=$2; shift 2 ;;
	-initrd) initrd=$2; shift 2 ;;
	-append) append=$2; shift 2 ;;
	# libvirt's: the machine type, accelerator (type='qemu'), RAM (the
	# document's 512 MiB memfd), vCPUs, display; aux-ram-share is in it
	-machine)
		case $2 in
		pc,accel=tcg | memory-backend=mem | aux-ram-share=on) ;;
		*) die "-machine $2: not in the domain" ;;
		esac
		shift 2 ;;
	-m) [ "$2" = 512M ] || die "-m $2: the domain has 512 MiB"; shift 2 ;;
	-smp) [ "$2" = 1 ] || die "-smp $2: the domain has 1 vCPU"; shift 2 ;;
	-object)
		[[ $2 == memory-backend-memfd,id=mem,size=512M,share=on ]] ||
			die "-object $2: not the domain's RAM"
		shift 2 ;;
	-cpu) [ "$2" = max ] || die "-cpu $2: the domain's is max"; shift 2 ;;
	-display) shift 2 ;;
	# the document's: vmxnet3 on tap0 at 10.0, the PVRDMA function at 10.1
	-netdev) [[ $2 == tap,id=fabric,ifname=tap0,* ]] ||
			die "-netdev $2: the domain's NIC is on tap0"
		shift 2 ;;
	-device)
		case $2 in
		vmxnet3,* | '{"driver":"vfio-user-pci",'*) ;;
		virtio-serial-pci | virtserialport,* | virtio-9p-pci,*)
			args+="    <qemu:arg value='-device'/>
    <qemu:arg value='$(esc "$2")'/>
" ;;
		*) die "-device $2: no mapping to the domain" ;;
		esac
		shift 2 ;;
	-serial | -chardev | -fsdev)
		# the harness's run directory: QEMU creates the console log
		# there; the guest's stdout, stderr and status FIFOs; the
		# control share
		[[ $1 != -serial || $2 != file:*/console.log ]] ||
			{ ctl=${2#file:}; ctl=${ctl%/console.log}; }
		args+="    <qemu:arg value='$1'/>
    <qemu:arg value='$(esc "$2")'/>
"
		shift 2 ;;
	*) die "$1: no mapping to the domain" ;;
	esac
done
[ -n "$kernel" ] && [ -n "$initrd" ] || die "no -kernel or -initrd"
[ -n "$ctl" ] && [ -d "$ctl" ] || die "no run directory (-serial file:DIR/console.log)"
chown "$LV_NESTED_ID" "$ctl" "$ctl"/*.fifo || die "cannot give $ctl to $LV_NESTED_ID"

os="    <kernel>$(esc "$kernel")</kernel>
    <initrd>$(esc "$initrd")</initrd>
    <cmdline>$(esc "$append")</cmdline>"
lean="    <controller type='usb' model='none'/>
    <memballoon model='none'/>"
{
	while IFS= read -r l; do
		case $l in
		*'</os>'*) printf '%s\n' "${l%%</os>*}" "$os" "  </os>${l#*</os>}"
			echo "  <cpu mode='maximum' check='none'/>" ;;
		*'</devices>'*) printf '%s\n%s\n' "$lean" "$l" ;;
		*'</qemu:commandline>'*) printf '%s%s\n' "$args" "$l" ;;
		*) printf '%s\n' "$l" ;;
		esac
	done < "$LV_NESTED_IN"
} > "$LV_NESTED_OUT.tmp" || die "cannot write $LV_NESTED_OUT"
for t in '<kernel>' '<memballoon' '-serial'; do
	grep -q -- "$t" "$LV_NESTED_OUT.tmp" ||
		die "$LV_NESTED_IN: no </os>, </devices> or </qemu:commandline> to complete"
done
mv "$LV_NESTED_OUT.tmp" "$LV_NESTED_OUT"

pidf=/run/libvirt/qemu/$LV_NESTED_VM.pid
for ((i = 0; i < LV_NESTED_WAIT; i++)); do
	# (libvirt writes the pid without a newline: read fails at EOF but
	# sets qpid; a `read && kill` here never saw QEMU and waited out
	# LV_NESTED_WAIT, 600 s, whatever QEMU did)
	qpid=
	read -r qpid 2> /dev/null < "$pidf"
	[ -n "$qpid" ] && kill -0 "$qpid" 2> /dev/null && break
	qpid=
	nap 1
done
[ -n "$qpid" ] || die "the domain $LV_NESTED_VM did not start within ${LV_NESTED_WAIT}s"
echo "$prog: domain $LV_NESTED_VM runs, QEMU pid $qpid" >&2
while kill -0 "$qpid" 2> /dev/null; do nap 1; done
exit 0
