#!/usr/bin/env python3
"""Tables, ASCII and SVG plots for docs/policy.md from the cells of bench/policy_grid.sh.

    python3 bench/policy_tables.py --grid OUT            # markdown, one section per slice
    python3 bench/policy_tables.py --grid OUT --csv      # one CSV row per cell
    python3 bench/policy_tables.py --grid OUT --svg DIR  # also DIR/<trace>-<model>-<tiers>.svg
    python3 bench/policy_tables.py --grid OUT --ascii    # also hit rate vs concurrency in ASCII
    python3 bench/policy_tables.py --grid OUT --cost     # wall seconds per run, per slice
    ... --slice claude710/k3/hbm                         # only that slice (repeatable)

A slice is (trace, model, tiers); its rows are the policies, its columns the concurrencies (0 =
the open-loop Mooncake run). Every fraction is of the run's own offline bound. Per slice the
verdict line gives the largest loss of boundary-aware against interval:32768 (vllm-interval) and
the first concurrency where vLLM collapses (emulated vLLM cache below 10 % hit).
"""
import glob
import json
import os
import sys

TRACES = ["claude710", "agentx", "mooncake", "tools"]
MODELS = ["k3", "kimi-linear"]
TIERS = ["hbm", "hbm+dram"]
POLICIES = ["vllm-interval", "vllm-0", "sglang-csl", "marconi", "every-block", "prompt-end",
            "boundary-aware", "boundary-aware:q", "vllm-cache", "sglang-cache"]
CSV_FIELDS = ["realized_hit_rate", "offline_bound_hit_rate", "theoretical_hit_rate",
              "checkpoint_bytes_per_hit_token", "ttft_p50_s", "ttft_p90_s", "output_tok_s_per_gpu",
              "usd_per_m_input_tokens", "usd_per_m_output_tokens", "n_requests", "n_preemptions"]
OURS, ANCHOR, VLLM = "boundary-aware", "vllm-interval", "vllm-cache"


def order(key, seq):
    return seq.index(key) if key in seq else len(seq)


def load(out):
    cells = []
    for path in glob.glob(os.path.join(out, "cells", "*", "*", "*", "*", "c*.json")):
        try:
            c = json.load(open(path))
        except (OSError, ValueError) as e:
            sys.exit(f"policy_grid_tables: {path}: not a cell ({e})")
        for k in ("trace", "model", "tiers", "label", "run"):
            if k not in c:
                sys.exit(f"policy_grid_tables: {path}: no '{k}'")
        c["tiers"] = c["tiers"].replace(",", "+")
        cells.append(c)
    return cells


def slices(cells):
    by = {}
    for c in cells:
        by.setdefault((c["trace"], c["model"], c["tiers"]), {})[(c["label"], c["run"]["concurrency"])] = c
    return sorted(by.items(), key=lambda kv: (order(kv[0][0], TRACES), order(kv[0][1], MODELS),
                                              order(kv[0][2], TIERS)))


def usd(r):
    """$/M input / output, or n/a where the hardware profile has no sourced price (h200)."""
    if r["usd_per_m_input_tokens"] == 0 and r["usd_per_m_output_tokens"] == 0:
        return "n/a"
    return f"{r['usd_per_m_input_tokens']:.2f} / {r['usd_per_m_output_tokens']:.2f}"


def pct(x):
    return f"{100 * x:.1f}"


def frac(r):
    b = r["offline_bound_hit_rate"]
    return r["realized_hit_rate"] / b if b > 0 else 0.0


def verdict(cells, concs):
    """One line: boundary-aware vs interval:32768, and where vLLM collapses."""
    hit = lambda lab, c: cells[(lab, c)]["run"]["realized_hit_rate"] if (lab, c) in cells else None
    parts = []
    diffs = [(hit(OURS, c) - hit(ANCHOR, c), c) for c in concs
             if hit(OURS, c) is not None and hit(ANCHOR, c) is not None]
    if diffs:
        worst, wc = min(diffs)
        best, bc = max(diffs)
        ok = "never loses by > 1 point" if worst >= -0.01 else f"LOSES {100 * -worst:.1f} points at c{wc}"
        parts.append(f"boundary-aware vs interval:32768: {ok} (worst {100 * worst:+.1f} at c{wc}, "
                     f"best {100 * best:+.1f} at c{bc})")
    collapse = [c for c in concs if hit(VLLM, c) is not None and hit(VLLM, c) < 0.10]
    if collapse:
        c = collapse[0]
        ours, bound = hit(OURS, c), cells.get((OURS, c), {}).get("run", {}).get("offline_bound_hit_rate")
        v = hit(VLLM, c)
        s = f"vLLM cache collapses (< 10 %) at c{c}: {pct(v)} %"
        if ours is not None:
            s += f", boundary-aware {pct(ours)} % ({ours / v:.1f}x" if v > 0 else f", boundary-aware {pct(ours)} % ("
            s += f", {100 * (bound - ours):.1f} points under its bound {pct(bound)} %)"
        parts.append(s)
    elif any(hit(VLLM, c) is not None for c in concs):
        parts.append("vLLM cache never below 10 % here")
    return "; ".join(parts)


def table(cells, concs, labels, title, fmt):
    head = ["c%d" % c if c else "open loop" for c in concs]
    print(f"| {title} | " + " | ".join(head) + " |")
    print("|---|" + "---|" * len(concs))
    for lab in labels:
        row = [fmt(cells[(lab, c)]["run"]) if (lab, c) in cells else "-" for c in concs]
        print(f"| {lab} | " + " | ".join(row) + " |")
    print()


def ascii_plot(cells, concs, labels, height=12):
    """Hit rate (y) vs concurrency (x), one letter per policy; '*' where several coincide."""
    marks = {lab: chr(ord("a") + i) for i, lab in enumerate(labels)}
    width = 6
    grid = [[" "] * (width * len(concs)) for _ in range(height + 1)]
    for lab in labels:
        for i, c in enumerate(concs):
            if (lab, c) not in cells:
                continue
            y = round(height * cells[(lab, c)]["run"]["realized_hit_rate"])
            x = i * width + 2
            grid[y][x] = marks[lab] if grid[y][x] in (" ", marks[lab]) else "*"
    print("```")
    print("realized hit rate (%) vs concurrency: " +
          ", ".join(f"{m} {lab}" for lab, m in marks.items()))
    for y in range(height, -1, -1):
        print(f"{100 * y / height:5.0f} |" + "".join(grid[y]).rstrip())
    print("      +" + "-" * (width * len(concs)))
    print("       " + "".join(f"{c:^{width}}" for c in concs).rstrip())
    print("```")


def svg_plot(cells, concs, labels, path, title):
    """Hit rate vs concurrency, one polyline per policy (x evenly spaced per concurrency)."""
    w, h, l, r, t, b = 640, 360, 50, 170, 30, 40
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#000000",
              "#e377c2", "#7f7f7f", "#bcbd22"]
    xs = {c: l + (w - l - r) * (i / max(1, len(concs) - 1)) for i, c in enumerate(concs)}
    ys = lambda v: t + (h - t - b) * (1 - v)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
           f'font-size="11"><rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{l}" y="18" font-size="13">{title}</text>']
    for v in range(0, 101, 20):
        y = ys(v / 100)
        out.append(f'<line x1="{l}" y1="{y:.1f}" x2="{w - r}" y2="{y:.1f}" stroke="#ddd"/>'
                   f'<text x="{l - 6}" y="{y + 4:.1f}" text-anchor="end">{v}%</text>')
    for c, x in xs.items():
        out.append(f'<text x="{x:.1f}" y="{h - b + 16}" text-anchor="middle">{c if c else "open"}</text>')
    out.append(f'<text x="{(l + w - r) / 2:.0f}" y="{h - 8}" text-anchor="middle">concurrency (lanes)</text>')
    for i, lab in enumerate(labels):
        pts = [(xs[c], ys(cells[(lab, c)]["run"]["realized_hit_rate"])) for c in concs if (lab, c) in cells]
        if not pts:
            continue
        col = colors[i % len(colors)]
        width = 3 if lab == OURS else 1.5
        out.append(f'<polyline fill="none" stroke="{col}" stroke-width="{width}" points="' +
                   " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
        out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{col}"/>' for x, y in pts]
        ly = t + 14 * i
        out.append(f'<line x1="{w - r + 10}" y1="{ly}" x2="{w - r + 28}" y2="{ly}" stroke="{col}" '
                   f'stroke-width="{width}"/><text x="{w - r + 32}" y="{ly + 4}">{lab}</text>')
    bpts = [(xs[c], ys(cells[(OURS, c)]["run"]["offline_bound_hit_rate"])) for c in concs if (OURS, c) in cells]
    if bpts:
        out.append('<polyline fill="none" stroke="#000" stroke-dasharray="4,3" points="' +
                   " ".join(f"{x:.1f},{y:.1f}" for x, y in bpts) + '"/>')
        ly = t + 14 * len(labels)
        out.append(f'<line x1="{w - r + 10}" y1="{ly}" x2="{w - r + 28}" y2="{ly}" stroke="#000" '
                   f'stroke-dasharray="4,3"/><text x="{w - r + 32}" y="{ly + 4}">bound ({OURS})</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main(argv):
    if not argv:
        sys.exit(__doc__)
    out, csv, ascii, cost, svg_dir, only = argv[0], False, False, False, None, []
    rest = argv[1:]
    while rest:
        a = rest.pop(0)
        if a == "--csv":
            csv = True
        elif a == "--ascii":
            ascii = True
        elif a == "--cost":
            cost = True
        elif a == "--svg" and rest:
            svg_dir = rest.pop(0)
        elif a == "--slice" and rest:
            only.append(rest.pop(0))
        else:
            sys.exit(f"policy_grid_tables: unknown argument '{a}'\n{__doc__}")
    cells = load(out)
    if not cells:
        sys.exit(f"policy_grid_tables: no cells under {out}/cells")
    if cost:
        print("| slice | cells | mean s per run | max s | total min |")
        print("|---|---|---|---|---|")
    if csv:
        print(",".join(["trace", "model", "tiers", "label", "cache_model", "retention", "eviction",
                        "concurrency"] + CSV_FIELDS + ["wall_s"]))
    for (trace, model, tiers), sc in slices(cells):
        if only and f"{trace}/{model}/{tiers}" not in only:
            continue
        concs = sorted({c for _, c in sc})
        labels = sorted({lab for lab, _ in sc}, key=lambda x: order(x, POLICIES))
        if csv:
            for lab in labels:
                for c in concs:
                    if (lab, c) in sc:
                        cell = sc[(lab, c)]
                        r = cell["run"]
                        print(",".join(str(x) for x in [trace, model, tiers, lab, r["cache_model"], r["retention"],
                                                        r["eviction"], c] + [r[f] for f in CSV_FIELDS] +
                                       [round(cell.get("wall_s", 0), 2)]))
            continue
        if cost:
            walls = [cell.get("wall_s", 0) for cell in sc.values()]
            print(f"| {trace} / {model} / {tiers} | {len(walls)} | {sum(walls) / len(walls):.1f} | "
                  f"{max(walls):.1f} | {sum(walls) / 60:.1f} |")
            continue
        print(f"#### {trace} / {model} / {tiers}\n")
        print(verdict(sc, concs) + "\n")
        if concs == [0]:  # open loop: one run per policy, the metrics as columns
            print("| policy | hit / bound / frac (%) | TTFT p50 / p90 s | ckpt B per hit tok | out tok/s/GPU |"
                  " $/M in / out |")
            print("|---|---|---|---|---|---|")
            for lab in labels:
                r = sc[(lab, 0)]["run"]
                print(f"| {lab} | {pct(r['realized_hit_rate'])} / {pct(r['offline_bound_hit_rate'])} / {frac(r):.2f} | "
                      f"{r['ttft_p50_s']:.1f} / {r['ttft_p90_s']:.1f} | {r['checkpoint_bytes_per_hit_token']:.0f} | "
                      f"{r['output_tok_s_per_gpu']:.1f} | {usd(r)} |")
            print()
            continue
        table(sc, concs, labels, "hit / bound / frac (%)",
              lambda r: f"{pct(r['realized_hit_rate'])} / {pct(r['offline_bound_hit_rate'])} / {frac(r):.2f}")
        table(sc, concs, labels, "TTFT p50 / p90 s · ckpt B per hit tok",
              lambda r: f"{r['ttft_p50_s']:.1f} / {r['ttft_p90_s']:.1f} · {r['checkpoint_bytes_per_hit_token']:.0f}")
        table(sc, concs, labels, "out tok/s/GPU · $/M in / out",
              lambda r: f"{r['output_tok_s_per_gpu']:.1f} · {usd(r)}")
        if ascii:
            ascii_plot(sc, concs, labels)
            print()
        if svg_dir:
            os.makedirs(svg_dir, exist_ok=True)
            name = f"{trace}-{model}-{tiers}.svg"
            svg_plot(sc, concs, labels, os.path.join(svg_dir, name), f"{trace} / {model} / {tiers}: realized hit rate")
            print(f"![{trace} / {model} / {tiers}](policy/grid/{name})\n")


if __name__ == "__main__":
    main(sys.argv[1:])
