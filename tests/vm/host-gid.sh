# SPDX-License-Identifier: MIT
# Sourced by vm tests and the demo (inside rdmagate-vm).
# host_gid DEV: index and value of the device's RoCE v2 IPv4-mapped GID.
# Prints "INDEX GID" (the GID in sysfs form, valid IPv6 text).
host_gid() {
	for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		i=${f##*/}
		g=$(cat "$f" 2>/dev/null) || continue
		t=$(cat /sys/class/infiniband/"$1"/ports/1/gid_attrs/types/"$i" \
			2>/dev/null)
		case "$g" in
		0000:0000:0000:0000:0000:ffff:*)
			[ "$t" = "RoCE v2" ] && { echo "$i $g"; return 0; } ;;
		esac
	done
	echo "no RoCE v2 IPv4-mapped GID on $1" >&2
	return 1
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

# has_gid DEV GID(sysfs form): the device's port 1 lists the GID as RoCE v2
has_gid() {
	local f i
	for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		[ "$(cat "$f" 2>/dev/null)" = "$2" ] || continue
		i=${f##*/}
		[ "$(cat /sys/class/infiniband/"$1"/ports/1/gid_attrs/types/"$i" \
			2>/dev/null)" = "RoCE v2" ] && return 0
	done
	return 1
}
