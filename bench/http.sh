#!/usr/bin/env bash
# HTTP service benchmark: starts `pmaxent serve` on a free loopback port
# with a fresh data directory, uploads the Adult dataset (Anatomy, SA
# occupation, eight QI, l = 5), and measures
#  - upload-to-result seconds of an analysis with a Top-(K+,K-) bound
#    (K+ = K- = K, all attribute subsets; default K = 1000),
#  - requests per second and latency percentiles of polling
#    GET /v1/analyses/{id} with wrk (16 connections, 2 threads, DURATION
#    seconds) while a long analysis runs (K+ = K- = 5000 with
#    qi_attributes 2: the slowest cell of bench/grid.sh),
#  - the server's peak resident memory (/usr/bin/time -v).
#   bench/http.sh            env: K (1000), DURATION (10), PMAXENT_BIN, ADULT_CSV
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PMAXENT_BIN:-$root/build/cli/pmaxent}
csv=${ADULT_CSV:-$root/../shared/data/adult/adult.csv}
k=${K:-1000}
duration=${DURATION:-10}

"$root/scripts/deps"
command -v wrk >/dev/null || { apt-get install -y -qq wrk >/dev/null || sudo apt-get install -y -qq wrk; }
[ -x "$bin" ] || { [ -f "$root/build/build.ninja" ] || meson setup "$root/build"; ninja -C "$root/build"; }
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
base=http://127.0.0.1:$port
/usr/bin/time -v "$bin" serve --port "$port" --data-dir "$work/var" 2>"$work/server.log" &
server=$!
# $server is /usr/bin/time; the service is its child
stop() { pkill -TERM -P "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
trap 'stop; rm -rf "$work"' EXIT
for _ in $(seq 100); do curl -sf "$base/healthz" >/dev/null && break; sleep 0.1; done

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

t0=$(now)
ds=$(curl -sf -X POST "$base/v1/datasets" -H 'Content-Type: application/json' \
	--data-binary @"$work/adult.json" | field '["id"]')
an=$(curl -sf -X POST "$base/v1/datasets/$ds/analyses" -H 'Content-Type: application/json' \
	-d "{\"knowledge\": {\"mine\": {\"positive\": $k, \"negative\": $k}}}" | field '["id"]')
status=$(wait_done "$an")
t1=$(now)
acc=$(curl -sf "$base/v1/analyses/$an" | field '["result"]["estimation_accuracy"]')
echo "upload-to-result (K+ = K- = $k): $(python3 -c "print(f'{$t1 - $t0:.3f}')") s, $status, accuracy $acc"

# the slowest knowledge bound of bench/grid.sh (tens of seconds), so that
# the polls see it running
slow=$(curl -sf -X POST "$base/v1/datasets/$ds/analyses" -H 'Content-Type: application/json' \
	-d '{"knowledge": {"mine": {"positive": 5000, "negative": 5000, "qi_attributes": 2}}}' |
	field '["id"]')
while [ "$(curl -sf "$base/v1/analyses/$slow" | field '["status"]')" = queued ]; do sleep 0.05; done
echo "polling GET /v1/analyses/{id} while analysis $slow runs:"
# 16 connections: well under the per-address limit (64), which closing
# connections still count against until the server has let them go
wrk -t2 -c16 -d"${duration}s" --latency "$base/v1/analyses/$slow" | sed -n '/Latency Distribution/,$p'
echo "analysis state after polling: $(curl -sf "$base/v1/analyses/$slow" | field '["status"]')"
stop
echo "server peak RSS: $(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/server.log") KiB"
