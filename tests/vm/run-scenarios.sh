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
# Each script's guest time goes to $VMTEST_RESULTS/timings.txt ("SECONDS
# NAME" lines), which run-all sums up.
#
# A script may leave a short account of what went on in
# $VMTEST_RESULTS/digest.txt (infervisor.sh's dump_state does); when the
# script failed, it is added to $VMTEST_RESULTS/failure-digest.txt under the
# script's name, and run-all prints that file.
#
# Scripts share the guest: each must undo what it starts (units, cgroups, swap),
# with lib.sh's at_exit.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "${BASH_SOURCE[0]%/*}/lib.sh"

rm -f "$VMTEST_RESULTS/timings.txt"
for script in "$@"; do
	name=$(basename -- "$script" .sh)
	echo "=== $name"
	read -r _ failed_before < <(vmtest_counts)
	rm -f "$VMTEST_RESULTS/digest.txt"
	started=$SECONDS
	bash -- "$script"
	rc=$?
	# Guest seconds per script, for run-all's summary of the slowest.
	echo "$((SECONDS - started)) $name" >>"$VMTEST_RESULTS/timings.txt"
	read -r _ failed_after < <(vmtest_counts)
	if ((rc != 0 && failed_after == failed_before)); then
		scenario "$name"
		fail "exited with status $rc"
	fi
	# A failed script's digest (if it wrote one) goes where run-all shows it.
	if ((rc != 0)) && [[ -s $VMTEST_RESULTS/digest.txt ]]; then
		{
			echo "=== $name"
			cat "$VMTEST_RESULTS/digest.txt"
		} >>"$VMTEST_RESULTS/failure-digest.txt"
	fi
done
