#!/usr/bin/env python3
"""Per-kernel time table from `ncu --csv --metrics gpu__time_duration.sum[,dram__bytes_read.sum,
dram__bytes_write.sum]` output (run_device.sh PROFILE=1): kernels grouped by name (template arguments
kept, parameters dropped), sorted by total time. With the DRAM byte metrics and --bw GB/s (the copy
bandwidth of the same run), each group also gets its bytes, its floor (bytes / bw) and time / floor.
--split N: the file holds N profiled steps of equal kernel counts, one after the other (bench_gpu_model
--profile with N variants): one table per step.
Usage: ncu_summary.py [--bw GBPS] [--split N] ncu.csv [more.csv ...]   (one table per file and step)"""
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


def launches(path):
    """launch ID -> [name, grid, block, us, bytes], in launch order."""
    with open(path, newline="", errors="replace") as f:
        lines = [l for l in f if l.startswith('"')]
    rows = list(csv.reader(lines))
    per_launch = OrderedDict()
    if not rows:
        return per_launch
    head, rows = rows[0], rows[1:]
    col = {h: i for i, h in enumerate(head)}
    for r in rows:
        metric, unit = r[col["Metric Name"]], r[col["Metric Unit"]]
        value = float(r[col["Metric Value"]].replace(",", "") or 0)
        k = per_launch.setdefault(r[col["ID"]], [short(r[col["Kernel Name"]]), r[col["Grid Size"]],
                                                 r[col["Block Size"]], 0.0, 0.0])
        if metric == "gpu__time_duration.sum":
            k[3] += value * UNIT.get(unit, 1.0)
        elif metric.startswith("dram__bytes"):
            k[4] += value * BYTES.get(unit, 1.0)
    return per_launch


def table(path, per_launch, bw):
    if not per_launch:
        print(f"{path}: no kernels")
        return
    groups = OrderedDict()
    for name, grid, block, us, nbytes in per_launch.values():
        g = groups.setdefault(name, [0, 0.0, 0.0, grid, block])
        g[0] += 1
        g[1] += us
        g[2] += nbytes
    total = sum(g[1] for g in groups.values())
    total_b = sum(g[2] for g in groups.values())
    floor = lambda b: b / (bw * 1e3) if bw else 0.0  # us
    print(f"{path}: {len(per_launch)} kernels, {total:.1f} us in all (each kernel alone, no launch gaps)"
          + (f"; {total_b / 1e6:.1f} MB of DRAM traffic, floor {floor(total_b):.1f} us at {bw:.0f} GB/s" if bw else ""))
    print(f"{'us':>10} {'%':>6} {'count':>6} {'us/each':>9} {'MB':>9} {'floor us':>9} {'x floor':>8}"
          f"  {'grid':>14} {'block':>10}  kernel")
    for name, (cnt, us, nbytes, grid, block) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        f = floor(nbytes)
        print(f"{us:10.1f} {100 * us / total:6.1f} {cnt:6d} {us / cnt:9.2f} {nbytes / 1e6:9.2f} {f:9.1f} "
              f"{(us / f if f > 0 else 0):8.2f}  {grid:>14} {block:>10}  {name}")


BYTES = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9}
args = sys.argv[1:]
bw, split = 0.0, 1
while args[:1] in (["--bw"], ["--split"]):
    if args[0] == "--bw":
        bw = float(args[1])
    else:
        split = int(args[1])
    args = args[2:]
for p in args:
    ks = list(launches(p).values())
    n = len(ks) // split
    for i in range(split):
        part = ks[i * n:(i + 1) * n] if split > 1 else ks
        table(p if split == 1 else f"{p} step {i + 1} of {split}", OrderedDict(enumerate(part)), bw)
        print()
