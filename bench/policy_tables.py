#!/usr/bin/env python3
"""Markdown tables and an ASCII plot for docs/policy.md from `deltaserve replay --json` output.

    deltaserve replay --preset policy-k3-b300 --json > policy.json
    python3 bench/policy_tables.py policy.json
    python3 bench/policy_tables.py --grid bench-out/policy [--svg DIR] [--csv]

Prints: hit / offline bound / fraction of the bound per policy and concurrency, every metric per
run, and hit rate vs concurrency as ASCII bars. Every fraction is of the run's own offline bound.
--grid reads the cells of bench/policy_grid.sh instead (see policy_grid_tables.py).
"""
import json
import sys

import policy_grid_tables


def label_of(r):
    return r["label"].split("/")[0] if "/" in r["label"] else r["label"]


def main(path):
    runs = json.load(open(path))["runs"]
    labels, concs = [], sorted({r["concurrency"] for r in runs})
    by = {}
    for r in runs:
        lab = label_of(r)
        if lab not in labels:
            labels.append(lab)
        by[(lab, r["concurrency"])] = r
    pct = lambda x: f"{100 * x:.1f}"
    print("| policy | " + " | ".join(f"c{c} hit / bound / frac" for c in concs) + " |")
    print("|---|" + "---|" * len(concs))
    for lab in labels:
        cells = []
        for c in concs:
            r = by.get((lab, c))
            if not r:
                cells.append("-")
                continue
            b = r["offline_bound_hit_rate"]
            frac = r["realized_hit_rate"] / b if b > 0 else 0
            cells.append(f"{pct(r['realized_hit_rate'])} / {pct(b)} / {frac:.2f}")
        print(f"| {lab} | " + " | ".join(cells) + " |")
    print()
    print("| policy | conc | theo % | bound % | hit % | frac | ckpt B/hit tok | TTFT p50 s | p90 s |"
          " out tok/s/GPU | $/M in | $/M out | requests | preemptions |")
    print("|" + "---|" * 14)
    for c in concs:
        for lab in labels:
            r = by.get((lab, c))
            if not r:
                continue
            b = r["offline_bound_hit_rate"]
            print(f"| {lab} | {c} | {pct(r['theoretical_hit_rate'])} | {pct(b)} | {pct(r['realized_hit_rate'])} | "
                  f"{(r['realized_hit_rate'] / b if b > 0 else 0):.2f} | {r['checkpoint_bytes_per_hit_token']:.0f} | "
                  f"{r['ttft_p50_s']:.2f} | {r['ttft_p90_s']:.2f} | {r['output_tok_s_per_gpu']:.1f} | "
                  f"{r['usd_per_m_input_tokens']:.2f} | {r['usd_per_m_output_tokens']:.2f} | {r['n_requests']} | "
                  f"{r['n_preemptions']} |")
    print()
    print("```")
    print("realized hit rate (%), one bar per policy and concurrency; '|' marks the run's offline bound")
    for c in concs:
        print(f"concurrency {c}")
        for lab in labels:
            r = by.get((lab, c))
            if not r:
                continue
            h, b = r["realized_hit_rate"], r["offline_bound_hit_rate"]
            bar = ["#"] * int(round(50 * h)) + [" "] * (51 - int(round(50 * h)))
            bar[min(50, int(round(50 * b)))] = "|"
            print(f"  {lab:>18} {''.join(bar)} {pct(h)}")
    print("```")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--grid":
        policy_grid_tables.main(sys.argv[2:])
    elif len(sys.argv) == 2:
        main(sys.argv[1])
    else:
        sys.exit(__doc__)
