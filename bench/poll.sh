#!/usr/bin/env bash
# Polling throughput with keep-alive (issue 36, item 9), two binaries side
# by side in one run: BASE_BIN (a build of 6f97d4d, from before the gate
# closed every connection after one response) and the checkout's
# (PMAXENT_BIN). Both serve at once, each on a free port with a fresh data
# directory; each stores the paper's Figure 1 table (tests/data/figure1.csv
# as CSV, ?sa=disease&group=group) and runs one analysis to success (the
# knowledge of examples/knowledge.json). Then wrk (THREADS threads,
# CONNECTIONS connections, DURATION s) on
#  - GET /v1/analyses/{id} (the finished analysis, its whole result),
#  - GET /healthz,
#  - GET /v1/analyses/{id}?view=summary, the new binary only (6f97d4d
#    ignores the parameter: 200 with the whole document),
# alternating base, new, base, new (REPS rounds, every target in each).
# One row per binary and target: the median requests/s and the median of
# wrk's mean latency over the rounds, wrk's errors summed (socket errors
# and non-2xx/3xx), and new/base of the medians. `keepalive` says whether
# curl could send a second request on the connection of the first.
#   git worktree add ../bench-base-6f97d4d 6f97d4d
#   (cd ../bench-base-6f97d4d && meson setup build --buildtype=release && ninja -C build)
#   BASE_BIN=../bench-base-6f97d4d/build/cli/pmaxent bench/poll.sh
#   env: BASE_BIN (required), PMAXENT_BIN, REPS (5), DURATION (10),
#        THREADS (2), CONNECTIONS (16)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PMAXENT_BIN:-$root/build/cli/pmaxent}
base_bin=${BASE_BIN:?BASE_BIN: the pmaxent binary to compare with (a build of 6f97d4d)}
reps=${REPS:-5}
duration=${DURATION:-10}
threads=${THREADS:-2}
conns=${CONNECTIONS:-16}

. "$root/bench/common.sh"
bench_setup
command -v wrk >/dev/null || apt-get install -y -qq wrk >/dev/null
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait; rm -rf "$work"' EXIT
bench_header "REPS=$reps DURATION=$duration THREADS=$threads CONNECTIONS=$conns"
echo "# base $base_bin: $("$base_bin" --version 2>&1 | head -1)"

field() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
declare -A urls ans
for v in base new; do
	b=$bin
	[ $v = base ] && b=$base_bin
	bench_serve "$b" "$work/$v"
	pids+=("$serve_pid")
	urls[$v]=$url
	ds=$(curl -sf -X POST "$url/v1/datasets?sa=disease&group=group&name=figure1" \
		-H 'Content-Type: text/csv' --data-binary @"$root/tests/data/figure1.csv" | field '["id"]')
	an=$(curl -sf -X POST "$url/v1/datasets/$ds/analyses" -H 'Content-Type: application/json' \
		-d "{\"knowledge\": $(cat "$root/examples/knowledge.json")}" | field '["id"]')
	while :; do
		s=$(curl -sf "$url/v1/analyses/$an" | field '["status"]')
		case $s in queued | running) sleep 0.05 ;; succeeded) break ;;
		*) echo "bench/poll.sh: $v: analysis $an $s" >&2; exit 1 ;; esac
	done
	ans[$v]=$an
	# a second request on the first's connection, or a new connection
	reuse=$(curl -sv -o /dev/null -o /dev/null "$url/v1/analyses/$an" "$url/v1/analyses/$an" 2>&1 |
		grep -ciE 're-?using (existing )?(http: )?connection' || true)
	echo "$v $([ "$reuse" -gt 0 ] && echo yes || echo no)" >>"$work/keepalive"
	echo "# $v: $url, analysis $an ($(curl -sf "$url/v1/analyses/$an" | wc -c) bytes;" \
		"summary $(curl -s "$url/v1/analyses/$an?view=summary" -o /dev/null -w '%{http_code}'))"
done

# wrk on $2 of binary $1, round $3: appends "binary target round req_s mean_ms errors"
run() {
	local out=$work/wrk.$1.$(echo "$2" | tr -c 'a-z0-9\n' _).$3
	wrk -t"$threads" -c"$conns" -d"${duration}s" "${urls[$1]}$2" >"$out"
	python3 - "$out" "$1" "$2" "$3" >>"$work/rows" <<'PY'
import re, sys
out, v, target, r = sys.argv[1:]
w = open(out).read()
val, unit = re.search(r"^\s*Latency\s+([\d.]+)(us|ms|s)\b", w, re.M).groups()
mean = float(val) * {"us": 1e-3, "ms": 1, "s": 1e3}[unit]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", w).group(1))
err = sum(map(int, re.findall(r"(?:connect|read|write|timeout) (\d+)", w)))
m = re.search(r"Non-2xx or 3xx responses: (\d+)", w)
err += int(m.group(1)) if m else 0
print(v, target, r, rps, mean, err)
PY
}
for r in $(seq "$reps"); do
	for v in base new; do
		run $v "/v1/analyses/${ans[$v]}" "$r"
		run $v /healthz "$r"
		if [ $v = new ]; then run new "/v1/analyses/${ans[new]}?view=summary" "$r"; fi
	done
done

python3 - "$work/rows" "$work/keepalive" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
ka = dict(l.split() for l in open(sys.argv[2]))
def name(t):
    return "healthz" if t == "/healthz" else "analysis?view=summary" if "view=summary" in t else "analysis"
med = {}
for v in ("base", "new"):
    for t in ("analysis", "healthz", "analysis?view=summary"):
        sel = [r for r in rows if r[0] == v and name(r[1]) == t]
        if sel:
            med[v, t] = (statistics.median(float(r[3]) for r in sel),
                         statistics.median(float(r[4]) for r in sel),
                         sum(int(r[5]) for r in sel), len(sel))
print("%-6s %-22s %9s %4s %9s %8s %7s %s" % ("binary", "target", "keepalive", "runs", "req_s",
      "mean_ms", "errors", "new/base req_s"))
for (v, t), (rps, ms, err, n) in med.items():
    ratio = ""
    if v == "new" and ("base", t) in med:
        ratio = "%.2f" % (rps / med["base", t][0])
    elif v == "new":
        ratio = "%.2f of base analysis" % (rps / med["base", "analysis"][0])
    print("%-6s %-22s %9s %4d %9.0f %8.2f %7d %s" % (v, t, ka[v], n, rps, ms, err, ratio))
PY
