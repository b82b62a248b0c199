# shellcheck shell=bash
# Reference programs the guest runs beside the daemon, for comparisons within
# one boot: sourced by run-all (scenario 102) and run-bench (the idle-cost
# table). Needs $build_dir.

# ensure_reference_programs: earlyoom, the peer the footprint scenario (102)
# and the policy benchmark measure the daemon beside, unpacked from Debian's
# package into BUILD_DIR/vm-reference: not installed, so it never runs as a
# service on this machine (the guest runs it from there, for a while).
ensure_reference_programs() {
	local dir=$build_dir/vm-reference tmp
	[[ -x $dir/usr/bin/earlyoom ]] && return 0
	command -v apt-get >/dev/null || return 0 # not Debian: 102 says what it lacks
	tmp=$(mktemp -d)
	if ! (cd "$tmp" && apt-get download -q earlyoom >&2) && [[ $(id -u) == 0 ]]; then
		apt-get update -q >&2 && (cd "$tmp" && apt-get download -q earlyoom >&2) || true
	fi
	if compgen -G "$tmp/earlyoom_*.deb" >/dev/null; then
		mkdir -p "$dir"
		dpkg-deb -x "$tmp"/earlyoom_*.deb "$dir"
	else
		echo "${0##*/}: could not download earlyoom (apt-get download earlyoom); scenario 102 and the benchmark's earlyoom column will fail" >&2
	fi
	rm -rf "$tmp"
}
