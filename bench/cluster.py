#!/usr/bin/env python3
"""Throughput of analyses on one node and on several nodes (issue 25).

Uploads the Adult dataset (SA occupation, eight QI, l = 5) once, then posts
N analyses round-robin over the nodes' URLs, each a Top-(K, K) bound with K
and T cycled over a small grid (so that the mix is neither all tiny nor all
slow), and polls until every analysis has ended (the first analysis a
node runs parses the dataset: one cache miss per node is in the time).
Prints one line:
analyses, seconds from the first POST to the last end, analyses per second,
how many succeeded, and the median and largest seconds from POST to end.

    bench/cluster.py URL [URL ...]   env: DATASET (the JSON), N (60)

bench/cluster.sh starts the configurations side by side and calls this.
"""
import json
import os
import statistics
import sys
import time
import urllib.request

KS = (50, 100, 200, 400)
TS = (1, 2, 3, None)


def call(method, url, body=None, ctype="application/json"):
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", ctype)
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


def knowledge(i):
    mine = {"positive": KS[i % len(KS)], "negative": KS[i % len(KS)]}
    t = TS[(i // len(KS)) % len(TS)]
    if t is not None:
        mine["qi_attributes"] = t
    return {"knowledge": {"mine": mine}}


def main():
    urls = sys.argv[1:]
    n = int(os.environ.get("N", "60"))
    dataset = open(os.environ["DATASET"], "rb").read()
    ds = call("POST", urls[0] + "/v1/datasets", dataset)["id"]
    t0 = time.monotonic()
    posted = {}
    for i in range(n):
        u = urls[i % len(urls)]
        a = call("POST", "%s/v1/datasets/%s/analyses" % (u, ds), knowledge(i))["id"]
        posted[a] = (u, time.monotonic())
    ended, ok = {}, 0
    while len(ended) < n:
        for a, (u, t) in posted.items():
            if a in ended:
                continue
            s = call("GET", "%s/v1/analyses/%s" % (u, a))["status"]
            if s not in ("queued", "running"):
                ended[a] = time.monotonic() - t
                ok += s == "succeeded"
        time.sleep(0.05)
    wall = time.monotonic() - t0
    lat = sorted(ended.values())
    print("%5d %8.2f %8.2f %9d %8.2f %8.2f" % (n, wall, n / wall, ok, statistics.median(lat),
                                              lat[-1]))


if __name__ == "__main__":
    main()
