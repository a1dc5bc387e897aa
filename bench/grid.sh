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
#   family  seven Adult tables bucketized as bench/ never does (SA
#           occupation, education, marital, age, hr_per_week,
#           relationship; l from 2 to 8; other QI sets and seeds):
#           T in 1..5 and all, K in 250 1000 2500 5000 10000
# With BASE_BIN, each cell also runs that binary right after (same RUNS)
# and prints its solve_s, the ratio new/base, and the largest difference
# of any posterior probability between the two answers.
#   bench/grid.sh [adult|paper|synth|family ...]
#   env: RUNS (3), TIME_LIMIT (60 s per solve), SYNTH_RECORDS (1000000),
#        PMAXENT_BIN, BASE_BIN, ADULT_CSV, KEEP=1 keeps the work directory
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
	case $g in adult | paper | synth | family) ;;
	*) echo "bench/grid.sh: unknown group '$g' (adult, paper, synth, family)" >&2; exit 2 ;;
	esac
done
want() { [[ " ${groups[*]} " == *" $1 "* ]]; }

. "$root/bench/common.sh"
bench_setup
base=${BASE_BIN:-}
bench_header "RUNS=$runs TIME_LIMIT=$limit${base:+ BASE_BIN=$base}"

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

# name: anatomize arguments (SA, l, seed, QI); none is a table bench/ uses
# elsewhere.
family=(
	"occ2: --sa occupation --l 2 --seed 2 --qi age,sex,race,marital,education,country"
	"edu3: --sa education --l 3 --seed 3 --qi age,type_employer,marital,occupation,race,sex"
	"mar2: --sa marital --l 2 --seed 4 --qi age,education,occupation,race,sex,country,hr_per_week"
	"age8: --sa age --l 8 --seed 5 --qi type_employer,education,marital,occupation,relationship,race,sex"
	"hrs6: --sa hr_per_week --l 6 --seed 6 --set-aside --qi age,type_employer,education,occupation,race,sex"
	"occ7: --sa occupation --l 7 --seed 7 --qi age,type_employer,education,marital,relationship,sex,hr_per_week"
	"rel2: --sa relationship --l 2 --seed 8 --qi age,education,occupation,race,country"
)
if want family; then
	for f in "${family[@]}"; do
		# shellcheck disable=SC2086 # the arguments split on purpose
		"$bin" anatomize "$csv" ${f#*:} >"$work/${f%%:*}.json" 2>/dev/null
	done
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
if want family; then
	for f in "${family[@]}"; do
		for t in 1 2 3 4 5 all; do
			for k in 250 1000 2500 5000 10000; do cells+=("${f%%:*} $t $k"); done
		done
	done
fi

printf '%-6s %3s %5s %-13s %8s %8s %8s %8s %8s %5s %13s %8s' input T K status solve_s \
	whole_s zeros_s iter_s metric_s its max_violation peak_MiB
[ -z "$base" ] || printf ' %8s %6s %9s' base_s ratio max_dp
echo

# Runs binary $1 RUNS times on the cell: $work/$2N.{json,err,time,wall}.
run_cell() {
	for r in $(seq "$runs"); do
		/usr/bin/time -v -o "$work/$2$r.time" "$1" solve "$work/$input.json" "$work/k.json" \
			--time-limit "$limit" >"$work/$2$r.json" 2>"$work/$2$r.err" || true
		bench_time_fields "$work/$2$r.time" >"$work/$2$r.wall"
	done
}

for cell in "${cells[@]}"; do
	read -r input t k <<<"$cell"
	if [ "$t" = all ]; then
		printf '{"mine": {"positive": %d, "negative": %d}}\n' "$k" "$k" >"$work/k.json"
	else
		printf '{"mine": {"positive": %d, "negative": %d, "qi_attributes": %d}}\n' \
			"$k" "$k" "$t" >"$work/k.json"
	fi
	run_cell "$bin" n
	[ -z "$base" ] || run_cell "$base" b
	python3 - "$work" "$runs" "$input" "$t" "$k" "${base:+1}" <<'PY'
import json, statistics, sys
work, runs, inp, t, k, with_base = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]

def load(tag):
    res, wall, rss = [], [], []
    for r in range(1, runs + 1):
        w, m = open(f"{work}/{tag}{r}.wall").read().split()  # bench_time_fields
        wall.append(float(w))
        rss.append(float(m))
        try:
            res.append(json.load(open(f"{work}/{tag}{r}.json")))
        except ValueError:
            return None, f"error: {open(f'{work}/{tag}{r}.err').read()[:100]}", 0
    return res, wall, rss

def max_dp(a, b):
    pa = {tuple(x["qi"]): x["p"] for x in a.get("posterior", [])}
    d = 0.0
    for x in b.get("posterior", []):
        p = pa.get(tuple(x["qi"]), {})
        for s, v in x["p"].items():
            d = max(d, abs(v - p.get(s, 0.0)))
    return d

res, wall, rss = load("n")
if res is None:
    print(f"{inp:<6} {t:>3} {k:>5} {wall}")
    sys.exit(0)
med = lambda rs, f: statistics.median(f(d) for d in rs)
ph = lambda key: med(res, lambda d: d["solve_phases"][key])
last = res[-1]
status = "converged" if last["status"] == "converged" else last.get("reason", "not_conv")[:13]
solve = med(res, lambda d: d["seconds"])
line = (f"{inp:<6} {t:>3} {k:>5} {status:<13} {solve:8.3f} "
        f"{statistics.median(wall):8.2f} {ph('forced_zeros'):8.3f} {ph('iterate'):8.3f} "
        f"{ph('metrics'):8.3f} {last['iterations']:5d} {last['max_violation']:13.3g} {max(rss):8.0f}")
if with_base:
    bres, bwall, _ = load("b")
    if bres is None:
        line += f" base {bwall}"
    else:
        bsolve = med(bres, lambda d: d["seconds"])
        line += (f" {bsolve:8.3f} {solve / max(bsolve, 1e-3):6.2f} "
                 f"{max_dp(last, bres[-1]):9.2g}")
print(line, flush=True)
PY
done
