#!/bin/bash
# Guest payload used by run-all: runs several scenario scripts in one boot.
#
#   run-scenarios.sh SCRIPT...
#
# Each SCRIPT runs as `bash SCRIPT` in sequence, in its own process, adding its
# PASS/FAIL lines to one tally (this script owns it, see lib.sh). A script that
# exits non-zero without having recorded a FAIL (it died before its first
# scenario, say) is recorded as `FAIL <script name>: exited with status N`.
# Prints `N passed, N failed` at the end; exits non-zero on any failure.
#
# Scripts share the guest: each must undo what it starts (units, cgroups, swap),
# with lib.sh's at_exit.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "${BASH_SOURCE[0]%/*}/lib.sh"

for script in "$@"; do
	name=$(basename -- "$script" .sh)
	echo "=== $name"
	read -r _ failed_before < <(vmtest_counts)
	bash -- "$script"
	rc=$?
	read -r _ failed_after < <(vmtest_counts)
	if ((rc != 0 && failed_after == failed_before)); then
		scenario "$name"
		fail "exited with status $rc"
	fi
done
