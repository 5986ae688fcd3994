#!/usr/bin/env python3
"""Per-kernel time table from `ncu --csv --metrics gpu__time_duration.sum` output (run_device.sh PROFILE=1):
kernels grouped by name (template arguments kept, parameters dropped), sorted by total time.
Usage: ncu_summary.py ncu.csv [more.csv ...]   (one table per file)"""
import csv
import sys
from collections import OrderedDict

UNIT = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6}


def short(name):
    name = name.removeprefix("void ").replace("(anonymous namespace)::", "")
    depth, out = 0, []
    for ch in name:  # drop the parameter list, keep template arguments
        if ch == "(" and depth == 0:
            break
        depth += ch == "<"
        depth -= ch == ">"
        out.append(ch)
    s = "".join(out).replace("ds::cuda::", "")
    return s if len(s) <= 90 else s[:87] + "..."


def table(path):
    with open(path, newline="", errors="replace") as f:
        lines = [l for l in f if l.startswith('"')]
    rows = list(csv.reader(lines))
    if not rows:
        print(f"{path}: no kernels")
        return
    head, rows = rows[0], rows[1:]
    col = {h: i for i, h in enumerate(head)}
    groups = OrderedDict()
    total, n = 0.0, 0
    for r in rows:
        if r[col["Metric Name"]] != "gpu__time_duration.sum":
            continue
        us = float(r[col["Metric Value"]].replace(",", "")) * UNIT.get(r[col["Metric Unit"]], 1.0)
        g = groups.setdefault(short(r[col["Kernel Name"]]), [0, 0.0, r[col["Grid Size"]], r[col["Block Size"]]])
        g[0] += 1
        g[1] += us
        total += us
        n += 1
    print(f"{path}: {n} kernels, {total:.1f} us in all (each kernel alone, no launch gaps)")
    print(f"{'us':>10} {'%':>6} {'count':>6} {'us/each':>9}  {'grid':>14} {'block':>10}  kernel")
    for name, (cnt, us, grid, block) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        print(f"{us:10.1f} {100 * us / total:6.1f} {cnt:6d} {us / cnt:9.2f}  {grid:>14} {block:>10}  {name}")


for p in sys.argv[1:]:
    table(p)
    print()
