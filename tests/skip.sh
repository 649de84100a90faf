#!/bin/sh
# SPDX-License-Identifier: MIT
# A test this build cannot run, listed anyway (tests/meson.build): its one
# TAP line skips it and says why.  Usage: skip.sh REASON...
echo "1..0 # SKIP $*"
