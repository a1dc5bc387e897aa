#!/usr/bin/env bash
# Sweeps (issue 24's target: Adult's Figure 5, three kinds of 20 points
# each up to K = 2000, under 10 s whole): Adult, SA occupation (as
# bench/adult.sh builds it), `pmaxent sweep` for Figure 5 at T = all and
# T = 2, for Figure 6 (T = 1 .. 8, K = 500 and 2000, mixed) and, with
# GRID=1, the grid around them: positive and mixed, K = 250 .. 5000 by
# 250, at each T = 1 .. 4. Per row the median over RUNS of the whole
# process, the sum and the slowest of the points' solves, and the peak
# RSS. With BASE_BIN, each row runs that binary too, in turn with this
# one (run by run: a noisy machine slows both alike), and the ratio of
# the medians (base / this).
#   bench/sweep.sh
#   env: RUNS (3), GRID (0), PMAXENT_BIN, BASE_BIN, ADULT_CSV
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PMAXENT_BIN:-$root/build/cli/pmaxent}
base=${BASE_BIN:-}
csv=${ADULT_CSV:-$root/../shared/data/adult/adult.csv}
runs=${RUNS:-3}

. "$root/bench/common.sh"
bench_setup
bench_header "RUNS=$runs${base:+, BASE_BIN=$base}"
"$bin" anatomize "$csv" --sa occupation --l 5 --seed 1 \
	--qi age,type_employer,marital,relationship,race,sex,country,education >"$work/adult.json"

# One binary's runs of one row: $work/$tag.$r.{json,time}.
one() {
	local tag=$1 b=$2 r=$3
	shift 3
	/usr/bin/time -f '%e %M' -o "$work/$tag.$r.time" "$b" sweep "$work/adult.json" "$@" \
		>"$work/$tag.$r.json" 2>/dev/null
}

printf '%-30s %6s %8s %8s %10s %8s%s\n' sweep points whole_s solves_s slowest_s peak_MiB \
	"${base:+   base_whole_s ratio}"
row() {
	local name=$1
	shift
	for r in $(seq "$runs"); do
		one new "$bin" "$r" "$@"
		[ -z "$base" ] || one base "$base" "$r" "$@"
	done
	python3 - "$work" "$runs" "$name" "${base:+1}" <<'PY'
import json, statistics, sys
work, runs, name, with_base = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
def medians(tag):
    res = [json.load(open(f"{work}/{tag}.{r}.json")) for r in range(1, runs + 1)]
    times = [open(f"{work}/{tag}.{r}.time").read().split() for r in range(1, runs + 1)]
    pts = res[0]["points"]
    return (len(pts), statistics.median(float(t[0]) for t in times),
            statistics.median(sum(p["seconds"] for p in x["points"]) for x in res),
            max(p["seconds"] for p in pts), max(int(t[1]) for t in times) // 1024)
n, whole, solves, slowest, peak = medians("new")
line = "%-30s %6d %8.2f %8.2f %10.3f %8d" % (name, n, whole, solves, slowest, peak)
if with_base:
    b = medians("base")
    line += "   %12.2f %5.2f" % (b[1], b[1] / whole)
print(line)
PY
}
k20=$(seq -s, 100 100 2000)
row "figure 5, T = all" --kind positive,negative,mixed --k "$k20"
row "figure 5, T = 2" --kind positive,negative,mixed --k "$k20" --qi-attributes 2
row "figure 6, T = 1..8, mixed" --kind mixed --k 500,2000 --qi-attributes 1,2,3,4,5,6,7,8
if [ "${GRID:-0}" = 1 ]; then
	k5=$(seq -s, 250 250 5000)
	for t in 1 2 3 4; do
		row "grid, T = $t, K = 250..5000" --kind positive,mixed --k "$k5" --qi-attributes "$t"
	done
fi
