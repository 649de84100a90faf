# SPDX-License-Identifier: MIT
# Sourced inside rdmagate-vm -n 2 by the demo and the systemd units test:
# two VMs as the libvirt hook sees them, vm-a on $RDMAGATE_VM_DEV0 claiming
# $A and vm-b on $RDMAGATE_VM_DEV1 claiming $B, and rc_pingpong between
# their simulated guests.  Sources host-gid.sh (route_pair).
. "$(dirname "${BASH_SOURCE[0]}")/host-gid.sh"
A=10.99.0.10 B=10.99.0.11

# vm_dev VM / vm_addr VM: the device and the address the policy gives VM
vm_dev() { [ "$1" = vm-a ] && echo "$RDMAGATE_VM_DEV0" || echo "$RDMAGATE_VM_DEV1"; }
vm_addr() { [ "$1" = vm-a ] && echo "$A" || echo "$B"; }

# two_vm_policy: the policy's [defaults] and [vm] sections for both
two_vm_policy() {
	cat <<EOP
[defaults]
max_qp = 8
max_cq = 8
max_mr = 16
max_pinned = 64M

[vm vm-a]
device = $(vm_dev vm-a)
addresses = $A

[vm vm-b]
device = $(vm_dev vm-b)
addresses = $B
EOP
}

# domain_xml VM: libvirt's domain XML for VM, with rdmagate's metadata
domain_xml() {
	cat <<EOX
<domain type='kvm'>
  <name>$1</name>
  <memory unit='GiB'>4</memory>
  <metadata>
    <rdmagate:device xmlns:rdmagate="https://rdmagate.dev/xmlns/libvirt/1" name="$(vm_dev "$1")" port="1" socket="/run/rdmagate/vm/$1.sock">
      <rdmagate:address>$(vm_addr "$1")</rdmagate:address>
    </rdmagate:device>
  </metadata>
  <os><type arch='x86_64' machine='q35'>hvm</type></os>
</domain>
EOX
}

# guest_pingpong GUEST VM ITERS OUT [SERVER]: the guest simulator GUEST's
# rc_pingpong on VM's socket, its address as GID index 1, output to OUT;
# the server side without SERVER
guest_pingpong() {
	"$1" --socket "/run/rdmagate/vm/$2.sock" --gid "1=::ffff:$(vm_addr "$2")" \
		rc_pingpong -g 1 -n "$3" -s 4096 ${5:-} > "$4" 2>&1
}
