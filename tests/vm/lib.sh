# shellcheck shell=bash
# Guest-side helpers for VM scenario scripts (tests/vm/selftest.sh,
# tests/vm/scenarios/*.sh). Source it from a bash script that runs as root inside
# the guest booted by tests/vm/run-vm:
#
#   source "$VMTEST_LIB"            # or a path relative to the script
#   check_something() { assert_eq 1 "$(cat /some/file)" "some file"; }
#   run_scenario something-works check_something
#
# Bookkeeping. A scenario is opened by `scenario NAME` and closed by `pass` or
# `fail MSG`; the first verdict wins and later ones are ignored. Each closed
# scenario prints exactly one line on stdout, `PASS NAME` or `FAIL NAME: REASON`,
# and appends it to the tally file ($VMTEST_TALLY). Assertions and wait_until do
# not close the scenario: they print a diagnostic on stderr, remember the first
# failure of the open scenario and return 1, so `pass` after a failed assertion
# still reports FAIL with that reason. A scenario still open when the script
# exits (say set -e stopped it) is closed as FAIL.
#
# run_scenario NAME FUNC [ARGS] runs FUNC in a subshell with errexit, so one
# failing scenario does not stop the next; call it as a plain statement (not
# under if/||/&&, where bash disables errexit inside).
#
# The first script to source this file in a run owns the tally: it creates it
# (exported as VMTEST_TALLY, in $VMTEST_RESULTS when set) and prints the summary
# line `N passed, N failed` at exit. Scripts started by it with VMTEST_TALLY in
# their environment add to the same tally and print no summary. Any script that
# recorded a FAIL exits non-zero.
#
# This file owns the EXIT trap; register clean-up with `at_exit CMD [ARGS]`
# (run last-registered first). The only timing allowed in tests is the hang
# guard of wait_until: emulation makes everything 10-50x slower than hardware.
#
# Sourced with VMTEST_LIB_FUNCTIONS_ONLY=1 it only defines functions (the rig's
# runner uses that for zram_swap_on).

# ---- bookkeeping ------------------------------------------------------------

# _vmtest_state: per-script dir holding `current` (open scenario name),
# `failure` (its first failure) and `closed` (the last closed scenario). Files,
# not variables, so that subshells (run_scenario, pipelines) share the state.
_vmtest_current() { cat "$_vmtest_state/current" 2>/dev/null; }

# _vmtest_note_failure MSG: remember MSG as the open scenario's first failure.
_vmtest_note_failure() {
	[[ -s $_vmtest_state/current && ! -s $_vmtest_state/failure ]] || return 0
	printf '%s\n' "$*" >"$_vmtest_state/failure"
}

# _vmtest_verdict PASS|FAIL [REASON]: close the open scenario.
_vmtest_verdict() {
	local name line
	name=$(_vmtest_current)
	if [[ -z $name ]]; then
		# A scenario already closed keeps its first verdict.
		[[ -s $_vmtest_state/closed ]] && return 0
		# A verdict before any scenario is a bug in the script: make it visible.
		name="$_vmtest_script(no scenario)"
		[[ $1 == FAIL ]] || set -- FAIL "pass before any scenario"
	fi
	if [[ $1 == PASS ]]; then
		line="PASS $name"
	else
		line="FAIL $name: ${2:-no reason given}"
	fi
	line=${line//$'\n'/ }
	printf '%s\n' "$name" >"$_vmtest_state/closed"
	: >"$_vmtest_state/current"
	: >"$_vmtest_state/failure"
	printf '%s\n' "$line" >>"$VMTEST_TALLY"
	printf '%s\n' "$line"
}

# scenario NAME: open scenario NAME (closing an open one as FAIL).
scenario() {
	[[ -z $(_vmtest_current) ]] || fail "no pass/fail before the next scenario"
	printf '%s\n' "$1" >"$_vmtest_state/current"
	: >"$_vmtest_state/failure"
	echo "--- $1"
}

# pass: close the open scenario; FAIL if an assertion in it failed.
pass() {
	if [[ -s $_vmtest_state/failure ]]; then
		_vmtest_verdict FAIL "$(cat "$_vmtest_state/failure")"
	else
		_vmtest_verdict PASS
	fi
}

# fail MSG: close the open scenario as FAIL with MSG. Returns 0 so that
# `check || fail "why"` does not also stop a set -e script.
fail() {
	_vmtest_verdict FAIL "$*"
}

# run_scenario NAME FUNC [ARGS]: open NAME, run FUNC ARGS in a subshell with
# errexit; PASS if it returns 0 with no failed assertion, else FAIL with the
# first failure (or the command that stopped it).
run_scenario() {
	local name=$1 rc errexit=0 reason
	shift
	[[ $- == *e* ]] && errexit=1
	scenario "$name"
	set +e
	(
		set -eE
		trap '_vmtest_note_failure "line $LINENO: \`$BASH_COMMAND\` exited with status $?"' ERR
		"$@"
	)
	rc=$?
	((errexit)) && set -e
	if ((rc == 0)); then
		pass
	else
		reason=$(cat "$_vmtest_state/failure")
		fail "${reason:-exited with status $rc}"
	fi
	return 0
}

# vmtest_counts: print "PASSED FAILED" for the whole tally.
vmtest_counts() {
	local passed failed
	passed=$(grep -c '^PASS ' "$VMTEST_TALLY" 2>/dev/null) || true
	failed=$(grep -c '^FAIL ' "$VMTEST_TALLY" 2>/dev/null) || true
	echo "${passed:-0} ${failed:-0}"
}

# at_exit CMD [ARGS]: run CMD at script exit (last registered first), before
# the verdicts are settled. Works from run_scenario's subshell too: the command
# then runs when the whole script exits, not when the scenario ends.
at_exit() {
	local cmd
	printf -v cmd '%q ' "$@"
	printf '%s\n' "$cmd" >>"$_vmtest_state/at_exit"
}

_vmtest_on_exit() {
	local rc=$? cmd passed failed
	set +e
	while IFS= read -r cmd; do
		eval "$cmd"
	done < <(tac "$_vmtest_state/at_exit" 2>/dev/null)
	if [[ -n $(_vmtest_current) ]]; then
		if [[ -s $_vmtest_state/failure ]]; then
			fail "$(cat "$_vmtest_state/failure")"
		else
			fail "script exited with status $rc before pass/fail"
		fi
	fi
	read -r passed failed < <(vmtest_counts)
	if ((_vmtest_owner)); then
		echo "$passed passed, $failed failed"
	fi
	rm -rf "$_vmtest_state"
	# Failures recorded by this script (or below it, for the owner) make it fail.
	((failed > _vmtest_failed_before)) && exit 1
	exit "$rc"
}

# ---- assertions (print why, note the failure, return 1) ---------------------

# _vmtest_assert_failed MSG
_vmtest_assert_failed() {
	echo "assertion failed: $*" >&2
	_vmtest_note_failure "$*"
	return 1
}

# assert_eq EXPECTED ACTUAL [WHAT]
assert_eq() {
	[[ $1 == "$2" ]] || _vmtest_assert_failed "${3:-value}: expected '$1', got '$2'"
}

# assert_ne UNEXPECTED ACTUAL [WHAT]
assert_ne() {
	[[ $1 != "$2" ]] || _vmtest_assert_failed "${3:-value}: expected anything but '$1'"
}

# assert_contains HAYSTACK NEEDLE [WHAT]: NEEDLE is a fixed substring.
assert_contains() {
	[[ $1 == *"$2"* ]] || _vmtest_assert_failed "${3:-text} '$1' does not contain '$2'"
}

# assert_word WORDS WORD [WHAT]: WORD is one of the whitespace-separated WORDS
# (cgroup.controllers, cgroup.subtree_control, ...).
assert_word() {
	local -a words
	local w
	read -ra words <<<"$1"
	for w in "${words[@]}"; do
		[[ $w == "$2" ]] && return 0
	done
	_vmtest_assert_failed "${3:-list} '$1' lacks '$2'"
}

# assert_file_contains FILE TEXT: some line of FILE contains the fixed string TEXT.
assert_file_contains() {
	[[ -r $1 ]] || {
		_vmtest_assert_failed "$1: cannot read"
		return 1
	}
	grep -qF -- "$2" "$1" || _vmtest_assert_failed "$1 does not contain '$2'"
}

# assert_file_matches FILE ERE: some line of FILE matches the extended regex.
assert_file_matches() {
	[[ -r $1 ]] || {
		_vmtest_assert_failed "$1: cannot read"
		return 1
	}
	grep -qE -- "$2" "$1" || _vmtest_assert_failed "$1 has no line matching /$2/"
}

# assert_cmd CMD [ARGS]: CMD succeeds.
assert_cmd() {
	"$@" || _vmtest_assert_failed "command failed (status $?): $*"
}

# assert_fails CMD [ARGS]: CMD fails.
assert_fails() {
	! "$@" || _vmtest_assert_failed "command succeeded but should have failed: $*"
}

# wait_until TIMEOUT_S CMD [ARGS]: poll CMD until it succeeds; return 1 (noting
# the failure) if it has not after TIMEOUT_S seconds. TIMEOUT_S is a hang guard,
# not a measurement: make it generous (minutes), as emulation is slow and jittery.
wait_until() {
	local timeout=$1 deadline
	shift
	deadline=$((SECONDS + timeout))
	until "$@"; do
		if ((SECONDS >= deadline)); then
			_vmtest_assert_failed "timed out after ${timeout}s waiting for: $*"
			return 1
		fi
		sleep 0.2
	done
}

# ---- guest utilities --------------------------------------------------------

# log MSG: a progress line in the payload log (not a verdict).
log() { echo "# $*"; }

# mem_kib FIELD: a /proc/meminfo figure in KiB (MemAvailable, MemTotal, ...).
mem_kib() { awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo; }

# zram_swap_on [SIZE]: swap on /dev/zram0 (default 512M). Fails if it is in use.
zram_swap_on() {
	modprobe zram &&
		echo "${1:-512M}" >/sys/block/zram0/disksize &&
		mkswap /dev/zram0 >/dev/null &&
		swapon /dev/zram0
}

# zram_swap_off: undo zram_swap_on.
zram_swap_off() {
	swapoff /dev/zram0 && echo 1 >/sys/block/zram0/reset
}

# ---- set-up at source time --------------------------------------------------

if [[ ${VMTEST_LIB_FUNCTIONS_ONLY:-0} != 1 ]]; then
	_vmtest_script=$(basename -- "${BASH_SOURCE[1]:-$0}" .sh)
	_vmtest_state=$(mktemp -d "${TMPDIR:-/tmp}/vmtest-state.XXXXXX")
	if [[ -z ${VMTEST_TALLY:-} ]]; then
		_vmtest_owner=1
		if [[ -n ${VMTEST_RESULTS:-} ]]; then
			VMTEST_TALLY=$VMTEST_RESULTS/tally
		else
			VMTEST_TALLY=$_vmtest_state/tally # gone at exit, after the summary
		fi
		: >"$VMTEST_TALLY"
		export VMTEST_TALLY
	else
		_vmtest_owner=0
	fi
	read -r _ _vmtest_failed_before < <(vmtest_counts)
	if ((_vmtest_owner)); then _vmtest_failed_before=0; fi
	trap _vmtest_on_exit EXIT
fi
