#!/usr/bin/env bash
# Named people and statements about them (issue 23's target: 100 people
# and 300 statements on 30,162 records in under 1 s): Adult, SA
# occupation (as bench/adult.sh builds it), P people drawn from the
# records (half with their group), 3P statements true of those records,
# in four forms taken in turn: "p does not have s" (value 0), "p has
# their value with probability at least 0.2", "at most two of three
# people have s", "p's value is at least as likely as s" (coefficients
# 1 and -1); every tenth statement relates two values over a QI value
# instead ("among age=A, v at least as likely as w", within 0.05 of the
# truth). Per row the medians over RUNS of the solve step's seconds, of
# the whole process, the iterations, the statements that bind, and the
# peak RSS. A last row adds Top-(250, 250) mined rules (T = 2) to P = 100.
#   bench/people.sh
#   env: RUNS (3), PS ("10 100 1000"), SEED (1), PMAXENT_BIN, ADULT_CSV
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PMAXENT_BIN:-$root/build/cli/pmaxent}
csv=${ADULT_CSV:-$root/../shared/data/adult/adult.csv}
runs=${RUNS:-3}
ps=${PS:-10 100 1000}
seed=${SEED:-1}

. "$root/bench/common.sh"
bench_setup
bench_header "RUNS=$runs SEED=$seed"
"$bin" anatomize "$csv" --sa occupation --l 5 --seed 1 \
	--qi age,type_employer,marital,relationship,race,sex,country,education >"$work/adult.json"

# knowledge.json for P people, 3P statements (and mined rules if asked)
knowledge() {
	python3 - "$work/adult.json" "$1" "$seed" "$2" >"$work/k.json" <<'EOF'
import json, random, sys
ds = json.load(open(sys.argv[1]))
n_people, rng, mined = int(sys.argv[2]), random.Random(int(sys.argv[3])), sys.argv[4] == "1"
recs = ds["records"]
values = sorted({r["sa"] for r in recs})
chosen = rng.sample(range(len(recs)), n_people)
people, truth = [], []
for i, at in enumerate(chosen):
    p = {"name": f"p{i}", "qi": recs[at]["qi"]}
    if i % 2:
        p["group"] = recs[at]["group"]
    people.append(p)
    truth.append(recs[at]["sa"])
def other(v):
    w = rng.choice(values)
    return w if w != v else values[(values.index(v) + 1) % len(values)]
ages = [r["qi"][0] for r in recs]
statements = []
for i in range(3 * n_people):
    a, b, c = (rng.randrange(n_people) for _ in range(3))
    if i % 10 == 9:  # two values among one age, within 0.05 of the truth
        age = rng.choice(ages)
        among = [r["sa"] for r in recs if r["qi"][0] == age]
        v, w = rng.choice(among), rng.choice(values)
        d = (among.count(v) - among.count(w)) / len(among)
        statements.append({"terms": [{"if": {"age": age}, "then": v},
                                     {"if": {"age": age}, "then": w, "coef": -1}],
                           "min": max(-1.0, d - 0.05)})
    elif i % 4 == 0:
        statements.append({"terms": [{"person": f"p{a}", "then": other(truth[a])}], "value": 0})
    elif i % 4 == 1:
        statements.append({"terms": [{"person": f"p{a}", "then": truth[a]}], "min": 0.2})
    elif i % 4 == 2:
        s = rng.choice(values)
        held = sum(truth[x] == s for x in (a, b, c))
        statements.append({"terms": [{"person": f"p{x}", "then": s} for x in (a, b, c)],
                           "max": max(2, held)})
    else:
        statements.append({"terms": [{"person": f"p{a}", "then": truth[a]},
                                     {"person": f"p{a}", "then": other(truth[a]), "coef": -1}],
                           "min": 0})
k = {"individuals": people, "statements": statements}
if mined:
    k["mine"] = {"positive": 250, "negative": 250, "qi_attributes": 2}
json.dump(k, sys.stdout)
EOF
}

printf '%-6s %-10s %-6s %-13s %8s %8s %5s %8s %8s\n' people statements mined status solve_s \
	whole_s its binding peak_MiB
for row in $(for p in $ps; do echo "$p:0"; done) 100:1; do
	p=${row%:*}
	m=${row#*:}
	knowledge "$p" "$m"
	bench_solve "$work/adult.json" "$work/k.json"
	python3 - "$work" "$runs" "$p" "$m" <<'EOF'
import json, statistics, sys
work, runs, p, m = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
res = [json.load(open(f"{work}/{r}.json")) for r in range(1, runs + 1)]
times = [open(f"{work}/{r}.time").read().split() for r in range(1, runs + 1)]
med = lambda xs: statistics.median(xs)
binding = sum(x.get("binding") in ("min", "max") for x in res[0]["statements"])
print("%-6s %-10d %-6s %-13s %8.3f %8.2f %5d %8d %8d" % (
    p, len(res[0]["statements"]), "yes" if m == "1" else "no", res[0]["status"],
    med([r["seconds"] for r in res]), med([float(w[0]) for w in times]),
    res[0]["iterations"], binding, max(int(w[1]) for w in times) // 1024))
EOF
done
