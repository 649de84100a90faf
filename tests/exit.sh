# SPDX-License-Identifier: MIT
# shellcheck shell=sh
# One way for a shell test to undo what it set up, whichever way it ends
# (sourced; POSIX sh, so the bash tests and the /bin/sh ones share it;
# tests/lib.sh sources it).  It owns the test's EXIT trap: a test that
# sources it sets no EXIT trap of its own.
#   on_exit 'COMMAND'   COMMAND runs when the test exits, evaluated then
#                       (so '$PIDS' is the list as it is at the end), the
#                       last registered first, as Go's defer: register an
#                       undo right after what it undoes.  One line each;
#                       registering the same COMMAND again does nothing.
#                       A COMMAND that fails does not stop the others,
#                       and the test's exit status stays its own.
#   stop PID...         SIGTERM to each PID (empty words are skipped, so
#                       unset variables may be passed), then reaps them
# (sourced twice, e.g. by a library and its test: the list is kept)
_exit_cmds=${_exit_cmds-}

on_exit() {
	case "
$_exit_cmds
" in
	*"
$1
"*) return 0 ;;
	esac
	_exit_cmds="$1
$_exit_cmds"
}

stop() {
	for _stop_p in "$@"; do
		[ -z "$_stop_p" ] || kill "$_stop_p" 2> /dev/null
	done
	for _stop_p in "$@"; do
		[ -z "$_stop_p" ] || wait "$_stop_p" 2> /dev/null
	done
	return 0
}

# fd 3: the commands must not read the list as their stdin
_exit_run() {
	while IFS= read -r _exit_cmd <&3; do
		[ -z "$_exit_cmd" ] || eval "$_exit_cmd" || :
	done 3<< EOF
$_exit_cmds
EOF
}
trap _exit_run EXIT
