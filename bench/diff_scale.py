#!/usr/bin/env python3
"""`flopsprof diff` at scale: 100,000 sibling modules, 100,000 regions, a 10,000-deep chain.

usage: bench/diff_scale.py build/tools/flopsprof [WORK_DIR]

Writes the profiles (the fields the reader needs; a real profile carries ~60 keys a module, which
the parse reads too: about 3x the time) and times the whole command, process start included
(about 0.4 s of it is LibTorch's start-up). Issue 49's bound: each under 2 s. Wall time on a
shared machine moves by 10-20%: read it as an order of magnitude against the quadratic versions
(443 s for the regions, 45 s for the modules before).
"""
import json
import os
import subprocess
import sys
import tempfile
import time


def module(name, depth):
    return {"name": name, "type": "Linear", "depth": depth, "calls": 1, "params": 272,
            "flops": 1584, "macs": 768, "latency_s": 1e-5, "bytes": 1472}


def profile(modules, regions):
    return {"schema_version": 2,
            "summary": {"params": 0, "fwd_flops": 0, "fwd_macs": 0, "fwd_latency_s": 1.0,
                        "fwd_bytes": 0},
            "modules": modules, "ops": [], "regions": regions}


def main():
    cli = sys.argv[1]
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="flopsprof_diff_scale_")
    n = 100000
    root = module("", 0)
    cases = {
        "100,000 sibling modules": profile([root] + [module("m%d" % i, 1) for i in range(n)], []),
        "100,000 regions": profile([root], [
            {"name": "r%d" % i, "windows": 1, "duration_s": 1e-5, "first_window_s": 1e-5,
             "flops": 1, "macs": 1, "bwd_flops": 0, "bytes": 0, "tokens": None}
            for i in range(n)]),
        "10,000-deep chain": profile([root] + [module("m%d" % i, i) for i in range(1, 10001)], []),
    }
    worst = 0.0
    for name, doc in cases.items():
        path = os.path.join(work, name.split()[0].replace(",", "") + "_" + name.split()[1] + ".json")
        with open(path, "w") as f:
            json.dump(doc, f)
        t0 = time.monotonic()
        r = subprocess.run([cli, "diff", path, path], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
        s = time.monotonic() - t0
        worst = max(worst, s)
        print("%-26s %6.2f s  (%d MB a side, exit %d)" % (name, s, os.path.getsize(path) >> 20,
                                                         r.returncode))
        if r.returncode != 0:
            print(r.stderr.decode(), file=sys.stderr)
            return 1
    print("worst %.2f s (bound: 2 s)" % worst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
