#!/usr/bin/env bash
# Exact rules against the same rules made vague (issue 23's target):
# Adult, SA occupation (as bench/adult.sh builds it), Top-(K, K) mined
# rules with T QI attributes, each solved as mined (P = c) and with
# "vagueness": E (c - E <= P <= c + E, clipped), side by side in one run.
# Per row the medians over RUNS of the solve step's seconds, of the whole
# process, the iterations, the intervals that bind, and the peak RSS.
#   bench/vagueness.sh
#   env: RUNS (3), K (250), E (0.05), TS ("1 2 3 all"), PMAXENT_BIN, ADULT_CSV
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PMAXENT_BIN:-$root/build/cli/pmaxent}
csv=${ADULT_CSV:-$root/../shared/data/adult/adult.csv}
runs=${RUNS:-3}
k=${K:-250}
e=${E:-0.05}
ts=${TS:-1 2 3 all}

. "$root/bench/common.sh"
bench_setup
bench_header "RUNS=$runs K=$k E=$e"
"$bin" anatomize "$csv" --sa occupation --l 5 --seed 1 \
	--qi age,type_employer,marital,relationship,race,sex,country,education >"$work/adult.json"

printf '%-4s %-6s %-13s %8s %8s %5s %8s %8s\n' T rules status solve_s whole_s its binding peak_MiB
for t in $ts; do
	qi=""
	[ "$t" = all ] || qi=", \"qi_attributes\": $t"
	for kind in exact vague; do
		vague=""
		[ "$kind" = exact ] || vague=", \"vagueness\": $e"
		echo "{\"mine\": {\"positive\": $k, \"negative\": $k$qi$vague}}" >"$work/k.json"
		bench_solve "$work/adult.json" "$work/k.json"
		python3 - "$work" "$runs" "$t" "$kind" <<'EOF'
import json, statistics, sys
work, runs, t, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
res = [json.load(open(f"{work}/{r}.json")) for r in range(1, runs + 1)]
times = [open(f"{work}/{r}.time").read().split() for r in range(1, runs + 1)]
med = lambda xs: statistics.median(xs)
binding = sum(x.get("binding") in ("min", "max") for x in res[0]["rules"])
print("%-4s %-6s %-13s %8.3f %8.2f %5d %8d %8d" % (
    t, kind, res[0]["status"], med([r["seconds"] for r in res]),
    med([float(w[0]) for w in times]), res[0]["iterations"], binding,
    max(int(w[1]) for w in times) // 1024))
EOF
	done
done
