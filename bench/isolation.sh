#!/usr/bin/env bash
# The cost of process isolation per analysis (issue 36, item 1): two
# binaries side by side in one run, BASE_BIN (a build from before
# isolation, every solve on a worker thread of the server) and the
# checkout's (PMAXENT_BIN, every analysis in the worker process its slot
# keeps across jobs; POST /v1/solve forks one per solve). Both serve at once, each
# on a free port with a fresh data directory. One analysis: the Adult
# dataset (Anatomy, SA occupation, eight QI, l = 5, as bench/http.sh builds
# it) uploaded as dataset JSON, an analysis posted on it, polled every
# POLL_MS ms (a new connection each; the status read from the answer's
# first bytes, the result parsed after the clock stops) to `succeeded`. Two kinds: `mine50`, knowledge
# {"mine": {"positive": 50, "negative": 50}}, and `none`, no knowledge (the
# smallest analysis, so the fixed cost of a fork shows). RUNS rounds, each
# kind on base then new. One row per binary and kind, the medians of
#  - upload_s: from the dataset's POST to `succeeded` seen,
#  - analysis_s: from the analysis's POST to `succeeded` seen,
#  - solve_s: the result's own "seconds" (the solve step),
#  - work_s: the sum of the result's "timings" (load, mine, build, solve:
#    the analysis's own work, wherever it runs),
#  - outside_s: analysis_s - work_s of each run (the queue, the worker
#    process, storing the result, the polls, the last GET's whole result),
# and for new the median over the rounds of its difference from the base
# run just before it (analysis_s and outside_s), also as a share of
# base's median mine50 analysis_s.
#   git worktree add ../bench-base-9e1d312 9e1d312
#   (cd ../bench-base-9e1d312 && meson setup build --buildtype=release && ninja -C build)
#   BASE_BIN=../bench-base-9e1d312/build/cli/pmaxent bench/isolation.sh
#   env: BASE_BIN (required), PMAXENT_BIN, RUNS (7), POLL_MS (20), ADULT_CSV
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PMAXENT_BIN:-$root/build/cli/pmaxent}
base_bin=${BASE_BIN:?BASE_BIN: the pmaxent binary to compare with (a build of 9e1d312)}
csv=${ADULT_CSV:-$root/../shared/data/adult/adult.csv}
runs=${RUNS:-7}
poll_ms=${POLL_MS:-20}

. "$root/bench/common.sh"
bench_setup
pids=()
trap 'for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; wait; rm -rf "$work"' EXIT
bench_header "RUNS=$runs POLL_MS=$poll_ms"
echo "# base $base_bin: $("$base_bin" --version 2>&1 | head -1)"

"$bin" anatomize "$csv" --sa occupation --l 5 --seed 1 \
	--qi age,type_employer,marital,relationship,race,sex,country,education >"$work/adult.json"
bench_serve "$base_bin" "$work/base"
pids+=("$serve_pid")
base_url=$url
bench_serve "$bin" "$work/new"
pids+=("$serve_pid")
new_url=$url

python3 - "$work/adult.json" "$runs" "$base_url" "$new_url" "$poll_ms" <<'PY'
import json, re, statistics, sys, time, urllib.request

data = open(sys.argv[1], "rb").read()
runs = int(sys.argv[2])
urls = {"base": sys.argv[3], "new": sys.argv[4]}
poll = float(sys.argv[5]) / 1000
kinds = {"mine50": {"knowledge": {"mine": {"positive": 50, "negative": 50}}}, "none": {}}

def post(url, body):
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)

def status(url):
    with urllib.request.urlopen(url) as r:
        body = r.read()
    return re.search(rb'"status":\s*"(\w+)"', body[:400]).group(1).decode(), body

def one(v, kind):
    u = urls[v]
    t0 = time.monotonic()
    ds = post(u + "/v1/datasets", data)["id"]
    t1 = time.monotonic()
    an = post(u + "/v1/datasets/%s/analyses" % ds, json.dumps(kinds[kind]).encode())["id"]
    while True:
        st, body = status(u + "/v1/analyses/" + an)
        if st not in ("queued", "running"):
            break
        time.sleep(poll)
    t2 = time.monotonic()
    doc = json.loads(body)
    if doc["status"] != "succeeded":
        sys.exit("bench/isolation.sh: %s %s: analysis %s" % (v, kind, json.dumps(doc)[:500]))
    res = doc["result"]
    work = sum(res["timings"].values())
    return t2 - t0, t2 - t1, res["seconds"], work, res["timings"]

rows = {}
for r in range(runs):
    for kind in kinds:
        for v in ("base", "new"):
            up, an, solve, work, tm = one(v, kind)
            rows.setdefault((v, kind), []).append((up, an, solve, work))
            print("# run %d %-6s %-4s upload_s %.3f analysis_s %.3f solve_s %.4f work_s %.3f %s"
                  % (r + 1, kind, v, up, an, solve, work,
                     " ".join("%s %.3f" % kv for kv in tm.items())), flush=True)

med = {k: [statistics.median(x[i] for x in rs) for i in range(4)]
       + [statistics.median(x[1] - x[3] for x in rs)] for k, rs in rows.items()}
# new minus the base run just before it, round by round
pair = {kind: [(n[1] - b[1], (n[1] - n[3]) - (b[1] - b[3]))
               for b, n in zip(rows["base", kind], rows["new", kind])] for kind in kinds}
ref = med["base", "mine50"][1]
print("%-6s %-6s %4s %9s %10s %8s %7s %9s %11s %10s %s" % ("kind", "binary", "runs", "upload_s",
      "analysis_s", "solve_s", "work_s", "outside_s", "d_analysis", "d_outside",
      "d_analysis/base_mine50"))
for kind in kinds:
    for v in ("base", "new"):
        up, an, solve, work, out = med[v, kind]
        d = ""
        if v == "new":
            da = statistics.median(x[0] for x in pair[kind])
            do = statistics.median(x[1] for x in pair[kind])
            d = "%11.3f %10.3f %.1f%%" % (da, do, 100 * da / ref)
        print("%-6s %-6s %4d %9.3f %10.3f %8.4f %7.3f %9.3f %s" % (kind, v, len(rows[v, kind]),
              up, an, solve, work, out, d))
PY
