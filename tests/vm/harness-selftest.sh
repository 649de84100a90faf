#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# harness-selftest: runs on the host and checks rdmagate-vm itself: option
# errors, the command's exit status, stdout/stderr kept apart, variables,
# cwd and the writable share, timeouts (124) and a VM that cannot boot (125).
# Usage: harness-selftest.sh PATH/TO/rdmagate-vm
set -u

vm=${1:?usage: $0 PATH/TO/rdmagate-vm}
work=${RDMAGATE_BUILD:?RDMAGATE_BUILD must name the build directory}/harness-selftest.$$
mkdir -p "$work" || exit 1
. "$(dirname "$0")/../exit.sh"
on_exit 'rm -rf "$work"'
failures=0
ok() { echo "  ok  $*"; }
bad() { echo "  FAIL $*"; failures=$((failures + 1)); }
# run NAME ARGS...: runs the harness, leaves rc, out, err
run() {
	local t0=$EPOCHREALTIME
	"$vm" "$@" > "$work/out" 2> "$work/err" < /dev/null
	rc=$?
	secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	out=$(cat "$work/out") err=$(cat "$work/err")
}
show() { sed 's/^/      | /' "$work/err"; }

echo "== options =="
run --help
[ "$rc" = 0 ] && [[ $out == *--no-cm* ]] && ok "--help exits 0 and documents --no-cm" ||
	bad "--help: rc $rc"
run --bogus -- true
[ "$rc" = 125 ] && [[ $err == *"unknown option '--bogus'"* ]] &&
	ok "an unknown option exits 125 and names it" || { bad "--bogus: rc $rc"; show; }
run -n 3 -- true
[ "$rc" = 125 ] && [[ $err == *"--rxe must be 0, 1 or 2"* ]] &&
	ok "-n 3 exits 125 with a reason" || { bad "-n 3: rc $rc"; show; }

echo "== a command's status, output, variables, cwd, share =="
export SELFTEST_A="a value with  spaces"
cd "$work" || exit 1
run -n 0 -e SELFTEST_A -e SELFTEST_B=two -- bash -c \
	'echo "out:$SELFTEST_A:$SELFTEST_B:$PWD:$RDMAGATE_VM"; echo err-line >&2;
	 echo written-inside > "$PWD/from-vm"; exit 3'
[ "$rc" = 3 ] && ok "the command's exit status 3 comes back" || { bad "rc $rc, expected 3"; show; }
[ "$out" = "out:$SELFTEST_A:two:$work:1" ] &&
	ok "stdout carries exactly the command's output, variables and cwd intact" ||
	bad "stdout was '$out'"
[[ $err == *err-line* ]] && [[ $out != *err-line* ]] &&
	ok "stderr is streamed separately" || bad "stderr was '$err'"
[ "$(cat "$work/from-vm" 2>/dev/null)" = written-inside ] &&
	ok "a file written inside the VM in the cwd is on the host" || bad "no file from the VM"
[[ $err == *boot-to-command* ]] && ok "a timing line was printed (${err##*boot-to-command })" ||
	bad "no timing line"
run -q -n 0 -- true
[ "$rc" = 0 ] && [ -z "$err" ] && ok "-q: exit 0, nothing on stderr" || { bad "-q: rc $rc"; show; }

echo "== a status line lost on its port =="
# the console carries every status line too: a start the port lost must
# never read as "not started" (issue 28 item 0b)
run -n 0 -b 20 -e RDMAGATE_VM_TEST_LOSE_STATUS=1 -- bash -c 'sleep 30; exit 4'
[ "$rc" = 4 ] && [[ $err == *"lost the command's start"* ]] &&
	ok "a start and an exit the port lost come from the console: exit 4, not killed" ||
	{ bad "lost status: rc $rc"; show; }

echo "== failures =="
run -q -n 0 -t 12 -- sleep 100
[ "$rc" = 124 ] && [[ $err == *"timeout after 12s"* ]] &&
	ok "a command past --timeout is killed: exit 124 after ${secs}s" || { bad "timeout: rc $rc"; show; }
RDMAGATE_VM_APPEND="rdinit=/does-not-exist" run -q -n 0 -- true
[ "$rc" = 125 ] && [[ $err == *"the VM did not boot: Kernel panic"* ]] &&
	[[ $err == *"last lines of the guest console"* ]] &&
	ok "a VM that cannot boot: exit 125, the reason and the console's end after ${secs}s" ||
	{ bad "boot failure: rc $rc"; show; }
echo "      $(grep -m1 'did not boot' "$work/err")"

if [ "$failures" != 0 ]; then
	echo "harness-selftest: $failures check(s) FAILED"
	exit 1
fi
echo "harness-selftest: all checks passed"
