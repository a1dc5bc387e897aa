#!/usr/bin/env bash
# A large table through the service (issue 25): bench/synth.py writes
# RECORDS records, `pmaxent anatomize --l 5 --csv` buckets them into a CSV
# with a group column, and `pmaxent upload` streams it to a `pmaxent
# serve` (SQLite in the work directory; DB=pg: a throwaway PostgreSQL by
# scripts/pg-temp). Then a second serve (a fresh process: the dataset
# cache empty) runs one analysis on it with Top-(K, K) mined knowledge.
# Prints one row per phase: wall seconds, the server's peak RSS
# (/usr/bin/time -v of each serve), the database's size after the upload,
# and for the analysis the seconds its cache miss spent reading the
# dataset from the store (/metrics pmaxent_dataset_cache_load_seconds_total)
# beside the result's own seconds.
#   bench/upload.sh
#   env: RECORDS (10000000), K (5000), DB (sqlite | pg), PMAXENT_BIN,
#        KEEP=1 keeps the work directory
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PMAXENT_BIN:-$root/build/cli/pmaxent}
records=${RECORDS:-10000000}
k=${K:-5000}
db=${DB:-sqlite}

. "$root/bench/common.sh"
bench_setup
bench_header "RECORDS=$records K=$k DB=$db"

/usr/bin/time -v -o "$work/synth.time" python3 "$root/bench/synth.py" --records "$records" \
	--seed 1 >"$work/raw.csv" 2>/dev/null
/usr/bin/time -v -o "$work/anat.time" "$bin" anatomize "$work/raw.csv" --sa disease \
	--qi sex,race,marital,age,zip,occupation --l 5 --seed 1 --csv >"$work/big.csv"
rm -f "$work/raw.csv"
csv_mb=$(python3 -c "import os,sys; print(round(os.path.getsize(sys.argv[1]) / 1e6))" "$work/big.csv")
echo "# synth.py: $(bench_time_fields "$work/synth.time" | sed 's/ / s, peak /') MiB;" \
	"anatomize --csv: $(bench_time_fields "$work/anat.time" | sed 's/ / s, peak /') MiB; CSV $csv_mb MB"

where=$work/data
if [ "$db" = pg ]; then
	# a directory of its own under /tmp: the server runs as postgres,
	# which the work directory (private) does not let through
	pgdir=$(mktemp -d /tmp/pmaxent_bench_pg.XXXXXX)
	trap '"$root/scripts/pg-temp" stop "$pgdir" >/dev/null 2>&1 || true; rm -rf "$pgdir" "$work"' EXIT
	mapfile -t uris < <("$root/scripts/pg-temp" start "$pgdir" --fast bench)
	where=${uris[0]}
fi

# serve NAME: a `pmaxent serve` on a free port under /usr/bin/time -v;
# sets pid and url.
serve() {
	local log=$work/$1.log
	/usr/bin/time -v -o "$work/$1.time" "$bin" serve --port 0 --quiet --data-dir "$work/data" \
		$([ "$db" = pg ] && echo --database "$where") 2>"$log" &
	pid=$!
	for _ in $(seq 600); do grep -qs "listening on" "$log" && break; sleep 0.1; done
	url=$(grep -o 'http://[^ ]*' "$log")
}
# the serve under time, so that time writes its figures
stop() {
	kill -TERM "$(pgrep -P "$pid")"
	wait "$pid" || true
}

db_mb() {
	if [ "$db" = pg ]; then
		local psql
		psql=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/psql
		"$psql" "$where" -Atc "SELECT pg_database_size(current_database()) / 1000000"
	else
		du -sm --apparent-size "$work/data" | cut -f1
	fi
}

printf '%-9s %9s %9s %8s %9s %s\n' phase wall_s peak_MiB db_MB load_s note
serve upload
/usr/bin/time -f '%e' -o "$work/client.time" "$bin" upload "$work/big.csv" --server "$url" \
	--sa disease --group group --name "synth-$records" >"$work/summary.json" 2>"$work/progress.txt"
stop
id=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['id'])" "$work/summary.json")
read -r wall peak < <(bench_time_fields "$work/upload.time")
printf '%-9s %9s %9s %8s %9s %s\n' upload "$(cat "$work/client.time")" "$peak" "$(db_mb)" - \
	"$csv_mb MB of CSV; $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['records'], 'records,', d['groups'], 'groups')" "$work/summary.json")"

serve analysis
python3 - "$url" "$id" "$k" >"$work/analysis.txt" <<'PY'
import json, sys, time, urllib.request
url, ds, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
body = json.dumps({"knowledge": {"mine": {"positive": k, "negative": k}}}).encode()
req = urllib.request.Request(url + "/v1/datasets/%s/analyses" % ds, data=body,
                             headers={"Content-Type": "application/json"})
t0 = time.monotonic()
an = json.load(urllib.request.urlopen(req))["id"]
while True:
    a = json.load(urllib.request.urlopen(url + "/v1/analyses/" + an))
    if a["status"] not in ("queued", "running"):
        break
    time.sleep(0.5)
wall = time.monotonic() - t0
metrics = urllib.request.urlopen(url + "/metrics").read().decode()
load = [l.split()[1] for l in metrics.splitlines()
        if l.startswith("pmaxent_dataset_cache_load_seconds_total ")][0]
r = a.get("result", {})
print("%.1f %.2f %s status %s, solve %.1f s, %s iterations, accuracy %s" % (
    wall, float(load), a["status"], r.get("status"), r.get("seconds", 0), r.get("iterations"),
    r.get("estimation_accuracy")))
PY
stop
read -r wall load note <"$work/analysis.txt"
read -r _ peak < <(bench_time_fields "$work/analysis.time")
printf '%-9s %9s %9s %8s %9s %s\n' analysis "$wall" "$peak" - "$load" "$note"
