# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# The shell's one clock for durations and deadlines (sourced): bash has
# no monotonic clock of its own, and EPOCHREALTIME, `date +%s` and
# SECONDS follow the wall clock, which steps.  /proc/uptime is
# CLOCK_BOOTTIME: monotonic, never stepped, read with a builtin (no fork),
# in hundredths of a second.
#   mono_ms [VAR]   milliseconds since boot (10 ms resolution), printed,
#                   or stored in VAR without a subshell (for loops that
#                   poll)
#   wait_for SECONDS COMMAND...
#                   until COMMAND succeeds, by this clock; the one loop
#                   that polls, for every test (the pause between rounds
#                   is $WAIT_PAUSE 0.1: sleep, or the guest suite's nap)
#   not COMMAND...  succeeds when COMMAND fails (wait_for not ...)
mono_ms() {
	local _mono_up _mono_rest
	read -r _mono_up _mono_rest < /proc/uptime
	# "12345.67": whole centiseconds, base 10 (a leading 0 is not octal)
	_mono_up=$((10#${_mono_up/./} * 10))
	if [ $# -gt 0 ]; then
		printf -v "$1" %s "$_mono_up"
	else
		echo "$_mono_up"
	fi
}

# wait_for SECONDS COMMAND...: until COMMAND succeeds, for SECONDS of the
# monotonic clock (under TCG one round may itself take a while) and at
# least SECONDS * 10 rounds: under a heavy host load the test VM's clock
# jumps ahead by minutes (measured: 1283 s of uptime 45 s into a boot),
# which alone would end a wait at once.  WAIT_PAUSE: what pauses 0.1 s
# between rounds, sleep unless the sourcing script says otherwise
# (tests/guest/lib.sh's wait_nap: nap, which forks nothing but leaves
# every later child an open pipe, so not where a child's fds matter, as
# in a test that counts AVCs after a domain transition).
wait_for() {
	local end tries=$(($1 * 10)) _wf_now
	mono_ms end
	end=$((end + $1 * 1000))
	shift
	while :; do
		"$@" && return 0
		mono_ms _wf_now
		((--tries > 0 || _wf_now <= end)) || return 1
		${WAIT_PAUSE:-sleep} 0.1
	done
}
not() { ! "$@"; }
