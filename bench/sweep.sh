#!/usr/bin/env bash
# Sweeps (issue 24's target: Adult's Figure 5, three kinds of 20 points
# each up to K = 2000, under 10 s whole): Adult, SA occupation (as
# bench/adult.sh builds it), `pmaxent sweep` for Figure 5 at T = all and
# T = 2 and for Figure 6 (T = 1 .. 8, K = 500 and 2000, mixed). Per row
# the median over RUNS of the whole process, the slowest point's solve
# and the peak RSS.
#   bench/sweep.sh
#   env: RUNS (3), PMAXENT_BIN, ADULT_CSV
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PMAXENT_BIN:-$root/build/cli/pmaxent}
csv=${ADULT_CSV:-$root/../shared/data/adult/adult.csv}
runs=${RUNS:-3}

. "$root/bench/common.sh"
bench_setup
bench_header "RUNS=$runs"
"$bin" anatomize "$csv" --sa occupation --l 5 --seed 1 \
	--qi age,type_employer,marital,relationship,race,sex,country,education >"$work/adult.json"

k20=$(seq -s, 100 100 2000)
printf '%-28s %6s %8s %10s %8s\n' sweep points whole_s slowest_s peak_MiB
row() {
	local name=$1
	shift
	for r in $(seq "$runs"); do
		/usr/bin/time -f '%e %M' -o "$work/$r.time" "$bin" sweep "$work/adult.json" "$@" \
			>"$work/$r.json" 2>/dev/null
	done
	python3 - "$work" "$runs" "$name" <<'PY'
import json, statistics, sys
work, runs, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
res = [json.load(open(f"{work}/{r}.json")) for r in range(1, runs + 1)]
times = [open(f"{work}/{r}.time").read().split() for r in range(1, runs + 1)]
pts = res[0]["points"]
print("%-28s %6d %8.2f %10.3f %8d" % (
    name, len(pts), statistics.median(float(t[0]) for t in times),
    max(p["seconds"] for p in pts), max(int(t[1]) for t in times) // 1024))
PY
}
row "figure 5, T = all" --kind positive,negative,mixed --k "$k20"
row "figure 5, T = 2" --kind positive,negative,mixed --k "$k20" --qi-attributes 2
row "figure 6, T = 1..8, mixed" --kind mixed --k 500,2000 --qi-attributes 1,2,3,4,5,6,7,8
