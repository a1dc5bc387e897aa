#!/usr/bin/env bash
# The knowledge-bound grid (issue 22): one table of every cell, so that a
# cliff next to the benchmarked rows shows. For each input, each
# qi_attributes T and each K (K+ = K-), `pmaxent solve` RUNS times under a
# time limit (every cell ends: one that runs out says so), and per cell the
# medians of the solve step's seconds (the result's `seconds`), of the
# whole process, and of the phases (forced zeros, iterate, metrics), the
# iterations, max_violation (records), status, and the peak RSS.
# Groups (arguments select them; default adult paper):
#   adult   Adult, SA occupation (as bench/adult.sh): T in 1..8 and all,
#           K in 50 250 1000 2500 5000
#   paper   the paper's setting, SA education (as bench/solver.sh):
#           T in 1 2 3 all, K in 250 1000 2500
#   synth   bench/synth.py, SYNTH_RECORDS records: T in 1 2 all, K = 5000
#   bench/grid.sh [adult|paper|synth ...]
#   env: RUNS (3), TIME_LIMIT (60 s per solve), SYNTH_RECORDS (1000000),
#        PMAXENT_BIN, ADULT_CSV, KEEP=1 keeps the work directory
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PMAXENT_BIN:-$root/build/cli/pmaxent}
csv=${ADULT_CSV:-$root/../shared/data/adult/adult.csv}
runs=${RUNS:-3}
limit=${TIME_LIMIT:-60}
synth_records=${SYNTH_RECORDS:-1000000}
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(adult paper)
for g in "${groups[@]}"; do
	case $g in adult | paper | synth) ;;
	*) echo "bench/grid.sh: unknown group '$g' (adult, paper, synth)" >&2; exit 2 ;;
	esac
done
want() { [[ " ${groups[*]} " == *" $1 "* ]]; }

. "$root/bench/common.sh"
bench_setup
bench_header "RUNS=$runs TIME_LIMIT=$limit"

# ---- inputs, built once ------------------------------------------------------
qi_adult=age,type_employer,marital,relationship,race,sex,country,education
qi_paper=age,type_employer,marital,relationship,race,sex,country,occupation
if want adult; then
	"$bin" anatomize "$csv" --sa occupation --l 5 --seed 1 --qi $qi_adult >"$work/adult.json"
fi
if want paper; then
	"$bin" anatomize "$csv" --sa education --l 5 --seed 1 --set-aside --qi $qi_paper \
		>"$work/paper.json" 2>/dev/null
fi
if want synth; then
	python3 "$root/bench/synth.py" --records "$synth_records" --seed 1 >"$work/synth.csv" \
		2>/dev/null
	"$bin" anatomize "$work/synth.csv" --sa disease --qi sex,race,marital,age,zip,occupation \
		--l 5 --seed 1 >"$work/synth.json"
	rm -f "$work/synth.csv"
fi

# ---- cells: input T K ------------------------------------------------------------
cells=()
if want adult; then
	for t in 1 2 3 4 5 6 7 8 all; do
		for k in 50 250 1000 2500 5000; do cells+=("adult $t $k"); done
	done
fi
if want paper; then
	for t in 1 2 3 all; do
		for k in 250 1000 2500; do cells+=("paper $t $k"); done
	done
fi
if want synth; then for t in 1 2 all; do cells+=("synth $t 5000"); done; fi

printf '%-6s %3s %5s %-13s %8s %8s %8s %8s %8s %5s %13s %8s\n' input T K status solve_s \
	whole_s zeros_s iter_s metric_s its max_violation peak_MiB

for cell in "${cells[@]}"; do
	read -r input t k <<<"$cell"
	if [ "$t" = all ]; then
		printf '{"mine": {"positive": %d, "negative": %d}}\n' "$k" "$k" >"$work/k.json"
	else
		printf '{"mine": {"positive": %d, "negative": %d, "qi_attributes": %d}}\n' \
			"$k" "$k" "$t" >"$work/k.json"
	fi
	for r in $(seq "$runs"); do
		/usr/bin/time -v -o "$work/$r.time" "$bin" solve "$work/$input.json" "$work/k.json" \
			--time-limit "$limit" >"$work/$r.json" 2>"$work/$r.err" || true
		bench_time_fields "$work/$r.time" >"$work/$r.wall"
	done
	python3 - "$work" "$runs" "$input" "$t" "$k" <<'PY'
import json, statistics, sys
work, runs, inp, t, k = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
res, wall, rss = [], [], []
for r in range(1, runs + 1):
    w, m = open(f"{work}/{r}.wall").read().split()  # bench_time_fields
    wall.append(float(w))
    rss.append(float(m))
    try:
        res.append(json.load(open(f"{work}/{r}.json")))
    except ValueError:
        print(f"{inp:<6} {t:>3} {k:>5} error: {open(f'{work}/{r}.err').read()[:100]}")
        sys.exit(0)
med = lambda f: statistics.median(f(d) for d in res)
ph = lambda key: med(lambda d: d["solve_phases"][key])
last = res[-1]
status = "converged" if last["status"] == "converged" else last.get("reason", "not_conv")[:13]
print(f"{inp:<6} {t:>3} {k:>5} {status:<13} {med(lambda d: d['seconds']):8.3f} "
      f"{statistics.median(wall):8.2f} {ph('forced_zeros'):8.3f} {ph('iterate'):8.3f} "
      f"{ph('metrics'):8.3f} {last['iterations']:5d} {last['max_violation']:13.3g} {max(rss):8.0f}")
PY
done
