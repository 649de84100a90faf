# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Host A of two-hosts-vm, sourced by its tests and benchmark: the broker
# (with --mux), rdmagate-mux and one worker (vm a: rxe0 on the wire's NIC,
# guest address fd98::10) through ../stack-lib.sh, TAP checks that they
# are up, and helpers to run the simulated guest and to ask B.
# Expects BROKER CTL WORKER GUEST MUX.
here=$(dirname "$0")
. "$here/two-hosts-lib.sh"
STACK_NAME=two-hosts
. "$here/../stack-lib.sh"
. "$here/../host-gid.sh" # has_gid

GA=fd98::10 B=$RDMAGATE_VM_PEER_IP6
cat > "$T/policy.conf" <<END
[broker]
control_socket = $T/control.sock

[defaults]
max_pinned = 64M

[vm a]
device = rxe0
addresses = $GA
END
chmod 644 "$T/policy.conf"
SGA=fd98:0000:0000:0000:0000:0000:0000:0010 # GA as sysfs writes it

check "mux is up" mux_start "$T/mux.log"
check "broker is up" start_broker "$T/broker.log"
out=$(ctl spawn --vm a --socket "$T/a.sock" 2>&1)
check "spawn a: $out" grep -q "worker/a: pid" <<<"$out"
check "a got its mux channel" \
	wait_for 20 in_log "$T/broker.log" "worker/a: mux channel handed over"
check "host B's agent is up" b_ready 120
# B's rdma_cm tools resolve addresses on short timers of their own (2 s
# of a clock that runs fast): B knows the guest address's MAC beforehand
amac=$(cat /sys/class/net/"$RDMAGATE_VM_NETDEV0"/address)
check "B knows $GA is at $amac" b_sync \
	"ip -6 neigh replace $GA lladdr $amac dev \${RDMAGATE_VM_NETDEV0:-eth0} nud permanent" 60

# rxe's packet counters on both hosts (non-zero ones), for failures
CNT='cd /sys/class/infiniband/rxe0/ports/1/hw_counters && grep -v "^0$" -H * | tr "\n" " "; echo; rdma res show qp -dd'
counters() {
	echo "A: $(bash -c "$CNT")"
	local id
	id=$(b_run "$CNT")
	b_wait "$id" 20
	echo "B: $(b_out "$id")"
}

# b_cm: B's kernel CM message counters (ib_cm's sysfs: under the port
# since Linux 5.13, in class infiniband_cm before), one line:
# "rx_req=N ... tx_drep=N" over the messages the tests look at
B_CM='d=/sys/class/infiniband/rxe0/ports/1; [ -d $d/cm_rx_msgs ] || d=/sys/class/infiniband_cm/rxe0/1; for k in req rep rtu rej dreq drep sidr_req sidr_rep; do printf "rx_%s=%s tx_%s=%s " $k $(cat $d/cm_rx_msgs/$k) $k $(cat $d/cm_tx_msgs/$k); done; echo'
b_cm() { b_get "$B_CM" 90; }
# cm_delta BEFORE AFTER KEY: how much KEY (rx_dreq, ...) grew; d KEY: from
# $cm0 to $cm1 (the tests' b_cm before and after a step)
cm_delta() {
	local a b
	a=$(grep -o "\b$3=[0-9]*" <<<"$1") b=$(grep -o "\b$3=[0-9]*" <<<"$2")
	echo $((${b#*=} - ${a#*=}))
}
d() { cm_delta "$cm0" "$cm1" "$1"; }

# guest_run TOOL [ARGS...]: a CM tool of the simulator (cm_pingpong,
# cm_rping) as the guest of vm a (GID index 1 = $GA)
# Waits are generous: under TCG on a loaded host the VMs' clocks run
# several times faster than the wall's (measured: 1100 s of guest time in
# 210 s), and every timeout here is on those clocks.
guest_run() {
	timeout 150 "$GUEST" --socket "$T/a.sock" --ram 16M --gid "1=$GA" \
		--timeout 20000 "$1" -g 1 --cm-timeout=2000 --cm-retries=3 \
		"${@:2}"
}
guest() { guest_run cm_pingpong "$@"; }

# b_listening PORT: until an rdma_cm id listens on PORT on B (rdmatool)
b_listening() {
	wait_for 90 b_sync "rdma res show cm_id | grep LISTEN | grep -q '[]:.]$1 '" 30
}
