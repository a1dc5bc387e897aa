#!/usr/bin/env bash
# `meson install --destdir` into a temporary directory (issue 36, item 10):
# the binary runs, there is a man page for pmaxent and for each command
# cli/main.c has and each one parses, and the systemd unit passes
# `systemd-analyze verify` (when there is one) and has the sandbox keys.
#   tests/test_install.sh BUILD_DIR SOURCE_DIR
set -u
build=$1
src=$2
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() {
	fail=$((fail + 1))
	echo "FAIL: $*" >&2
}
check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@" >/dev/null 2>&1; then ok; else bad "$what"; fi
}

if ! "${MESON:-meson}" install -C "$build" --destdir "$dest" --no-rebuild --quiet >"$dest.log" 2>&1; then
	bad "meson install failed: $(tail -5 "$dest.log")"
fi
rm -f "$dest.log"

bin=$(find "$dest" -path '*/bin/pmaxent' -type f | head -1)
check "the binary is installed" test -x "$bin"
check "pmaxent --version runs" "$bin" --version
[ "$("$bin" --version)" = "pmaxent $(sed -n "s/^  version : '\(.*\)',$/\1/p" "$src/meson.build")" ] &&
	ok || bad "pmaxent --version prints the project's version"

# every command of cli/main.c has its page, and so has pmaxent
mandir=$(dirname "$(find "$dest" -name pmaxent.1 | head -1)")
check "pmaxent.1 is installed" test -f "$mandir/pmaxent.1"
commands=$(sed -n 's/^    {"\([a-z]*\)", [a-z_]*usage[a-z_]*,.*/\1/p' "$src/cli/main.c")
[ "$(echo "$commands" | wc -w)" -ge 7 ] && ok || bad "the commands of cli/main.c: $commands"
for c in $commands; do
	check "pmaxent-$c.1 is installed" test -f "$mandir/pmaxent-$c.1"
	"$bin" "$c" --help >/dev/null 2>&1 && ok || bad "pmaxent $c --help"
done
# groff, man and systemd-analyze come with scripts/deps: a check that
# cannot run is a failure, not a skip
for tool in groff man systemd-analyze; do
	check "$tool is installed (scripts/deps)" command -v "$tool"
done
for page in "$mandir"/pmaxent*.1; do
	out=$(groff -man -z -ww "$page" 2>&1)
	[ -z "$out" ] && ok || bad "$page: groff: $out"
	man -l "$page" 2>/dev/null | grep -q "^NAME" && ok || bad "$page: man -l shows no NAME"
	name=$(basename "$page" .1)
	grep -q "^\.TH $(echo "$name" | tr a-z A-Z) 1 " "$page" && ok || bad "$page: .TH names it"
done

# the unit: sandbox keys, reload on SIGHUP, a stop timeout above the grace
unit=$(find "$dest" -path '*/systemd/system/pmaxent.service' | head -1)
check "pmaxent.service is installed" test -f "$unit"
check "the sysusers.d user is installed" test -f "$(find "$dest" -path '*/sysusers.d/pmaxent.conf' | head -1)"
for key in 'User=pmaxent' 'ProtectSystem=strict' 'PrivateTmp=yes' 'NoNewPrivileges=yes' \
	'ProtectHome=yes' 'StateDirectory=pmaxent' 'ExecReload=/bin/kill -HUP $MAINPID' \
	'KillSignal=SIGTERM'; do
	grep -qxF "$key" "$unit" && ok || bad "pmaxent.service has no '$key'"
done
grace=$(sed -n 's/^ExecStart=.*--grace \([0-9]*\).*/\1/p' "$unit")
stop=$(sed -n 's/^TimeoutStopSec=\([0-9]*\)$/\1/p' "$unit")
[ -n "$grace" ] && [ -n "$stop" ] && [ "$stop" -gt "$((grace + 10))" ] && ok ||
	bad "TimeoutStopSec ($stop) must be above the grace ($grace) and the 10 s for answers"
exec_bin=$(sed -n 's/^ExecStart=\([^ ]*\) serve .*/\1/p' "$unit")
[ "$dest$exec_bin" = "$bin" ] && ok || bad "ExecStart runs $exec_bin, installed: $bin"
# verified with ExecStart at the binary under destdir
sed "s|^ExecStart=$exec_bin |ExecStart=$bin |" "$unit" >"$dest/pmaxent.service"
out=$(systemd-analyze verify --man=no "$dest/pmaxent.service" 2>&1)
[ $? -eq 0 ] && ok || bad "systemd-analyze verify: $out"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
