#!/usr/bin/env bash
# Tables of 10 million records (issue 25): bench/synth.py writes RECORDS
# records, `pmaxent anatomize --l 5` buckets them (its seconds and peak on
# a comment line), and `pmaxent solve` runs at K+ = K- = K for T = 1, 2
# and all (qi_attributes), RUNS times each under a time limit. Per row
# the medians of the solve step (the result's `seconds`), of the whole
# process, of the steps before it (the result's `timings`: load, mine,
# build) and of its phases (`solve_phases`: forced zeros, iterate,
# metrics, privacy), the iterations, max_violation (records), status, and
# the largest peak RSS. The CSV and the dataset JSON (about 0.4 and 1.8 GB
# at 10M) live in the work directory, removed at exit. At 10M on 2 cores
# the whole script takes about 5 minutes; anatomize runs without the
# memory limit (its peak on its comment line, about 3.6 GB). The table
# is in bench/README.md.
#   bench/big.sh [T ...]        (default: 1 2 all)
#   env: RECORDS (10000000), K (5000), RUNS (1), TIME_LIMIT (300 s per
#        solve), MEM_LIMIT_GB (16: each solve's address space, ulimit -v,
#        so that a row that runs out of memory says so instead of taking
#        a shared machine's memory), PMAXENT_BIN, KEEP=1 keeps the work
#        directory
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PMAXENT_BIN:-$root/build/cli/pmaxent}
records=${RECORDS:-10000000}
k=${K:-5000}
runs=${RUNS:-1}
limit=${TIME_LIMIT:-300}
mem_gb=${MEM_LIMIT_GB:-16}
ts=("$@")
[ ${#ts[@]} -gt 0 ] || ts=(1 2 all)

. "$root/bench/common.sh"
bench_setup
bench_header "RECORDS=$records K=$k RUNS=$runs TIME_LIMIT=$limit MEM_LIMIT_GB=$mem_gb"

/usr/bin/time -v -o "$work/synth.time" python3 "$root/bench/synth.py" --records "$records" \
	--seed 1 >"$work/big.csv" 2>/dev/null
echo "# synth.py: $(bench_time_fields "$work/synth.time" | sed 's/ / s, peak /') MiB"
/usr/bin/time -v -o "$work/anat.time" "$bin" anatomize "$work/big.csv" --sa disease \
	--qi sex,race,marital,age,zip,occupation --l 5 --seed 1 >"$work/big.json"
rm -f "$work/big.csv"
echo "# anatomize: $(bench_time_fields "$work/anat.time" | sed 's/ / s, peak /') MiB, $(du -m "$work/big.json" | cut -f1) MB of JSON"

printf '%3s %5s %-13s %8s %8s %7s %7s %7s %8s %8s %8s %8s %4s %13s %8s\n' T K status solve_s \
	whole_s load_s mine_s build_s zeros_s iter_s metric_s priv_s its max_violation peak_MiB
for t in "${ts[@]}"; do
	if [ "$t" = all ]; then
		printf '{"mine": {"positive": %d, "negative": %d}}\n' "$k" "$k" >"$work/k.json"
	else
		printf '{"mine": {"positive": %d, "negative": %d, "qi_attributes": %d}}\n' \
			"$k" "$k" "$t" >"$work/k.json"
	fi
	for r in $(seq "$runs"); do
		(
			ulimit -v $((mem_gb * 1024 * 1024))
			/usr/bin/time -v -o "$work/$r.time" "$bin" solve "$work/big.json" "$work/k.json" \
				--time-limit "$limit" >"$work/$r.json" 2>"$work/$r.err"
		) || true
		bench_time_fields "$work/$r.time" >"$work/$r.wall"
	done
	python3 - "$work" "$runs" "$t" "$k" <<'PY'
import json, statistics, sys
work, runs, t, k = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
res, wall, rss = [], [], []
for r in range(1, runs + 1):
    w, m = open(f"{work}/{r}.wall").read().split()  # bench_time_fields
    wall.append(float(w))
    rss.append(float(m))
    try:
        res.append(json.load(open(f"{work}/{r}.json")))
    except ValueError:
        err = open(f"{work}/{r}.err").read().strip()[:80]
        print(f"{t:>3} {k:>5} error after {wall[-1]:.1f} s, peak {rss[-1]:.0f} MiB: {err}")
        sys.exit(0)
med = lambda f: statistics.median(f(d) for d in res)
ph = lambda key: med(lambda d: d["solve_phases"].get(key, 0))
st = lambda key: med(lambda d: d["timings"][key])
last = res[-1]
status = "converged" if last["status"] == "converged" else last.get("reason", "not_conv")[:13]
print(f"{t:>3} {k:>5} {status:<13} {med(lambda d: d['seconds']):8.3f} "
      f"{statistics.median(wall):8.2f} {st('load'):7.2f} {st('mine'):7.2f} {st('build'):7.2f} "
      f"{ph('forced_zeros'):8.3f} {ph('iterate'):8.3f} {ph('metrics'):8.3f} {ph('privacy'):8.3f} "
      f"{last['iterations']:4d} {last['max_violation']:13.3g} {max(rss):8.0f}")
PY
done
