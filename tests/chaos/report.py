"""The chaos run's report: a markdown file (per seed the checkers' counts, per fault kind the send and
consume outages over all seeds, the single-fault table when that mode ran) and, next to it, one
timeline SVG per seed (fault bars per kind over time, sends acknowledged and messages consumed per
second). Pure Python; run.py calls `write`.
"""

import os
import statistics
import time

# The single-fault mode's figures per fault, in seconds from the fault's start, and their headings.
SINGLE_MEASURES = [
    ("elected_s", "new master named"),
    ("accepting_s", "new master's first SEND_OK (probe)"),
    ("first_ok_new_s", "producers' first SEND_OK on it"),
    ("send_outage_s", "send outage"),
    ("consume_outage_s", "consume outage"),
    ("recovery_s", "recovered after the heal"),
]


def _median_max(vals):
    vals = sorted(v for v in vals if v is not None)
    if not vals:
        return None
    return round(statistics.median(vals), 2), round(vals[-1], 2), len(vals)


def single_table(measures):
    """Per kind: count, elections (faults after which the controllers named a newer master), and
    (median, max, how many had it) of each measure, None where no fault had it."""
    rows = {}
    for m in measures:
        rows.setdefault(m["kind"], []).append(m)
    table = {}
    for kind, ms in rows.items():
        row = {"count": len(ms), "elections": sum(1 for m in ms if m.get("elected"))}
        for key, _ in SINGLE_MEASURES:
            row[key] = _median_max(m.get(key) for m in ms)
        table[kind] = row
    return table


def _cell(v):
    return "-" if v is None else "%.2f / %.2f" % v[:2]


def single_markdown(table):
    lines = ["| fault kind | faults | elections | " + " | ".join(h for _, h in SINGLE_MEASURES) + " |",
             "| --- | --- | --- | " + " | ".join("---" for _ in SINGLE_MEASURES) + " |"]
    for kind in sorted(table):
        row = table[kind]
        lines.append("| %s | %d | %d | %s |" % (kind, row["count"], row["elections"],
                                                " | ".join(_cell(row[k]) for k, _ in SINGLE_MEASURES)))
    return lines


def per_kind(results):
    """Over the random seeds: per fault kind the number of faults and (median, max) of the longest
    send and consume outage overlapping each fault."""
    kinds = {}
    for r in results:
        if r.get("single_repeats"):
            continue
        f = r["facts"]
        for key, name in (("availability", "send"), ("consume_availability", "consume")):
            for pf in f.get(key, {}).get("per_fault", []):
                kinds.setdefault(pf["kind"], {"send": [], "consume": []})[name].append(pf["gap_s"])
    return {k: {"count": len(v["send"]) or len(v["consume"]), "send": _median_max(v["send"]),
                "consume": _median_max(v["consume"])} for k, v in kinds.items()}


# Fault bar colours, by kind (cycled for kinds added later).
PALETTE = ["#d62728", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
           "#1f77b4", "#2ca02c", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94"]


def _esc(text):
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def timeline_svg(tl, title):
    """An SVG of one seed's timeline: a lane per fault kind with a bar per fault, then sends
    acknowledged per second (blue) and messages consumed per second (green)."""
    t_end = max(tl["t_end"], 1.0)
    kinds = sorted({f[2] for f in tl["faults"]})
    left, right, width = 150, 20, 1000
    lane = 16
    top = 30
    plot_w = width - left - right
    lanes_h = lane * max(len(kinds), 1)
    chart_top = top + lanes_h + 20
    chart_h = 170
    height = chart_top + chart_h + 50

    def x(t):
        return left + plot_w * min(max(t, 0.0), t_end) / t_end

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="11">' % (width, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="18" font-size="13">%s</text>' % (left, _esc(title))]
    for i, kind in enumerate(kinds):
        y = top + i * lane
        colour = PALETTE[i % len(PALETTE)]
        out.append('<text x="%d" y="%d" text-anchor="end">%s</text>' % (left - 6, y + 11, _esc(kind)))
        out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#eee"/>' % (left, y + 7, width - right, y + 7))
        for start, end, k, target in tl["faults"]:
            if k == kind:
                out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s %s %.1f-%.1f s'
                           '</title></rect>' % (x(start), y + 2, max(x(end) - x(start), 1.5), lane - 4, colour,
                                                _esc(kind), _esc(target), start, end))
    series = [("sends acknowledged / s", tl["ok_per_s"], "#1f77b4"),
              ("messages consumed / s", tl["consumed_per_s"], "#2ca02c")]
    peak = max([1] + [v for _, vals, _ in series for v in vals])
    base = chart_top + chart_h
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#ccc"/>'
               % (left, chart_top, plot_w, chart_h))
    out.append('<text x="%d" y="%d" text-anchor="end">%d</text>' % (left - 6, chart_top + 4, peak))
    out.append('<text x="%d" y="%d" text-anchor="end">0</text>' % (left - 6, base))
    for i, (name, vals, colour) in enumerate(series):
        if vals:
            pts = " ".join("%.1f,%.1f" % (x(t + 0.5), base - chart_h * v / peak) for t, v in enumerate(vals))
            out.append('<polyline points="%s" fill="none" stroke="%s" stroke-width="1.2"/>' % (pts, colour))
        out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (left + 10 + 200 * i, chart_top - 6, colour, name))
    step = next(s for s in (5, 10, 20, 30, 60, 120, 300, 600, 1200) if t_end / s <= 12)
    t = 0
    while t <= t_end:
        out.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/>' % (x(t), base, x(t), base + 4))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%d</text>' % (x(t), base + 16, t))
        t += step
    out.append('<text x="%d" y="%d" text-anchor="middle">seconds since the producers started</text>'
               % (left + plot_w // 2, base + 34))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write(path, results, seconds, command=None, topology="the chaos cluster"):
    """Writes the markdown report at `path` and a timeline SVG per seed next to it (`command`: the
    runner's command line, quoted in the report; `topology`: what ran, in words); returns the SVGs'
    paths."""
    directory = os.path.dirname(os.path.abspath(path))
    stem = os.path.splitext(os.path.basename(path))[0]
    random_seeds = [r for r in results if not r.get("single_repeats")]
    singles = [r for r in results if r.get("single_repeats")]
    lines = ["# Chaos run, %s" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "",
             "tests/chaos/run.py: %s, each process in its own network namespace; %d random seeds of %d s "
             "of overlapping faults%s." % (topology, len(random_seeds), seconds,
                "" if not singles else ", and the single-fault mode (each kind alone on a healthy cluster, "
                "%d times)" % singles[0]["single_repeats"]), ""]
    if command:
        lines += ["Command: `%s` (binaries: `CHAOS_BIN_DIR` or target/debug)." % command, ""]
    lines += ["| seed | mode | verdict | ok | fail | unknown | lost | duplicates | longest send outage (s) | "
              "consumed | consume duplicates | consume missed | longest consume outage (s) |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        f = r["facts"]
        s = f.get("sends", {})
        lines.append("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["seed"], "single" if r.get("single_repeats") else "%d s" % seconds,
            "pass" if not r["problems"] else "FAIL", s.get("ok"), s.get("fail"), s.get("unknown"),
            f.get("lost"), f.get("duplicates"), f.get("availability", {}).get("longest_gap_s"), f.get("consumed"),
            f.get("consume_duplicates"), f.get("consume_missed"),
            f.get("consume_availability", {}).get("longest_gap_s")))
    kinds = per_kind(results)
    if kinds:
        lines += ["", "## Outages per fault kind (random seeds)", "",
                  "For each fault, the longest stretch without a SEND_OK (without a message consumed) that "
                  "overlaps it; faults overlap, so a stretch shared by several faults counts for each of them. "
                  "Median / longest over all faults of the kind, in seconds.", "",
                  "| fault kind | faults | send outage median / longest | consume outage median / longest |",
                  "| --- | --- | --- | --- |"]
        for kind in sorted(kinds):
            k = kinds[kind]
            lines.append("| %s | %d | %s | %s |" % (kind, k["count"], _cell(k["send"]), _cell(k["consume"])))
    for r in singles:
        lines += ["", "## Single faults (seed %d)" % r["seed"], "",
                  "Each kind alone on a healthy cluster, healed, then full recovery before the next. Seconds from "
                  "the moment the fault took effect, median / max; `elections`: faults after which the "
                  "controllers named a newer master (for a kind that should not depose the master, a false "
                  "failover). The probe "
                  "sends to each newly named master directly; the producers find it through the name server "
                  "after a failed send.", ""]
        lines += single_markdown(single_table(r.get("single", [])))
    svgs = []
    if any(r.get("timeline") for r in results):
        lines += ["", "## Timelines", ""]
    for r in results:
        tl = r.get("timeline")
        if not tl:
            continue
        name = "%s-seed-%d%s.svg" % (stem, r["seed"], "-single" if r.get("single_repeats") else "")
        svg = os.path.join(directory, name)
        with open(svg, "w") as f:
            f.write(timeline_svg(tl, "seed %d%s" % (r["seed"], " (single faults)" if r.get("single_repeats") else "")))
        svgs.append(svg)
        lines += ["![seed %d](%s)" % (r["seed"], name), ""]
    problems = [(r["seed"], p) for r in results for p in r["problems"]]
    lines += ["", "Problems:" if problems else "No problems found.", ""]
    lines += ["- seed %d: %s" % sp for sp in problems]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return svgs
