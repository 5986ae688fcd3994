"""SVG plots of one grid slice for docs/policy.md (used by policy_grid_tables.py).

One file per slice, three panels side by side:
  1. realized hit rate vs concurrency, one line per policy (the mean over seeds, a vertical bar
     from the lowest to the highest seed where there are several), boundary-aware's offline bound
     dashed;
  2. checkpoint bytes per hit token vs concurrency, log scale (no point where nothing hit);
  3. TTFT p50 (log scale) vs output tokens/s per GPU, one point per (policy, concurrency), each
     policy's points joined in concurrency order; the Pareto front (no other point has both higher
     throughput and lower TTFT) ringed, numbered and listed under the legend.
Every value is the mean over the cell's seeds.
"""
import math

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#000000", "#e377c2",
          "#7f7f7f", "#bcbd22"]
PANEL_W, PANEL_H, TOP, BOTTOM, LEFT, GAP, LEGEND_W = 300, 270, 50, 44, 56, 24, 190


def _mean(xs):
    return sum(xs) / len(xs)


class _Panel:
    """A plot area at x0 with linear or log axes; map() gives SVG coordinates."""

    def __init__(self, x0, xlo, xhi, ylo, yhi, xlog=False, ylog=False):
        self.x0, self.xlo, self.xhi, self.ylo, self.yhi, self.xlog, self.ylog = x0, xlo, xhi, ylo, yhi, xlog, ylog

    def _t(self, v, lo, hi, log):
        if log:
            v, lo, hi = math.log10(max(v, lo)), math.log10(lo), math.log10(hi)
        return 0.5 if hi == lo else (v - lo) / (hi - lo)

    def map(self, x, y):
        px = self.x0 + LEFT + (PANEL_W - LEFT) * self._t(x, self.xlo, self.xhi, self.xlog)
        py = TOP + (PANEL_H - TOP - BOTTOM) * (1 - self._t(y, self.ylo, self.yhi, self.ylog))
        return px, py

    def frame(self, title, xlabel, ylabel, yticks, xticks):
        out = [f'<text x="{self.x0 + LEFT}" y="{TOP - 12}" font-size="12">{title}</text>']
        for v, text in yticks:
            _, y = self.map(self.xlo, v)
            out.append(f'<line x1="{self.x0 + LEFT}" y1="{y:.1f}" x2="{self.x0 + PANEL_W}" y2="{y:.1f}" '
                       f'stroke="#ddd"/><text x="{self.x0 + LEFT - 4}" y="{y + 4:.1f}" '
                       f'text-anchor="end">{text}</text>')
        for v, text in xticks:
            x, _ = self.map(v, self.ylo)
            out.append(f'<text x="{x:.1f}" y="{PANEL_H - BOTTOM + 14}" text-anchor="middle">{text}</text>')
        out.append(f'<text x="{self.x0 + (LEFT + PANEL_W) / 2:.0f}" y="{PANEL_H - 10}" '
                   f'text-anchor="middle">{xlabel}</text>')
        cy = (TOP + PANEL_H - BOTTOM) / 2
        out.append(f'<text x="{self.x0 + 12}" y="{cy:.0f}" text-anchor="middle" '
                   f'transform="rotate(-90 {self.x0 + 12} {cy:.0f})">{ylabel}</text>')
        return out


def _log_ticks(lo, hi):
    return [(10.0**e, f"1e{e}") for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
            if lo <= 10.0**e <= hi]


def _polyline(pts, col, width, dash=""):
    if not pts:
        return []
    d = f' stroke-dasharray="{dash}"' if dash else ""
    return [f'<polyline fill="none" stroke="{col}" stroke-width="{width}"{d} points="' +
            " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>']


def _dots(pts, col):
    return [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{col}"/>' for x, y in pts]


def slice_svg(cells, concs, labels, ours, path, title):
    """cells: {(label, concurrency): [run, ...]} (one run per seed)."""
    col = {lab: COLORS[i % len(COLORS)] for i, lab in enumerate(labels)}
    width = lambda lab: 3 if lab == ours else 1.5
    vals = lambda lab, c, k: [r[k] for r in cells[(lab, c)]]
    xi = {c: i for i, c in enumerate(concs)}
    xt = [(i, str(c) if c else "open loop") for c, i in xi.items()]
    nx = max(1, len(concs) - 1)
    total_w = 3 * PANEL_W + 2 * GAP + LEGEND_W
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w}" height="{PANEL_H}" '
           f'font-family="sans-serif" font-size="10"><rect width="{total_w}" height="{PANEL_H}" fill="white"/>',
           f'<text x="{LEFT}" y="14" font-size="13">{title}</text>']

    # 1. hit rate vs concurrency
    p = _Panel(0, 0 if len(concs) > 1 else -0.5, nx if len(concs) > 1 else 0.5, 0, 1)
    out += p.frame("realized hit rate (bar: seed min-max)", "concurrency (lanes)", "% of prompt tokens",
                   [(v / 100, f"{v}%") for v in range(0, 101, 20)], xt)
    for lab in labels:
        keys = [c for c in concs if (lab, c) in cells]
        pts = [p.map(xi[c], _mean(vals(lab, c, "realized_hit_rate"))) for c in keys]
        out += _polyline(pts, col[lab], width(lab)) + _dots(pts, col[lab])
        for c in keys:
            h = vals(lab, c, "realized_hit_rate")
            if len(h) > 1:
                (x, y0), (_, y1) = p.map(xi[c], min(h)), p.map(xi[c], max(h))
                out.append(f'<line x1="{x:.1f}" y1="{y0:.1f}" x2="{x:.1f}" y2="{y1:.1f}" stroke="{col[lab]}"/>')
    bpts = [p.map(xi[c], _mean(vals(ours, c, "offline_bound_hit_rate"))) for c in concs if (ours, c) in cells]
    out += _polyline(bpts, "#000", 1, "4,3")

    # 2. checkpoint bytes per hit token
    bph = [_mean(vals(lab, c, "checkpoint_bytes_per_hit_token")) for lab, c in cells]
    lo = 10.0 ** math.floor(math.log10(max(1.0, min([b for b in bph if b > 0], default=1.0))))
    hi = 10.0 ** math.ceil(math.log10(max(bph + [10 * lo])))
    p = _Panel(PANEL_W + GAP, 0 if len(concs) > 1 else -0.5, nx if len(concs) > 1 else 0.5, lo, hi, ylog=True)
    out += p.frame("checkpoint bytes per hit token", "concurrency (lanes)", "bytes (log; none = no hit)",
                   _log_ticks(lo, hi), xt)
    for lab in labels:
        pts = [p.map(xi[c], _mean(vals(lab, c, "checkpoint_bytes_per_hit_token")))
               for c in concs if (lab, c) in cells and _mean(vals(lab, c, "checkpoint_bytes_per_hit_token")) > 0]
        out += _polyline(pts, col[lab], width(lab)) + _dots(pts, col[lab])

    # 3. Pareto: TTFT p50 vs output throughput per GPU
    pts = {(lab, c): (_mean(vals(lab, c, "output_tok_s_per_gpu")), _mean(vals(lab, c, "ttft_p50_s")))
           for lab, c in cells}
    xs, ys = [x for x, _ in pts.values()], [max(0.01, y) for _, y in pts.values()]
    tlo = 10.0 ** math.floor(math.log10(min(ys)))
    thi = 10.0 ** math.ceil(math.log10(max(ys + [10 * tlo])))
    xhi = max(xs) * 1.05 if max(xs) > 0 else 1
    p = _Panel(2 * (PANEL_W + GAP), 0, xhi, tlo, thi, ylog=True)
    step = 10 ** math.floor(math.log10(xhi / 2)) if xhi > 2 else xhi / 4
    out += p.frame("TTFT p50 vs throughput (ring: Pareto)", "output tok/s per GPU", "TTFT p50 s (log)",
                   _log_ticks(tlo, thi), [(v * step, f"{v * step:g}") for v in range(0, int(xhi / step) + 1)])
    for lab in labels:
        line = [p.map(*pts[(lab, c)]) for c in concs if (lab, c) in pts]
        out += _polyline(line, col[lab], width(lab) / 2) + _dots(line, col[lab])
    front = {}  # (x, y) -> the policies there (several policies can share a point)
    for (lab, c), (x, y) in sorted(pts.items(), key=lambda kv: (labels.index(kv[0][0]), kv[0][1])):
        if not any(x2 >= x and y2 <= y and (x2, y2) != (x, y) for x2, y2 in pts.values()):
            front.setdefault((x, y), []).append(f"{lab} c{c}" if c else lab)
    front = sorted(front.items(), reverse=True)  # highest throughput first
    for i, ((x, y), _) in enumerate(front):
        px, py = p.map(x, y)
        out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="5" fill="none" stroke="#000"/>'
                   f'<text x="{px - 4:.1f}" y="{py - 7:.1f}" font-size="9" text-anchor="end">{i + 1}</text>')

    # legend
    lx = 3 * PANEL_W + 2 * GAP + 10
    for i, lab in enumerate(labels + ["bound (" + ours + ")"]):
        ly = TOP + 14 * i
        c, w, dash = (col[lab], width(lab), "") if lab in col else ("#000", 1, ' stroke-dasharray="4,3"')
        out.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 18}" y2="{ly}" stroke="{c}" stroke-width="{w}"{dash}/>'
                   f'<text x="{lx + 22}" y="{ly + 4}">{lab}</text>')
    ly = TOP + 14 * (len(labels) + 1) + 6
    out.append(f'<text x="{lx}" y="{ly}" font-size="9">Pareto front (TTFT vs throughput):</text>')
    for i, (_, names) in enumerate(front):
        out.append(f'<text x="{lx}" y="{ly + 11 * (i + 1)}" font-size="9">{i + 1}: {" = ".join(names)}</text>')
    height = max(PANEL_H, ly + 11 * (len(front) + 1))
    out[0] = out[0].replace(f'height="{PANEL_H}"', f'height="{height}"')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
