#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# unit suite, TAP: every tracked C file matches .clang-format
# (`clang-format --dry-run -Werror`), and .clang-format is a fixed point: formatting the formatted tree changes nothing, so
# `clang-format -i` of every file leaves this test green.
# Usage: test-format.sh SRC
set -u
SRC=$1
here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../tap.sh"
. "$here/../exit.sh"

command -v clang-format > /dev/null ||
	skip_all "no clang-format (Debian package clang-format)"
# The tracked files are the tree's own: a copy without .git (the package
# build's) has no list to check.
git -C "$SRC" rev-parse --is-inside-work-tree > /dev/null 2>&1 ||
	skip_all "$SRC is not a git checkout"
cd "$SRC" || exit 1
echo "# $(clang-format --version)"
T=$(mktemp -d /tmp/rdmagate-format.XXXXXX)
on_exit 'rm -rf "$T"'
git ls-files -z -- '*.c' '*.h' > "$T/files"
nfiles=$(tr -cd '\0' < "$T/files" | wc -c)
[ "$nfiles" -gt 0 ] || { not_ok "no tracked C file found in $SRC"; tap_end; exit; }

# every file in one run; the names of those with a difference
xargs -0 clang-format --dry-run -Werror < "$T/files" > "$T/out" 2>&1
sed -nE 's/^([^:]+):[0-9]+:[0-9]+: error: .*/\1/p' "$T/out" | sort -u > "$T/bad"
if [ -s "$T/bad" ]; then
	not_ok "$(wc -l < "$T/bad") of $nfiles files do not match .clang-format (run clang-format -i on them)"
	while read -r f; do
		clang-format "$f" | diff -u "$f" - | head -n 20
	done < "$T/bad" | diag
else
	ok "the $nfiles tracked C files match .clang-format"
fi

# A fixed point: format a copy twice; the second pass must change nothing.
mkdir "$T/tree"
cp .clang-format "$T/tree/"
tar -cf - --null -T "$T/files" | tar -C "$T/tree" -xf -
(cd "$T/tree" && xargs -0 -P 2 -n 64 clang-format -i < "$T/files" &&
	cp -a . "$T/once" &&
	xargs -0 -P 2 -n 64 clang-format -i < "$T/files")
if diff -r "$T/once" "$T/tree" > "$T/drift"; then
	ok "clang-format -i of the formatted tree changes nothing (idempotent)"
else
	not_ok "clang-format is not idempotent on: $(grep -c '^diff' "$T/drift") files"
	grep '^diff' "$T/drift" | diag
fi
tap_end
