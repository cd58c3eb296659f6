#!/usr/bin/env python3
"""The table and charts of a bench/compare.sh run, from its OUT dir (standard library only).

Reads OUT/results.tsv (peer, scenario, repeat, loadgen --json file, CPU us/msg), OUT/meta.json and
OUT/notes.txt; writes OUT/table.md (also printed) and SVG charts:
  ratio-tps.svg, ratio-p99.svg, ratio-cpu.svg  each peer's median over the first peer's, per scenario
  latency-<scenario>.svg                       latency percentile curves, one line per peer
Usage: compare_report.py OUT
"""
import json
import math
import os
import statistics
import sys
from xml.sax.saxutils import escape

COLORS = ["#444444", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"]


def load(out):
    runs = {}
    with open(os.path.join(out, "results.tsv")) as f:
        for line in f:
            if not line.strip():
                continue
            peer, scenario, _rep, path, cpu = line.rstrip("\n").split("\t")[:5]
            with open(path) as j:
                summary = json.load(j)
            summary["_cpu_us"] = None if cpu in ("", "-") else float(cpu)
            summary["_scenario"] = scenario
            runs.setdefault((peer, scenario), []).append(summary)
    return runs


def get(d, *keys):
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


# What each scenario reports: (tps, mb/s, latency figures, failures) pickers.
def send_fails(r):
    return (get(r, "produce", "send_failed") or 0) + (get(r, "produce", "response_failed") or 0)


def is_consume(scenario):
    return scenario == "S4"


def is_e2e(scenario):
    return scenario == "S5"


def is_omb(scenario):
    return scenario == "OMB"


# `loadgen omb` writes OMB's result fields: the table's latency keys in OMB's names.
OMB_LATENCY = {"avg": "Avg", "p50": "50pct", "p99": "99pct", "p999": "999pct", "p9999": "9999pct", "max": "Max"}


def omb_curve(r):
    q = r.get("aggregatedPublishLatencyQuantiles") or {}
    return [{"percentile": float(k), "ms": v} for k, v in sorted(q.items(), key=lambda kv: float(kv[0]))]


def tps(scenario):
    if is_omb(scenario):
        return lambda r: get(r, "loadgen", "publishRateAvg")
    side = "consume" if is_consume(scenario) else "produce"
    return lambda r: get(r, side, "tps")


def mbs(scenario):
    if is_omb(scenario):
        return lambda r: (get(r, "loadgen", "publishRateAvg") or 0) * (r.get("messageSize") or 0) / 1e6
    side = "consume" if is_consume(scenario) else "produce"
    return lambda r: get(r, side, "mb_per_s")


def latency(scenario, key):
    if is_omb(scenario):
        return lambda r: r.get("aggregatedPublishLatency" + OMB_LATENCY[key]) if key in OMB_LATENCY else None
    if is_consume(scenario):
        return lambda r: None  # a backlog's e2e is its age, not a latency
    if is_e2e(scenario):
        return lambda r: get(r, "consume", "e2e_ms", key)
    return lambda r: get(r, "produce", "rt_ms", key)


def failures(scenario):
    if is_omb(scenario):
        return lambda r: (get(r, "loadgen", "publishFailed") or 0) + (get(r, "loadgen", "pullFailed") or 0)
    if is_consume(scenario):
        return lambda r: get(r, "consume", "pull_failed")
    if is_e2e(scenario):
        return lambda r: send_fails(r) + (get(r, "consume", "pull_failed") or 0)
    return send_fails


def cpu(r):
    return r.get("_cpu_us")


def curve(scenario):
    if is_omb(scenario):
        return omb_curve
    if is_consume(scenario):
        return None
    if is_e2e(scenario):
        return lambda r: get(r, "consume", "e2e_percentiles_ms")
    return lambda r: get(r, "produce", "rt_percentiles_ms")


def median(runs, peer, scenario, pick):
    values = [pick(r) for r in runs.get((peer, scenario), [])]
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio(v, base):
    if v is None or not base:
        return "-"
    r = v / base
    return f"{r:.2f}x" if r >= 0.1 else f"{r:.2g}x"


def fmt(v):
    if v is None:
        return "-"
    if abs(v) >= 100 or float(v).is_integer():
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3f}" if abs(v) < 1 else f"{v:.2f}"


SCENARIO_TITLES = {
    "S1": "S1 sync send, ASYNC_FLUSH, 64 in flight",
    "S2": "S2 sync send, SYNC_FLUSH, 64 in flight",
    "S3": "S3 batches of 32, ASYNC_FLUSH",
    "S4": "S4 consume a {backlog} MiB backlog, pulls of {pull_batch}",
    "S5": "S5 e2e at {rate} msg/s, SYNC_FLUSH",
    "OMB": "OMB workload {omb}, ASYNC_FLUSH",
}


def thousands(s):
    return f"{int(s):,}" if str(s).isdigit() else s


def scenario_title(scenario, meta):
    if scenario.startswith("S6-shards"):
        return f"S6 S1 with {scenario[9:]} shard(s)"
    return SCENARIO_TITLES.get(scenario, scenario).format(
        backlog=meta.get("backlog_mb", "?"), rate=thousands(meta.get("s5_rate", "?")),
        pull_batch=meta.get("pull_batch", "32"), omb=meta.get("omb_workload", "?"))


def scenario_order(s):
    if s.startswith("S6-shards"):
        return (6, int(s[9:]))
    return (int(s[1:]) if s[1:].isdigit() else 99, 0)


def table(runs, meta, notes):
    peers = [p for p in meta["peers"] if any(k[0] == p for k in runs)] or meta["peers"]
    base = peers[0]
    others = peers[1:]
    scenarios = sorted({s for (_, s) in runs}, key=scenario_order)
    out = [f"Machine: {meta['machine']}; run {meta['stamp']}",
           f"Raw disk (same filesystem): {meta['disk']}",
           f"Settings: {meta['settings']}"]
    labels = meta.get("peer_labels") or {}
    named = [f"{p} = {labels[p]}" for p in peers if p in labels]
    if named:
        out.append("Peers: " + "; ".join(named) + f"; ratios against {base}")
    jvm = meta.get("apache_jvm")
    if isinstance(jvm, str) and jvm:  # runs before 2026-12-07: one Apache peer, 4.9.8 from the old kit
        out.append(f"Apache RocketMQ 4.9.8 broker JVM: {jvm}")
    elif isinstance(jvm, dict):
        for p in peers:
            if jvm.get(p):
                out.append(f"{labels.get(p, p)} broker JVM ({p}): {jvm[p]}")
    out.append("")
    header = ["scenario", "metric"] + peers + [f"{p} / {base}" for p in others]
    out.append("| " + " | ".join(header) + " |")
    out.append("| --- | --- |" + " ---: |" * (len(peers) + len(others)))
    for sc in scenarios:
        lat = "e2e" if is_e2e(sc) else "RT"
        rows = [
            ("consumed msg/s" if is_consume(sc) else "sent msg/s (TPS)", tps(sc), True),
            ("MB/s", mbs(sc), True),
            (f"p50 {lat} ms", latency(sc, "p50"), False),
            (f"p99 {lat} ms", latency(sc, "p99"), False),
            (f"p999 {lat} ms", latency(sc, "p999"), False),
            ("failures", failures(sc), False),
            ("CPU us/msg", cpu, False),
        ]
        if is_e2e(sc):
            rows.append(("due but never sent", lambda r: get(r, "produce", "missed_open_loop"), False))
        title = scenario_title(sc, meta)
        for i, (metric, pick, higher) in enumerate(rows):
            values = [median(runs, p, sc, pick) for p in peers]
            if all(v is None for v in values) and metric.startswith("p"):
                continue
            count_row = metric == "failures" or metric.startswith("due")
            ratios = [ratio(v, values[0]) if not count_row else "-" for v in values[1:]]
            label = metric + ("" if higher or count_row else " (lower is better)")
            out.append("| " + " | ".join([title if i == 0 else "", label] + [fmt(v) for v in values] + ratios) + " |")
    out.append("")
    out.append("Medians over the repeats. CPU us/msg: utime + stime of the broker and name server processes "
               "over the loadgen run (S4: the consume only) divided by the messages acknowledged (S4: consumed), "
               "warm-up included in both (so is a JVM's JIT compilation). Failures: failed sends + failed "
               "responses (S4: failed pulls; S5 and OMB: both). S5's latencies are end-to-end, the others' send RT "
               "(OMB: its publish rate and aggregated publish latency from `loadgen omb`; no CPU figure).")
    if notes:
        out.append("")
        out.append("Notes:")
        out.extend(f"- {n}" for n in notes)
    return "\n".join(out), peers, scenarios


# ---------------------------------------------------------------- SVG


def svg_doc(width, height, body):
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">\n'
            f'<rect width="{width}" height="{height}" fill="white"/>\n' + "\n".join(body) + "\n</svg>\n")


def text(x, y, s, anchor="middle", size=12, extra=""):
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}"{extra}>{escape(str(s))}</text>'


def legend(body, peers, x, y, first_color=0):
    for i, p in enumerate(peers):
        color = COLORS[(i + first_color) % len(COLORS)]
        body.append(f'<rect x="{x}" y="{y + i * 18 - 10}" width="12" height="12" fill="{color}"/>')
        body.append(text(x + 18, y + i * 18, p, "start"))


def ratio_chart(path, title, runs, peers, scenarios, pick, meta):
    base, others = peers[0], peers[1:]
    groups = []
    for sc in scenarios:
        b = median(runs, base, sc, pick)
        vals = []
        for p in others:
            v = median(runs, p, sc, pick)
            vals.append(v / b if v is not None and b else None)
        if any(v is not None for v in vals):
            groups.append((sc, vals))
    width, height = max(640, 260 + len(groups) * (30 + 34 * max(1, len(others)))), 380
    left, right, top, bottom = 60, 190, 40, 60
    pw, ph = width - left - right, height - top - bottom
    body = [text(width / 2, 22, title, size=14, extra=' font-weight="bold"')]
    if not groups:
        body.append(text(width / 2, height / 2, f"no scenario has figures for {base} and another peer"))
        return write(path, svg_doc(width, height, body))
    top_v = max([v for _, vals in groups for v in vals if v is not None] + [1.0]) * 1.15
    y = lambda v: top + ph - v / top_v * ph
    # grid
    step = nice_step(top_v)
    v = 0.0
    while v <= top_v + 1e-9:
        body.append(f'<line x1="{left}" x2="{left + pw}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e0e0e0"/>')
        body.append(text(left - 6, y(v) + 4, f"{v:g}x", "end"))
        v += step
    gw = pw / len(groups)
    bw = min(40, (gw - 20) / max(1, len(others)))
    for gi, (sc, vals) in enumerate(groups):
        gx = left + gi * gw + (gw - bw * len(others)) / 2
        for i, v in enumerate(vals):
            x = gx + i * bw
            if v is None:
                body.append(text(x + bw / 2, y(0) - 4, "n/a", size=10))
                continue
            body.append(f'<rect x="{x:.1f}" y="{y(v):.1f}" width="{bw - 2:.1f}" height="{y(0) - y(v):.1f}" '
                        f'fill="{COLORS[(i + 1) % len(COLORS)]}"/>')
            body.append(text(x + bw / 2 - 1, y(v) - 4, ratio(v, 1.0), size=10))
        body.append(text(left + gi * gw + gw / 2, top + ph + 18, sc))
    body.append(f'<line x1="{left}" x2="{left + pw}" y1="{y(1):.1f}" y2="{y(1):.1f}" stroke="black" stroke-dasharray="4 3"/>')
    body.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + ph}" stroke="black"/>')
    body.append(f'<line x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}" stroke="black"/>')
    body.append(text(left + pw / 2, height - 14, f"scenario (medians; dashed line: 1x = {base}; run {meta['stamp']})", size=11))
    legend(body, [f"{p} / {base}" for p in others], left + pw + 14, top + 30, first_color=1)
    write(path, svg_doc(width, height, body))


def nice_step(top):
    raw = top / 6
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def percentile_x(p):
    """hdrhistogram's percentile spacing: 1 / (1 - p), on a log scale (90%, 99%, 99.9% equally apart)."""
    return math.log10(1.0 / (1.0 - p / 100.0))


def latency_chart(path, title, runs, peers, scenario, pick, meta):
    lines = []
    for i, p in enumerate(peers):
        curves = [pick(r) for r in runs.get((p, scenario), [])]
        curves = [c for c in curves if c]
        if not curves:
            continue
        # Pointwise median over the repeats.
        points = []
        for k, point in enumerate(curves[0]):
            vals = [c[k]["ms"] for c in curves if len(c) > k]
            points.append((point["percentile"], statistics.median(vals)))
        lines.append((i, p, points))
    width, height = 640, 400
    left, right, top, bottom = 70, 150, 40, 60
    pw, ph = width - left - right, height - top - bottom
    body = [text(width / 2, 22, title, size=14, extra=' font-weight="bold"')]
    finite = sorted({pt for _, _, pts in lines for pt, _ in pts if pt < 100})
    values = [ms for _, _, pts in lines for _, ms in pts if ms > 0]
    if not finite or not values:
        body.append(text(width / 2, height / 2, "no latency figures"))
        return write(path, svg_doc(width, height, body))
    x_max_finite = percentile_x(finite[-1])
    x_of_max = x_max_finite + 0.6  # the maximum, drawn one step past the last percentile
    xs = lambda p: left + (percentile_x(p) if p < 100 else x_of_max) / x_of_max * pw
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = 10 ** math.ceil(math.log10(max(values)))
    if hi <= lo:
        hi = lo * 10
    ys = lambda v: top + ph - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * ph
    d = lo
    while d <= hi * 1.0001:
        body.append(f'<line x1="{left}" x2="{left + pw}" y1="{ys(d):.1f}" y2="{ys(d):.1f}" stroke="#e0e0e0"/>')
        body.append(text(left - 6, ys(d) + 4, f"{d:g}", "end"))
        d *= 10
    for p in finite + [100.0]:
        x = xs(p)
        label = "max" if p >= 100 else f"{p:g}"
        body.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + ph}" stroke="#f0f0f0"/>')
        body.append(text(x, top + ph + 16, label, size=9, extra=f' transform="rotate(-40 {x:.1f} {top + ph + 16})"'))
    for i, p, pts in lines:
        color = COLORS[i % len(COLORS)]
        coords = [(xs(pt), ys(ms)) for pt, ms in pts if ms > 0]
        body.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="'
                    + " ".join(f"{x:.1f},{y:.1f}" for x, y in coords) + '"/>')
        for x, y in coords:
            body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{color}"/>')
    body.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + ph}" stroke="black"/>')
    body.append(f'<line x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}" stroke="black"/>')
    body.append(text(left + pw / 2, height - 10, "percentile", size=11))
    body.append(text(16, top + ph / 2, "latency ms (log)", size=11, extra=f' transform="rotate(-90 16 {top + ph / 2})"'))
    legend(body, [p for _, p, _ in lines], left + pw + 14, top + 20)
    write(path, svg_doc(width, height, body))


def write(path, content):
    with open(path, "w") as f:
        f.write(content)


def main():
    out = sys.argv[1]
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    notes = []
    if os.path.exists(os.path.join(out, "notes.txt")):
        with open(os.path.join(out, "notes.txt")) as f:
            notes = [n.strip() for n in f if n.strip()]
    runs = load(out)
    text_table, peers, scenarios = table(runs, meta, notes)
    write(os.path.join(out, "table.md"), text_table + "\n")
    print(text_table)
    if not peers:
        return
    base = peers[0]
    charts = []
    if len(peers) >= 2:
        for name, label, pick_of in (
            ("ratio-tps.svg", "messages/s (higher is better)", tps),
            ("ratio-p99.svg", "p99 latency, RT or e2e (lower is better)", lambda sc: latency(sc, "p99")),
            ("ratio-cpu.svg", "CPU per message (lower is better)", lambda sc: cpu),
        ):
            per_sc = {sc: pick_of(sc) for sc in scenarios}
            ratio_chart(os.path.join(out, name), f"each peer / {base}: {label}",
                        runs, peers, scenarios, lambda r, _ps=per_sc: _ps[r["_scenario"]](r), meta)
            charts.append(name)
    for sc in scenarios:
        pick = curve(sc)
        if pick is None:
            continue
        kind = "end-to-end latency" if is_e2e(sc) else "send RT"
        name = f"latency-{sc}.svg"
        latency_chart(os.path.join(out, name), f"{scenario_title(sc, meta)}: {kind}", runs, peers, sc, pick, meta)
        charts.append(name)
    print(f"\nCharts in {out}: {', '.join(charts)}")


if __name__ == "__main__":
    main()
