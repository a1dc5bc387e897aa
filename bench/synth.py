#!/usr/bin/env python3
"""Synthetic microdata for the solver benchmark (bench/solver.sh).

Prints a raw CSV table (header: sex,race,marital,age,zip,occupation,disease)
that `pmaxent anatomize --sa disease --qi sex,race,marital,age,zip,occupation
--l 5` bucketizes into groups of 5 records. Deterministic for a given --seed
(Python's random.Random, whose sequence is stable across CPython 3 versions).

Design, and why:
- QI: sex (2 values), race (4), marital (5) have small domains; age (60),
  zip (100) and occupation (30) have 20-100 values.
- Records come from --profiles "profiles" (a full tuple of race, marital,
  age, zip, occupation) times an independent sex, so the table has a few
  thousand distinct QI tuples of a few hundred records each. Dense tuples
  matter: Top-(K+, K-) mining over every attribute subset ranks confidence
  first, and a sparse table (most tuples 1-10 records) has hundreds of
  thousands of antecedents missing some disease, which would make every top
  negative rule deterministic (confidence 1), as on Adult.
- disease (30 values) depends on sex, the age band and the occupation's
  sector through a log-linear tilt mixed with a fixed base distribution; every
  probability stays above about 1.5%, so in a dense tuple every disease
  occurs and most mined rules are probabilistic.
- --deterministic small planted profiles (12 records each, every record the
  same disease) give rules of confidence exactly 1: positive ones (profile =>
  disease) and negative ones (profile => not the other 29).
- No disease exceeds 1/5 of the records (checked), so the table is
  5-eligible and Anatomy needs no set-aside.

    bench/synth.py --records 1000000 --seed 1 > synth.csv
"""
import argparse
import bisect
import math
import random
import sys

SEXES = ["F", "M"]
RACES = ["White", "Black", "Asian", "Other"]
MARITAL = ["Never-married", "Married", "Divorced", "Separated", "Widowed"]
AGES = [str(a) for a in range(18, 78)]
ZIPS = [f"Z{z:03d}" for z in range(100)]
OCCUPATIONS = [f"occ{o:02d}" for o in range(30)]
DISEASES = [
    "Anemia", "Arthritis", "Asthma", "Bronchitis", "Cataract", "Cirrhosis",
    "Colitis", "Dermatitis", "Diabetes", "Eczema", "Epilepsy", "Flu",
    "Gastritis", "Glaucoma", "Gout", "Hepatitis", "Hypertension", "Insomnia",
    "Migraine", "Neuropathy", "Obesity", "Osteoporosis", "Pneumonia",
    "Psoriasis", "Scoliosis", "Sinusitis", "Stroke", "Thyroiditis",
    "Tinnitus", "Ulcer",
]
PLANTED_RECORDS = 12


def marginal(rng, n, skew):
    """Weights of n values, geometric-ish decay with jitter (skew 0: flat)."""
    return [math.exp(-skew * i / n) * rng.uniform(0.7, 1.3) for i in range(n)]


def make_profiles(rng, count):
    """Distinct (race, marital, age, zip, occupation) index tuples."""
    w = [marginal(rng, len(d), s) for d, s in
         ((RACES, 1.5), (MARITAL, 1.0), (AGES, 1.0), (ZIPS, 1.0), (OCCUPATIONS, 2.0))]
    seen, out = set(), []
    while len(out) < count:
        p = tuple(rng.choices(range(len(x)), weights=x)[0] for x in w)
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out, seen


def disease_model(rng):
    """Returns f(sex, age, occupation) -> cumulative weights over DISEASES."""
    base = [rng.uniform(1.0, 3.0) for _ in DISEASES]
    eff_sex = [[rng.gauss(0, 0.8) for _ in DISEASES] for _ in SEXES]
    eff_age = [[rng.gauss(0, 0.8) for _ in DISEASES] for _ in range(6)]
    eff_sector = [[rng.gauss(0, 0.6) for _ in DISEASES] for _ in range(5)]
    cache = {}

    def cum(sex, age, occ):
        key = (sex, age // 10, occ % 5)
        if key not in cache:
            tilt = [math.exp(eff_sex[key[0]][i] + eff_age[key[1]][i] + eff_sector[key[2]][i])
                    for i in range(len(DISEASES))]
            bs, ts = sum(base), sum(tilt)
            n = len(DISEASES)
            p = [0.45 / n + 0.25 * b / bs + 0.3 * t / ts for b, t in zip(base, tilt)]
            acc, c = 0.0, []
            for x in p:
                acc += x
                c.append(acc)
            cache[key] = c
        return cache[key]

    return cum


def row(sex, prof):
    r, m, a, z, o = prof
    return f"{SEXES[sex]},{RACES[r]},{MARITAL[m]},{AGES[a]},{ZIPS[z]},{OCCUPATIONS[o]}"


def generate(args, out):
    rng = random.Random(args.seed)
    profiles, seen = make_profiles(rng, args.profiles)
    cum = disease_model(rng)
    planted = []
    while len(planted) < args.deterministic:
        p = tuple(rng.randrange(len(d)) for d in (RACES, MARITAL, AGES, ZIPS, OCCUPATIONS))
        if p not in seen:
            seen.add(p)
            planted.append((rng.randrange(2), p, rng.randrange(len(DISEASES))))
    n_dense = args.records - PLANTED_RECORDS * len(planted)
    if n_dense < 0:
        sys.exit("synth.py: --records too small for the planted profiles")
    # Profile sizes vary by a factor of about 3, none tiny.
    pw = [rng.uniform(0.5, 1.5) for _ in profiles]
    picks = rng.choices(range(len(profiles)), weights=pw, k=n_dense)
    counts = [0] * len(DISEASES)
    lines = ["sex,race,marital,age,zip,occupation,disease"]
    rand, getbits = rng.random, rng.getrandbits
    for k in picks:
        prof, sex = profiles[k], getbits(1)
        c = cum(sex, prof[2], prof[4])
        s = min(bisect.bisect_right(c, rand() * c[-1]), len(DISEASES) - 1)
        counts[s] += 1
        lines.append(f"{row(sex, prof)},{DISEASES[s]}")
        if len(lines) >= 65536:
            out.write("\n".join(lines) + "\n")
            lines = []
    for sex, prof, s in planted:
        for _ in range(PLANTED_RECORDS):
            counts[s] += 1
            lines.append(f"{row(sex, prof)},{DISEASES[s]}")
    out.write("\n".join(lines) + "\n" if lines else "")
    top = max(counts)
    print(f"synth.py: {args.records} records, {len(profiles)} profiles x 2 sexes "
          f"+ {len(planted)} deterministic, {len(DISEASES)} diseases, most frequent "
          f"{top} ({top / args.records:.1%})", file=sys.stderr)
    if top * 5 > args.records:
        sys.exit("synth.py: not 5-eligible (a disease above 1/5 of the records)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1000000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profiles", type=int, default=500,
                    help="distinct (race, marital, age, zip, occupation) tuples")
    ap.add_argument("--deterministic", type=int, default=1,
                    help=f"planted profiles of {PLANTED_RECORDS} records with one disease")
    args = ap.parse_args()
    if args.records < 1 or args.profiles < 1 or args.deterministic < 0:
        ap.error("--records and --profiles must be positive, --deterministic >= 0")
    generate(args, sys.stdout)


if __name__ == "__main__":
    main()
