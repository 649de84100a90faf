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
