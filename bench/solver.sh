#!/usr/bin/env bash
# Solver benchmark, both methods: builds every input once, then for each row
# runs `pmaxent solve --method two-level` and `--method full-dual` RUNS times,
# interleaved run by run (A B A B ...) so machine noise hits both alike, and
# prints one table: median solve seconds (the result's timings.solve), median
# wall clock of the whole process, iterations, max_violation (records),
# estimation_accuracy (nats), peak RSS, the full-dual / two-level ratio of
# solve seconds, and the largest difference between the two methods'
# posteriors; under each row, where each method's solve seconds went
# (the result's solve_phases: forced zeros, iterate, metrics; medians).
# Rows (arguments select groups; default all):
#   adult     Adult, SA occupation (as bench/adult.sh), K+ = K- in 0 50 500 2500,
#             every attribute subset
#   adult-qi  the same dataset, K+ = K- = 250 with qi_attributes 1 and 2
#             (mostly probabilistic rules)
#   paper     the paper's setting: SA education, QI the other seven of
#             adult.sh plus occupation, --set-aside, K+ = K- in 50 500
#   synth     bench/synth.py, SYNTH_RECORDS records in buckets of 5,
#             K+ = K- = SYNTH_K, every attribute subset
#   bench/solver.sh [adult|adult-qi|paper|synth ...]
#   env: RUNS (5), TIMEOUT (900 s per run), SLOW (300: a method whose first
#        run takes longer is not repeated), TOLERANCE (1e-6 records),
#        SYNTH_K (2500), SYNTH_RECORDS (1000000), PMAXENT_BIN, ADULT_CSV,
#        KEEP=1 keeps the work directory (results, timings)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PMAXENT_BIN:-$root/build/cli/pmaxent}
csv=${ADULT_CSV:-$root/../shared/data/adult/adult.csv}
runs=${RUNS:-5}
timeout_s=${TIMEOUT:-900}
slow_s=${SLOW:-300}
tolerance=${TOLERANCE:-1e-6}
synth_k=${SYNTH_K:-2500}
synth_records=${SYNTH_RECORDS:-1000000}
methods=(two-level full-dual)
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(adult adult-qi paper synth)
for g in "${groups[@]}"; do
	case $g in adult | adult-qi | paper | synth) ;;
	*) echo "bench/solver.sh: unknown row group '$g' (adult, adult-qi, paper, synth)" >&2; exit 2 ;;
	esac
done
want() { [[ " ${groups[*]} " == *" $1 "* ]]; }

. "$root/bench/common.sh"
bench_setup

# measure NAME OUT CMD...: runs CMD under /usr/bin/time -v, its stdout to
# OUT and stderr to $work/NAME.err; prints "seconds peak_MiB".
measure() {
	local name=$1 out=$2
	shift 2
	/usr/bin/time -v -o "$work/$name.time" "$@" >"$out" 2>"$work/$name.err"
	python3 - "$work/$name.time" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", t).group(1)
s = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall.split(":"))))
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
print(f"{s:.2f} {rss / 1024:.0f}")
PY
}

bench_header "RUNS=$runs TIMEOUT=$timeout_s SLOW=$slow_s tolerance $tolerance"

# ---- inputs, built once ----------------------------------------------------
qi_adult=age,type_employer,marital,relationship,race,sex,country,education
qi_paper=age,type_employer,marital,relationship,race,sex,country,occupation
if want adult || want adult-qi; then
	"$bin" anatomize "$csv" --sa occupation --l 5 --seed 1 --qi $qi_adult >"$work/adult.json"
fi
if want paper; then
	"$bin" anatomize "$csv" --sa education --l 5 --seed 1 --set-aside --qi $qi_paper \
		>"$work/paper.json" 2>"$work/paper.err"
	echo "# paper: $(cat "$work/paper.err")"
fi
if want synth; then
	read -r gen_s gen_mib < <(measure synth-gen "$work/synth.csv" python3 "$root/bench/synth.py" \
		--records "$synth_records" --seed 1)
	echo "# synth: $(tail -1 "$work/synth-gen.err")"
	echo "# synth: generate ${gen_s} s (peak ${gen_mib} MiB), $(du -m "$work/synth.csv" | cut -f1) MB CSV"
	read -r an_s an_mib < <(measure synth-anat "$work/synth.json" "$bin" anatomize \
		"$work/synth.csv" --sa disease --qi sex,race,marital,age,zip,occupation --l 5 --seed 1)
	echo "# synth: anatomize ${an_s} s (peak ${an_mib} MiB), $(du -m "$work/synth.json" | cut -f1) MB dataset JSON"
	rm -f "$work/synth.csv"
fi

# ---- rows: input dataset K qi_attributes ------------------------------------
rows=()
if want adult; then for k in 0 50 500 2500; do rows+=("adult adult $k all"); done; fi
if want adult-qi; then for t in 1 2; do rows+=("adult adult 250 $t"); done; fi
if want paper; then for k in 50 500; do rows+=("paper paper $k all"); done; fi
if want synth; then rows+=("synth-$((synth_records / 1000))k synth $synth_k all"); fi

printf '%-11s %5s %8s %-10s %-13s %4s %9s %9s %10s %13s %19s %9s %8s %13s\n' input K qi_attrs method \
	status runs solve_s whole_s iterations max_violation estimation_accuracy peak_MiB ratio \
	max_post_diff

# One run of one method: result JSON, pmaxent's stderr, /usr/bin/time's
# report and the exit status (124 or 137: the time limit).
run_one() {
	local tag=$1 data=$2 method=$3 rc=0
	/usr/bin/time -v -o "$work/$tag.time" timeout -k 10 "$timeout_s" \
		"$bin" solve "$work/$data.json" "$work/k.json" --method "$method" \
		--tolerance "$tolerance" >"$work/$tag.json" 2>"$work/$tag.err" || rc=$?
	echo "$rc" >"$work/$tag.rc"
}

n=0
for row in "${rows[@]}"; do
	read -r input data k t <<<"$row"
	n=$((n + 1))
	if [ "$t" = all ]; then
		printf '{"mine": {"positive": %d, "negative": %d}}\n' "$k" "$k" >"$work/k.json"
	else
		printf '{"mine": {"positive": %d, "negative": %d, "qi_attributes": %d}}\n' \
			"$k" "$k" "$t" >"$work/k.json"
	fi
	declare -A skip=()
	for r in $(seq "$runs"); do
		for m in "${methods[@]}"; do
			[ -z "${skip[$m]:-}" ] || continue
			echo "# $input K=$k qi=$t $m run $r/$runs" >&2
			start=$(date +%s)
			run_one "row$n.$m.$r" "$data" "$m"
			# A failed run or one slower than SLOW is not repeated.
			if [ "$(cat "$work/row$n.$m.$r.rc")" != 0 ] || [ $(($(date +%s) - start)) -gt "$slow_s" ]; then
				skip[$m]=1
			fi
		done
	done
	unset skip
	python3 - "$work" "row$n" "$runs" "$input" "$k" "$t" "$timeout_s" "${methods[@]}" <<'PY'
import json, math, os, re, statistics, sys

work, tag, runs, inp, k, t, limit = sys.argv[1:8]
methods = sys.argv[8:]
runs, limit = int(runs), float(limit)


def load_run(m, r):
    """One run's figures, or None when it was not run."""
    base = f"{work}/{tag}.{m}.{r}"
    if not os.path.exists(base + ".rc"):
        return None
    rc = int(open(base + ".rc").read().strip() or 1)
    tm = open(base + ".time").read() if os.path.exists(base + ".time") else ""
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", tm)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", tm)
    out = {"rc": rc, "wall": None, "rss": None, "res": None}
    if wall:
        out["wall"] = sum(float(x) * 60 ** i for i, x in enumerate(reversed(wall.group(1).split(":"))))
    if rss:
        out["rss"] = int(rss.group(1)) / 1024
    if rc in (124, 137):
        out["status"] = "timeout"
    elif rc != 0:
        err = open(base + ".err", errors="replace").read().strip().splitlines()
        out["status"] = f"exit-{rc}"
        out["error"] = err[-1] if err else ""
    else:
        try:
            out["res"] = json.load(open(base + ".json"))
            out["status"] = out["res"].get("status", "?")
        except (ValueError, OSError) as e:
            out["status"] = "bad-json"
            out["error"] = str(e)
    return out


def fmt(x, spec, width):
    return f"{'-':>{width}}" if x is None else f"{x:>{width}{spec}}"


med = statistics.median
summary, first, steps = {}, {}, []
for m in methods:
    rs = [x for x in (load_run(m, r) for r in range(1, runs + 1)) if x is not None]
    ok = [x for x in rs if x["res"] is not None]
    bad = [x for x in rs if x["res"] is None]
    status = bad[0]["status"] if bad else "/".join(sorted({x["status"] for x in ok}))
    s = {"status": status, "runs": len(ok), "solve": None, "whole": None, "iter": None,
         "viol": None, "acc": None, "rss": None, "errors": [x.get("error") for x in bad],
         "phases": None}
    if ok:
        res = [x["res"] for x in ok]
        first[m] = res[0]
        steps += [r["timings"] for r in res]
        s["solve"] = med([r["timings"]["solve"] for r in res])
        s["whole"] = med([x["wall"] for x in ok if x["wall"] is not None] or [math.nan])
        s["iter"] = med([r["iterations"] for r in res])
        s["viol"] = max(r["max_violation"] for r in res)
        acc = res[0].get("estimation_accuracy")
        s["acc"] = math.inf if res[0].get("estimation_accuracy_infinite") else acc
        ph = [r["solve_phases"] for r in res if "solve_phases" in r]
        if ph:
            s["phases"] = {x: med([p[x] for p in ph]) for x in ("forced_zeros", "iterate", "metrics")}
    rss = [x["rss"] for x in rs if x["rss"] is not None]
    s["rss"] = max(rss) if rss else None
    if bad and bad[0]["status"] == "timeout":
        s["whole"] = None
    summary[m] = s


def posterior_map(res):
    return {tuple(e["qi"]): e["p"] for e in res.get("posterior", [])}


diff = None
if len(first) == 2:
    a, b = (posterior_map(first[m]) for m in methods)
    diff = 0.0
    for q in a.keys() | b.keys():
        pa, pb = a.get(q, {}), b.get(q, {})
        for s in pa.keys() | pb.keys():
            diff = max(diff, abs(pa.get(s, 0.0) - pb.get(s, 0.0)))

ratio = ""
tl, fd = summary[methods[0]], summary[methods[1]]
if tl["solve"]:
    if fd["solve"] is not None:
        ratio = f"{fd['solve'] / tl['solve']:.1f}"
    elif fd["status"] == "timeout":
        ratio = f">{limit / tl['solve']:.0f}"
for m in methods:
    s = summary[m]
    it = None if s["iter"] is None else f"{s['iter']:g}"
    print(f"{inp:<11} {k:>5} {t:>8} {m:<10} {s['status']:<13} {s['runs']:>4} "
          f"{fmt(s['solve'], '.4f', 9)} {fmt(s['whole'], '.2f', 9)} {fmt(it, '', 10)} "
          f"{fmt(s['viol'], '.3g', 13)} {fmt(s['acc'], '.12f', 19)} {fmt(s['rss'], '.1f', 9)} "
          f"{(ratio if m == methods[0] else ''):>8} {fmt(diff, '.3g', 13)}", flush=True)
    for e in s["errors"]:
        if e:
            print(f"#   {m}: {e}", flush=True)
for m in methods:
    ph, solve = summary[m]["phases"], summary[m]["solve"]
    if ph and solve:
        print(f"#   {m} solve phases, median s: " + ", ".join(
            f"{x} {ph[x]:.4f} ({100 * ph[x] / solve:.0f}%)" for x in ph), flush=True)
if steps:
    print("#   steps, median s over both methods: " + ", ".join(
        f"{x} {med([st[x] for st in steps]):.3f}" for x in ("load", "mine", "build")), flush=True)
PY
done
