#!/usr/bin/env bash
# Adult benchmark (engine): builds the Adult dataset with Anatomy (SA
# occupation; QI age, type_employer, marital, relationship, race, sex,
# country, education; l = 5), then for K+ = K- in {0, 50, 500} (all
# attribute subsets) runs `pmaxent solve` RUNS times and prints the median
# mining and solve seconds, iterations, max_violation (records),
# estimation_accuracy (nats) and peak RSS (/usr/bin/time -v).
#   bench/adult.sh [K ...]       env: RUNS (default 5), PMAXENT_BIN, ADULT_CSV
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PMAXENT_BIN:-$root/build/cli/pmaxent}
csv=${ADULT_CSV:-$root/../shared/data/adult/adult.csv}
runs=${RUNS:-5}
ks=("$@")
[ ${#ks[@]} -gt 0 ] || ks=(0 50 500)

"$root/scripts/deps"
if [ ! -x "$bin" ]; then
	[ -f "$root/build/build.ninja" ] || meson setup "$root/build"
	ninja -C "$root/build"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$bin" anatomize "$csv" --sa occupation --l 5 --seed 1 \
	--qi age,type_employer,marital,relationship,race,sex,country,education >"$work/adult.json"

printf '%-6s %6s %9s %9s %10s %12s %12s %10s %10s\n' K rules mine_s solve_s iterations \
	max_violation accuracy baseline peak_MiB
for k in "${ks[@]}"; do
	printf '{"mine": {"positive": %d, "negative": %d}}\n' "$k" "$k" >"$work/k.json"
	for r in $(seq "$runs"); do
		/usr/bin/time -v "$bin" solve "$work/adult.json" "$work/k.json" \
			>"$work/result.$r.json" 2>"$work/time.$r.txt"
	done
	python3 - "$work" "$runs" "$k" <<'PY'
import json, re, statistics, sys
work, runs, k = sys.argv[1], int(sys.argv[2]), sys.argv[3]
res = [json.load(open(f"{work}/result.{r}.json")) for r in range(1, runs + 1)]
rss = [int(re.search(r"Maximum resident set size \(kbytes\): (\d+)",
                     open(f"{work}/time.{r}.txt").read()).group(1)) for r in range(1, runs + 1)]
med = lambda xs: statistics.median(xs)
r0 = res[0]
print(f"{k:<6} {len(r0['rules']):>6} {med([r['timings']['mine'] for r in res]):>9.3f} "
      f"{med([r['seconds'] for r in res]):>9.3f} {r0['iterations']:>10} "
      f"{r0['max_violation']:>12.3g} {r0['estimation_accuracy']:>12.6f} "
      f"{r0['baseline_accuracy']:>10.6f} {max(rss) / 1024:>10.1f}")
PY
done
