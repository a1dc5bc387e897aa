#!/usr/bin/env bash
# HTTP service benchmark, on SQLite and on PostgreSQL side by side in one
# run: for each store, starts `pmaxent serve` on a free loopback port with
# a fresh database (SQLite in a data directory; PostgreSQL from
# scripts/pg-temp), uploads the Adult dataset (Anatomy, SA occupation,
# eight QI, l = 5), and measures
#  - upload-to-result seconds of an analysis with a Top-(K+,K-) bound
#    (K+ = K- = K, all attribute subsets; default K = 1000),
#  - requests per second and latency percentiles of polling
#    GET /v1/analyses/{id} with wrk (16 connections, 2 threads, DURATION
#    seconds) while a long analysis runs (K+ = K- = 5000 with
#    qi_attributes 2 by the full dual: over a minute), so that each poll
#    reads a running analysis's progress,
#  - the server's peak resident memory (/usr/bin/time -v).
# Then one table, a row per store.
#   bench/http.sh [sqlite|postgresql ...]   (default: both)
#   env: K (1000), DURATION (10), PMAXENT_BIN, ADULT_CSV
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PMAXENT_BIN:-$root/build/cli/pmaxent}
csv=${ADULT_CSV:-$root/../shared/data/adult/adult.csv}
k=${K:-1000}
duration=${DURATION:-10}
stores=("$@")
[ ${#stores[@]} -gt 0 ] || stores=(sqlite postgresql)

. "$root/bench/common.sh"
bench_setup
command -v wrk >/dev/null || apt-get install -y -qq wrk >/dev/null
bench_header "K=$k DURATION=$duration"
# PostgreSQL runs as postgres when this runs as root (scripts/pg-temp)
chmod 755 "$work"
server=
stop() {
	# $server is /usr/bin/time; the service is its child
	[ -z "$server" ] || { pkill -TERM -P "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
	server=
}
trap 'stop; "$root/scripts/pg-temp" stop "$work/pg" 2>/dev/null || true; rm -rf "$work"' EXIT

"$bin" anatomize "$csv" --sa occupation --l 5 --seed 1 \
	--qi age,type_employer,marital,relationship,race,sex,country,education >"$work/adult.json"
now() { python3 -c 'import time; print(time.monotonic())'; }
field() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
wait_done() {
	while :; do
		s=$(curl -sf "$base/v1/analyses/$1" | field '["status"]')
		case $s in queued | running) sleep 0.05 ;; *) echo "$s"; return ;; esac
	done
}

# One store: $1 its name, the rest serve's arguments naming it. Appends
# "store upload_s status req_s p50 p99 peak_MiB" to $work/rows.
measure() {
	local name=$1 t0 t1 ds an slow status
	shift
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	base=http://127.0.0.1:$port
	/usr/bin/time -v "$bin" serve --port "$port" --quiet "$@" 2>"$work/$name.log" &
	server=$!
	for _ in $(seq 100); do curl -sf "$base/healthz" >/dev/null && break; sleep 0.1; done
	t0=$(now)
	ds=$(curl -sf -X POST "$base/v1/datasets" -H 'Content-Type: application/json' \
		--data-binary @"$work/adult.json" | field '["id"]')
	an=$(curl -sf -X POST "$base/v1/datasets/$ds/analyses" -H 'Content-Type: application/json' \
		-d "{\"knowledge\": {\"mine\": {\"positive\": $k, \"negative\": $k}}}" | field '["id"]')
	status=$(wait_done "$an")
	t1=$(now)
	# over a minute, so that the polls see it running
	slow=$(curl -sf -X POST "$base/v1/datasets/$ds/analyses" -H 'Content-Type: application/json' \
		-d '{"knowledge": {"mine": {"positive": 5000, "negative": 5000, "qi_attributes": 2}},
		     "solver": {"method": "full-dual"}}' |
		field '["id"]')
	while [ "$(curl -sf "$base/v1/analyses/$slow" | field '["status"]')" = queued ]; do sleep 0.05; done
	# 16 connections: well under the per-address limit (64), which closing
	# connections still count against until the server has let them go
	wrk -t2 -c16 -d"${duration}s" --latency "$base/v1/analyses/$slow" >"$work/$name.wrk"
	echo "# $name: analysis state after polling: $(curl -sf "$base/v1/analyses/$slow" | field '["status"]')"
	stop
	python3 - "$work/$name.wrk" "$work/$name.log" "$name" "$t0" "$t1" "$status" >>"$work/rows" <<'PY'
import re, sys
wrk, log, name, t0, t1, status = sys.argv[1:]
w = open(wrk).read()
def ms(p):
    v, u = re.search(r"^\s*%s%%\s+([\d.]+)(us|ms|s)\s*$" % p, w, re.M).groups()
    return float(v) * {"us": 1e-3, "ms": 1, "s": 1e3}[u]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", w).group(1))
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(log).read()).group(1))
print("%-10s %9.3f %-10s %9.0f %8.2f %8.2f %8.0f" % (name, float(t1) - float(t0), status, rps,
      ms(50), ms(99), rss / 1024))
PY
}

for s in "${stores[@]}"; do
	case $s in
	sqlite) measure sqlite --data-dir "$work/var" ;;
	postgresql) measure postgresql --database "$("$root/scripts/pg-temp" start "$work/pg" pmaxent)" ;;
	*) echo "bench/http.sh: unknown store '$s' (sqlite, postgresql)" >&2; exit 2 ;;
	esac
done
printf '%-10s %9s %-10s %9s %8s %8s %8s\n' store upload_s status get_req_s p50_ms p99_ms peak_MiB
cat "$work/rows"
