# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# The port-1 GID tables of the test VM's devices, from sysfs (sourced by the
# vm and guest suites' bash scripts, in the test VM and in a nested guest).
# GIDs are in sysfs form (0000:0000:0000:0000:0000:ffff:0a63:000a), TYPEs
# as gid_attrs/types says them ("RoCE v2", "IB/RoCE v1").
#   gid_find DEV PATTERN [TYPE]  "INDEX GID" of the first entry (glob
#                                order) whose GID matches the shell
#                                PATTERN, of TYPE when given
#   gid_index DEV GID [TYPE]     its index; has_gid DEV GID [TYPE]: whether
#                                there is one, printing nothing (for check
#                                and wait_for)
#   v2_index DEV GID, has_v2 DEV GID
#                                the same, of type RoCE v2
#   host_gid DEV                 "INDEX GID" of DEV's RoCE v2 IPv4-mapped
#                                GID (the netdev's own address)
#   v4_gid ADDR                  the sysfs form of IPv4 ADDR's mapped GID
# Each entry is read with the shell's own read: rxe's table has 1024, and
# a `cat` forked for each took 85 s under TCG for a GID that is not there.
gid_find() {
	local f g t
	for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		read -r g 2> /dev/null < "$f" || continue
		# shellcheck disable=SC2053 # $2 is a pattern
		[[ $g == $2 ]] || continue
		if [ -n "${3:-}" ]; then
			read -r t 2> /dev/null < "${f%/gids/*}/gid_attrs/types/${f##*/}" ||
				continue
			[ "$t" = "$3" ] || continue
		fi
		echo "${f##*/} $g"
		return 0
	done
	return 1
}
gid_index() {
	local r
	r=$(gid_find "$@") || return 1
	echo "${r%% *}"
}
has_gid() { gid_find "$@" > /dev/null; }
v2_index() { gid_index "$1" "$2" "RoCE v2"; }
has_v2() { has_gid "$1" "$2" "RoCE v2"; }
host_gid() {
	gid_find "$1" '0000:0000:0000:0000:0000:ffff:*' "RoCE v2" && return 0
	echo "no RoCE v2 IPv4-mapped GID on $1" >&2
	return 1
}
v4_gid() {
	local IFS=.
	# shellcheck disable=SC2086 # split at the dots
	set -- $1
	printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' "$1" "$2" "$3" "$4"
}

# route_pair A B: IPv4 addresses A (claimed on veth0/rxe0) and B (on
# veth1/rxe1) reach each other across the veth pair, as the harness does for
# its own two addresses (tests/vm/rdmagate-vm): policy-routing rules before
# the local table, and permanent neighbours. An operator does the same for
# the prefixes guests may claim.
route_pair() {
	ip -batch - <<EOR
rule add pref 10 iif lo to $2 lookup 100
route replace $2 dev veth0 table 100
rule add pref 10 iif lo to $1 lookup 101
route replace $1 dev veth1 table 101
neigh replace $2 lladdr 02:00:00:00:00:02 dev veth0 nud permanent
neigh replace $1 lladdr 02:00:00:00:00:01 dev veth1 nud permanent
EOR
}
