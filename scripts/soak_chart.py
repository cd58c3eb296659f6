#!/usr/bin/env python3
"""Draws a soak run's samples as one SVG (no plotting library needed): RSS and open fds of every
process, and the stores' size, over time, with the kills and restarts marked, so a leak shows at a
glance. Usage: soak_chart.py OUT_DIR (reads samples.csv, disk.csv, events.csv; writes chart.svg)."""

import csv
import sys
from html import escape

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
WIDTH, PANEL_H, LEFT, RIGHT, TOP, GAP = 960, 190, 70, 170, 40, 50


def rows(path):
    try:
        with open(path) as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


def nice_max(v):
    if v <= 0:
        return 1
    step = 10 ** (len(str(int(v))) - 1)
    return (int(v / step) + 1) * step


def panel(out, index, title, unit, series, t_max, events):
    """series: {label: [[(t, v), ...] per pid]}"""
    y0 = TOP + index * (PANEL_H + GAP)
    plot_w = WIDTH - LEFT - RIGHT
    v_max = nice_max(max((v for runs in series.values() for run in runs for _, v in run), default=1))
    x = lambda t: LEFT + plot_w * t / max(t_max, 1)
    y = lambda v: y0 + PANEL_H - PANEL_H * v / v_max
    out.append(f'<text x="{LEFT}" y="{y0 - 8}" font-size="14" font-weight="bold">{escape(title)}</text>')
    out.append(f'<rect x="{LEFT}" y="{y0}" width="{plot_w}" height="{PANEL_H}" fill="none" stroke="#999"/>')
    for i in range(5):
        v = v_max * i / 4
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y(v) + 4:.1f}" font-size="11" text-anchor="end">{v:g}{unit}</text>')
    for t, label in events:
        out.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{y0}" y2="{y0 + PANEL_H}" stroke="#bbb" '
                   f'stroke-dasharray="3,3"><title>{escape(label)}</title></line>')
    for n, (label, runs) in enumerate(sorted(series.items())):
        color = COLORS[n % len(COLORS)]
        for run in runs:
            pts = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in run)
            out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="1.5"/>')
        ly = y0 + 14 + 16 * n
        out.append(f'<line x1="{WIDTH - RIGHT + 10}" x2="{WIDTH - RIGHT + 28}" y1="{ly - 4}" y2="{ly - 4}" '
                   f'stroke="{color}" stroke-width="3"/>')
        out.append(f'<text x="{WIDTH - RIGHT + 32}" y="{ly}" font-size="11">{escape(label)}</text>')


def main(out_dir):
    samples = rows(f"{out_dir}/samples.csv")
    disk = rows(f"{out_dir}/disk.csv")
    events = [(int(r["t_s"]), r["event"]) for r in rows(f"{out_dir}/events.csv") if r.get("t_s", "").isdigit()]
    rss, fds = {}, {}
    for r in samples:
        key = (r["process"], r["pid"])
        t = int(r["t_s"])
        rss.setdefault(key, []).append((t, int(r["rss_kb"]) / 1024))
        fds.setdefault(key, []).append((t, int(r["fds"])))

    def by_name(d):
        out = {}
        for (name, _pid), run in d.items():
            out.setdefault(name, []).append(run)
        return out

    store = {"stores": [[(int(r["t_s"]), int(r["store_kb"] or 0) / 1024) for r in disk if r.get("store_kb")]]}
    t_max = max([int(r["t_s"]) for r in samples] + [int(r["t_s"]) for r in disk] + [1])
    # The sampler starts before the load; events are timed from the load's start: close enough to mark.
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{TOP + 3 * (PANEL_H + GAP)}" '
           f'font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>']
    panel(svg, 0, "RSS per process (each line one process lifetime; dashes: kills and restarts)", " MiB",
          by_name(rss), t_max, events)
    panel(svg, 1, "open file descriptors per process", "", by_name(fds), t_max, events)
    panel(svg, 2, "size of the stores (all brokers and the name server's files)", " MiB", store, t_max, events)
    svg.append(f'<text x="{LEFT}" y="{TOP + 3 * (PANEL_H + GAP) - 18}" font-size="11">time (s)  0 .. {t_max}</text>')
    svg.append("</svg>")
    with open(f"{out_dir}/chart.svg", "w") as f:
        f.write("\n".join(svg))
    print(f"chart: {out_dir}/chart.svg")


if __name__ == "__main__":
    main(sys.argv[1])
