# Sourced by the bench scripts: what each needs before its first row.
# Expects root (the checkout) and bin (the pmaxent binary) set.

# Installs what is missing, builds build/ when bin is not there yet, and
# makes the work directory $work (removed at exit, kept with KEEP=1).
bench_setup() {
	"$root/scripts/deps"
	if [ ! -x "$bin" ]; then
		[ -f "$root/build/build.ninja" ] || meson setup "$root/build"
		ninja -C "$root/build"
	fi
	work=$(mktemp -d)
	if [ "${KEEP:-0}" = 1 ]; then
		echo "# work directory: $work" >&2
	else
		trap 'rm -rf "$work"' EXIT
	fi
}

# The machine and the binary, as comment lines above a table; $1: the
# settings to name.
bench_header() {
	echo "# $(date -u '+%F %H:%M UTC'), $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo |
		cut -d: -f2), $1"
	echo "# $bin: $("$bin" --version 2>&1 | head -1)"
}

# Solves $1 with knowledge $2 RUNS times: $work/N.json the result and
# $work/N.time "seconds peak_KiB" of run N.
bench_solve() {
	for r in $(seq "$runs"); do
		/usr/bin/time -f '%e %M' -o "$work/$r.time" "$bin" solve "$1" "$2" >"$work/$r.json"
	done
}

# "seconds peak_MiB" of a /usr/bin/time -v output file $1.
bench_time_fields() {
	python3 - "$1" <<'PY'
import re, sys
tm = open(sys.argv[1]).read()
w = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", tm).group(1)
wall = sum(float(x) * 60 ** i for i, x in enumerate(reversed(w.split(":"))))
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", tm).group(1)) / 1024
print(f"{wall:.2f} {rss:.0f}")
PY
}

# Starts `$1 serve --port 0 --quiet` with the data directory $2 (made if
# missing; the log is $2.log), the rest further serve arguments; sets
# serve_pid (the server itself, for /proc/PID/status) and url.
bench_serve() {
	local b=$1 dir=$2
	shift 2
	mkdir -p "$dir"
	"$b" serve --port 0 --quiet --data-dir "$dir" "$@" 2>"$dir.log" &
	serve_pid=$!
	for _ in $(seq 600); do grep -qs 'listening on' "$dir.log" && break; sleep 0.05; done
	url=$(grep -o 'http://[^ ]*' "$dir.log" | head -1)
	[ -n "$url" ] || { echo "bench_serve: $b did not start: $(cat "$dir.log")" >&2; return 1; }
}

# The kB of field $2 (VmRSS, VmHWM) in /proc/$1/status.
bench_vm() {
	awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"
}
