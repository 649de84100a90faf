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
