#!/usr/bin/env python3
"""Request latency of `pmaxent serve`, side by side for two binaries.

Starts each binary's `serve` on a free port (one at a time, interleaved
rounds), and times N sequential GET requests of a small resource on a new
connection each (what curl and the dashboards' pollers do), and, where the
server allows it, N on one kept-alive connection. Prints the median and
95th percentile per binary. Usage:
    bench/serve_latency.py BIN_A BIN_B [N] [ROUNDS]
"""
import http.client
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time


def start(binary, data):
    log = open(os.path.join(data, "log"), "w+")
    p = subprocess.Popen([binary, "serve", "--port", "0", "--data-dir", data, "--quiet"],
                         stderr=log, stdout=subprocess.DEVNULL)
    for _ in range(200):
        log.seek(0)
        m = re.search(r"listening on http://[^:]+:(\d+)", log.read())
        if m:
            return p, int(m.group(1))
        time.sleep(0.02)
    raise RuntimeError("no port")


def fresh(port, n):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        c = http.client.HTTPConnection("127.0.0.1", port)
        c.request("GET", "/healthz")
        c.getresponse().read()
        c.close()
        out.append(time.perf_counter() - t)
    return out


def kept(port, n):
    out = []
    c = http.client.HTTPConnection("127.0.0.1", port)
    for _ in range(n):
        t = time.perf_counter()
        c.request("GET", "/healthz")
        r = c.getresponse()
        r.read()
        out.append(time.perf_counter() - t)
        if r.getheader("Connection", "").lower() == "close":
            c.close()
            c = http.client.HTTPConnection("127.0.0.1", port)
    c.close()
    return out


def main():
    bins = sys.argv[1:3]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    res = {(b, k): [] for b in bins for k in ("fresh", "kept")}
    for _ in range(rounds):
        for b in bins:
            with tempfile.TemporaryDirectory() as d:
                p, port = start(b, d)
                res[(b, "fresh")] += fresh(port, n)
                res[(b, "kept")] += kept(port, n)
                p.terminate()
                p.wait()
    for (b, k), v in res.items():
        v.sort()
        print("%-40s %-6s median %.3f ms  p95 %.3f ms  (%d requests)"
              % (b[-40:], k, statistics.median(v) * 1e3, v[int(0.95 * len(v))] * 1e3, len(v)))


if __name__ == "__main__":
    main()
