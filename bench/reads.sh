#!/usr/bin/env bash
# Reads of a large stored result (issue 36, item 3), two binaries side by
# side in one run: BASE_BIN (a build of 9e1d312, which parses the stored
# result and writes it again for every GET) and the checkout's
# (PMAXENT_BIN: the stored bytes streamed in 1 MiB chunks, the ETag
# checked before any is read, ?view=summary without the posterior).
# bench/synth.py writes RECORDS records over PROFILES profiles (so about
# twice PROFILES distinct QI tuples), `pmaxent anatomize --l 5 --csv`
# buckets them; each binary serves on a free port with a fresh data
# directory, the CSV is uploaded (?sa=disease&group=group) and one analysis
# without knowledge runs to success: its result is the posterior of every
# tuple (about 60 MB with the defaults; the table says its size). Then the
# server is restarted on the same data directory, so that neither the
# upload nor the solve is in its memory, and in REPS rounds alternating
# base, new:
#  - full_s: one GET /v1/analyses/{id} (curl's time_total, to /dev/null),
#  - 304_s: the same GET with the ETag of the full one in If-None-Match
#    (the status must be 304),
#  - summary_s: GET ...?view=summary (new only; 9e1d312 refuses the
#    parameter, 400),
#  - PARALLEL full GETs at once: their wall seconds, the server's VmRSS
#    before, its peak during them (the larger of VmHWM, reset by
#    /proc/PID/clear_refs just before, and VmRSS sampled every 10 ms),
#    and grow = peak - before.
# One row per binary: medians over the rounds (grow_MiB: median and max).
#   git worktree add ../bench-base-9e1d312 9e1d312
#   (cd ../bench-base-9e1d312 && meson setup build --buildtype=release && ninja -C build)
#   BASE_BIN=../bench-base-9e1d312/build/cli/pmaxent bench/reads.sh
#   env: BASE_BIN (required), PMAXENT_BIN, RECORDS (335000),
#        PROFILES (134000), REPS (5), PARALLEL (10)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PMAXENT_BIN:-$root/build/cli/pmaxent}
base_bin=${BASE_BIN:?BASE_BIN: the pmaxent binary to compare with (a build of 9e1d312)}
records=${RECORDS:-335000}
profiles=${PROFILES:-134000}
reps=${REPS:-5}
parallel=${PARALLEL:-10}

. "$root/bench/common.sh"
bench_setup
declare -A pid url_of ans
trap 'for p in "${pid[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait; rm -rf "$work"' EXIT
bench_header "RECORDS=$records PROFILES=$profiles REPS=$reps PARALLEL=$parallel"
echo "# base $base_bin: $("$base_bin" --version 2>&1 | head -1)"

python3 "$root/bench/synth.py" --records "$records" --profiles "$profiles" --seed 1 \
	>"$work/raw.csv" 2>"$work/synth.log"
"$bin" anatomize "$work/raw.csv" --sa disease --l 5 --seed 1 --csv \
	--qi sex,race,marital,age,zip,occupation >"$work/data.csv"
rm "$work/raw.csv"

field() {
	python3 -c "import json, sys
t = sys.stdin.read()
try:
    print(json.loads(t)$1)
except ValueError:
    sys.exit('bench/reads.sh: not JSON: ' + t[:300])"
}
start() {
	local b=$bin
	[ "$1" = base ] && b=$base_bin
	bench_serve "$b" "$work/$1"
	pid[$1]=$serve_pid
	url_of[$1]=$url
}
for v in base new; do
	start $v
	u=${url_of[$v]}
	ds=$(curl -s -X POST "$u/v1/datasets?sa=disease&group=group&name=synth" \
		-H 'Content-Type: text/csv' --data-binary @"$work/data.csv" | field '["id"]')
	an=$(curl -s -X POST "$u/v1/datasets/$ds/analyses" -H 'Content-Type: application/json' \
		-d '{}' | field '["id"]')
	q=
	[ $v = base ] || q='?view=summary' # 9e1d312: 400 for the parameter
	while :; do
		s=$(curl -s "$u/v1/analyses/$an$q" | field '["status"]')
		case $s in queued | running) sleep 0.2 ;; succeeded) break ;;
		*) echo "bench/reads.sh: $v: analysis $an $s" >&2; exit 1 ;; esac
	done
	ans[$v]=$an
	kill -TERM "${pid[$v]}"
	wait "${pid[$v]}" || true
	start $v
	echo "# $v: analysis $an, $(curl -sf "${url_of[$v]}/v1/analyses/$an" | wc -c) bytes;" \
		"?view=summary $(curl -s "${url_of[$v]}/v1/analyses/$an?view=summary" | wc -c) bytes;" \
		"server VmRSS $(($(bench_vm "${pid[$v]}" VmRSS) / 1024)) MiB after the restart"
done

# the largest VmRSS (kB) of pid $1 every 10 ms until the file $2 exists
sampler() {
	python3 - "$1" "$2" <<'PY'
import os, sys, time
pid, stop = sys.argv[1:]
peak = 0
while not os.path.exists(stop):
    for line in open("/proc/%s/status" % pid):
        if line.startswith("VmRSS:"):
            peak = max(peak, int(line.split()[1]))
    time.sleep(0.01)
print(peak)
PY
}

# one round of binary $1 (round $2): appends
# "binary round full_s 304_s summary_s par_s before_kB peak_kB"
round() {
	local v=$1 p=${pid[$1]} u=${url_of[$1]}/v1/analyses/${ans[$1]} full n304 code summ par before hwm samp t0 i
	full=$(curl -sf -D "$work/h" -o /dev/null -w '%{time_total}' "$u")
	etag=$(grep -i '^etag:' "$work/h" | cut -d' ' -f2- | tr -d '\r')
	read -r code n304 < <(curl -s -H "If-None-Match: $etag" -o /dev/null -w '%{http_code} %{time_total}\n' "$u")
	[ "$code" = 304 ] || { echo "bench/reads.sh: $v: If-None-Match $etag gave $code" >&2; exit 1; }
	summ=-
	[ "$v" = base ] || summ=$(curl -sf -o /dev/null -w '%{time_total}' "$u?view=summary")
	echo 5 >"/proc/$p/clear_refs"
	before=$(bench_vm "$p" VmRSS)
	rm -f "$work/stop"
	sampler "$p" "$work/stop" >"$work/sampled" &
	local sp=$!
	t0=$(date +%s.%N)
	for i in $(seq "$parallel"); do curl -sf -o /dev/null "$u" & done
	for i in $(seq "$parallel"); do wait -n; done
	par=$(echo "$(date +%s.%N) - $t0" | bc)
	hwm=$(bench_vm "$p" VmHWM)
	touch "$work/stop"
	wait "$sp"
	samp=$(cat "$work/sampled")
	echo "$v $2 $full $n304 $summ $par $before $((hwm > samp ? hwm : samp))" >>"$work/rows"
}
for r in $(seq "$reps"); do
	round base "$r"
	round new "$r"
done

python3 - "$work/rows" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print("%-6s %4s %8s %9s %9s %7s %10s %8s %8s %8s" % ("binary", "reps", "full_s", "304_ms",
      "summary_s", "par_s", "before_MiB", "peak_MiB", "grow_MiB", "grow_max"))
med = {}
for v in ("base", "new"):
    rs = [r for r in rows if r[0] == v]
    m = lambda i: statistics.median(float(r[i]) for r in rs)
    grow = [(int(r[7]) - int(r[6])) / 1024 for r in rs]
    summ = "%9.3f" % m(4) if rs[0][4] != "-" else "%9s" % "-"
    med[v] = m(2)
    print("%-6s %4d %8.3f %9.1f %s %7.2f %10.0f %8.0f %8.0f %8.0f" % (v, len(rs), m(2), 1000 * m(3),
          summ, m(5), m(6) / 1024, m(7) / 1024, statistics.median(grow), max(grow)))
PY
