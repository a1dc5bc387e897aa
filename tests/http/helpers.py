"""Paths, the pmaxent binary and generated test data for the HTTP suite."""
import json
import os
import random
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
DATA = os.environ.get("PMAXENT_TEST_DATA") or os.path.join(ROOT, "tests", "data")


def pmaxent_bin():
    """PMAXENT_BIN (set by meson test), else build/cli/pmaxent."""
    b = os.environ.get("PMAXENT_BIN") or os.path.join(ROOT, "build", "cli", "pmaxent")
    if not os.access(b, os.X_OK):
        raise RuntimeError("pmaxent binary not found at %s (set PMAXENT_BIN)" % b)
    return b


def data_path(name):
    return os.path.join(DATA, name)


def read_json(name):
    with open(data_path(name), encoding="utf-8") as f:
        return json.load(f)


def read_bytes(name):
    with open(data_path(name), "rb") as f:
        return f.read()


def cli_solve(dataset_path, knowledge=None, args=(), tmpdir=None):
    """Runs `pmaxent solve` and returns (exit code, result JSON or None, stderr).
    knowledge: a file path or a JSON-able object (written to tmpdir)."""
    cmd = [pmaxent_bin(), "solve", dataset_path]
    if knowledge is not None:
        if not isinstance(knowledge, str):
            path = os.path.join(tmpdir, "knowledge-%d.json" % random.randrange(1 << 30))
            with open(path, "w", encoding="utf-8") as f:
                json.dump(knowledge, f)
            knowledge = path
        cmd.append(knowledge)
    cmd += list(args)
    p = subprocess.run(cmd, capture_output=True, timeout=300)
    out = json.loads(p.stdout) if p.returncode == 0 else None
    return p.returncode, out, p.stderr.decode("utf-8", "replace")


def synthetic(groups, seed=7, l=5):
    """A records-form dataset of `groups` buckets of l records with distinct
    SA values (l-diverse by construction); QI values correlate with the SA
    so that mined rules carry information and the solver has work to do.
    groups=40 solves in milliseconds; groups=1000 with 200+200 mined rules
    over pairs of attributes takes tens of seconds (a job to cancel)."""
    r = random.Random(seed)
    jobs = ["job%d" % i for i in range(8)]
    ages = ["20", "30", "40", "50", "60"]
    records = []
    for g in range(groups):
        for s in r.sample(jobs, l):
            k = jobs.index(s)
            age = ages[k % 5] if r.random() < 0.5 else r.choice(ages)
            sex = "M" if (k < 4) == (r.random() < 0.8) else "F"
            race = r.choice("abc")
            zipc = "z%d" % ((k + r.randrange(3)) % 6)
            records.append({"qi": [age, sex, race, zipc], "group": g + 1, "sa": s})
    return {"name": "synthetic-%d" % groups, "qi_attributes": ["age", "sex", "race", "zip"],
            "sa_attribute": "job", "records": records}


def to_csv(ds, group_col="group"):
    """A records-form dataset as the CSV that POST /v1/datasets takes."""
    lines = [",".join(ds["qi_attributes"] + [group_col, ds["sa_attribute"]])]
    for r in ds["records"]:
        lines.append(",".join([str(v) for v in r["qi"]] + [str(r["group"]), str(r["sa"])]))
    return ("\n".join(lines) + "\n").encode("utf-8")


def posterior_map(posterior):
    """[{qi, count, p}] -> {tuple(qi): (count, p)} for order-free comparison."""
    return {tuple(e["qi"]): (e["count"], e["p"]) for e in posterior}
