# SPDX-License-Identifier: MIT
# TAP helpers for the shell tests (sourced): numbered results, a summary.
#   ok DESCRIPTION / not_ok DESCRIPTION     one result
#   check DESCRIPTION COMMAND...            ok if COMMAND succeeds
#   diag                                    stdin as TAP comments
#   skip_all REASON                         the whole test skips, saying why
#   tap_end                                 the plan; exit status 1 on a failure
# (waiting until a command succeeds: wait_for, tests/lib.sh)
n=0 failed=0
# a description is one line: a newline in it would end the result line
# and leave the rest for the harness to reject ("Unknown TAP output")
ok() { local d="$*"; n=$((n + 1)); echo "ok $n - ${d//$'\n'/ / }"; }
not_ok() {
	local d="$*"
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n - ${d//$'\n'/ / }"
}
check() {
	local d=$1
	shift
	if "$@"; then ok "$d"; else not_ok "$d"; fi
}
diag() { sed 's/^/# /'; }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
tap_end() { echo "1..$n"; [ "$failed" = 0 ]; }
