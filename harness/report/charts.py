"""Charts with gnuplot (PNG for the report, SVG for slides) and graphviz.

Every chart is written as a data file, a gnuplot script and the images, so
a reviewer can re-plot or restyle without running anything else.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

FONT = "DejaVu Sans,10"
# One colour per kernel, stable across every chart of a report.
PALETTE = ["#1b6ca8", "#d1495b", "#2e933c", "#edae49", "#7b4f9e", "#3c3c3c", "#00798c",
           "#a05a2c", "#8d99ae", "#f28482"]


class ChartError(Exception):
    pass


@dataclass(frozen=True)
class Chart:
    png: Path
    svg: Path
    title: str


def _num(value: float) -> str:
    return "NaN" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{value:.6g}"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass(frozen=True)
class Style:
    """Type and canvas of a chart: the report's by default; slides ask for large type
    on a fixed canvas so a projector shows the labels."""
    font: str = FONT
    size: tuple[int, int] | None = None  # None: the chart's own size for its content
    line_width: int = 2
    key: str = "outside right top"  # where the legend goes


REPORT = Style()


def _render(stem: Path, body: str, size: tuple[int, int], title: str,
            style: Style = REPORT) -> Chart:
    """Run one gnuplot body twice: PNG and SVG."""
    if not shutil.which("gnuplot"):
        raise ChartError("gnuplot not found: apt-get install gnuplot-nox")
    w, h = style.size or size
    font = style.font
    script = "\n".join([
        f"set terminal pngcairo size {w},{h} font {_quote(font)} noenhanced",
        f"set output {_quote(str(stem.with_suffix('.png')))}",
        body,
        "unset multiplot",
        f"set terminal svg size {w},{h} font {_quote(font)} noenhanced background rgb 'white'",
        f"set output {_quote(str(stem.with_suffix('.svg')))}",
        body,
        "unset multiplot",
        "set output",
    ])
    gp = stem.with_suffix(".gp")
    gp.write_text(script + "\n")
    result = subprocess.run(["gnuplot", str(gp)], capture_output=True, text=True)
    if result.returncode != 0:
        raise ChartError(f"gnuplot {gp} failed: {result.stderr.strip()[-800:]}")
    return Chart(stem.with_suffix(".png"), stem.with_suffix(".svg"), title)


def redraw(chart: Chart, stem: Path, style: Style, title: str | None = None) -> Chart:
    """A gnuplot chart drawn again from its own script and data with another style (a
    slide's large type and canvas); title: a new title ("" for none)."""
    script = chart.png.with_suffix(".gp")
    lines = script.read_text().splitlines()
    if not lines or not lines[0].startswith("set terminal"):
        raise ChartError(f"{script}: not a chart script of this module")
    body = lines[2:lines.index("unset multiplot")]
    if title is not None:
        body = [("unset title" if not title else f"set title {_quote(title)}")
                if line.startswith("set title ") else line for line in body]
    return _render(stem, "\n".join(body), style.size or (760, 440), chart.title, style)


def _colours(kernels: list[str], all_kernels: list[str]) -> list[str]:
    return [PALETTE[all_kernels.index(k) % len(PALETTE)] if k in all_kernels
            else PALETTE[-1] for k in kernels]


# Colours for series that are not kernels (lines added and removed, vCPU counts): greys
# and a dark teal, so no bar reads as a kernel's.
NEUTRAL = ["#4d4d4d", "#b3b3b3", "#006d77", "#83c5be", "#e29578"]
# Line and point styles per kernel, so a line drawn over another of the same values
# still shows both: dash pattern and marker differ as well as the colour.
DASHES = [1, 2, 4, 5, 3, 1, 2, 4]
POINTS = [7, 5, 9, 13, 11, 15, 7, 5]


def lines_with_errors(stem: Path, title: str, xlabel: str, ylabel: str,
                      series: dict[str, list[tuple[float, float, float, float]]],
                      all_kernels: list[str], xtics: list[str] | None = None,
                      style: Style = REPORT) -> Chart:
    """One line per series: points (x, mean, low, high) with the 95% interval as bars."""
    names = list(series)
    blocks = []
    for i, name in enumerate(names):
        # Nudge each series sideways a little so error bars do not hide each other.
        nudge = (i - (len(names) - 1) / 2) * 0.04
        points = sorted(series[name])
        blocks.append(f"# {name}: x mean low high\n" + "\n".join(
            f"{_num(x + nudge)} {_num(y)} {_num(lo if math.isfinite(lo) else y)} "
            f"{_num(hi if math.isfinite(hi) else y)}" for x, y, lo, hi in points))
    stem.with_suffix(".dat").write_text("\n\n\n".join(blocks) + "\n")
    colours = _colours(names, all_kernels)
    plots = [f"{_quote(str(stem.with_suffix('.dat')))} index {i} using 1:2:3:4 with yerrorlines "
             f"lw {style.line_width} dt {DASHES[i % len(DASHES)]} pt {POINTS[i % len(POINTS)]} "
             f"lc rgb {_quote(c)} title {_quote(n)}"
             for i, (n, c) in enumerate(zip(names, colours))]
    tics = ""
    if xtics:
        tics = "set xtics (" + ", ".join(f"{_quote(t)} {i}" for i, t in enumerate(xtics)) + ")"
    else:
        xs = sorted({x for pts in series.values() for x, *_ in pts})
        tics = "set xtics (" + ", ".join(f"{_quote(f'{x:g}')} {x:g}" for x in xs) + ")"
        if len(xs) == 1:
            tics += f"\nset xrange [{xs[0] - 1:g}:{xs[0] + 1:g}]"
    body = "\n".join([
        f"set title {_quote(title)}", f"set xlabel {_quote(xlabel)}",
        f"set ylabel {_quote(ylabel)}", "set grid ytics", f"set key {style.key}",
        "set yrange [0:*]", "set offsets 0.2, 0.2, graph 0.1, 0", tics,
        "plot " + ", \\\n  ".join(plots)])
    return _render(stem, body, (760, 420), title, style)


MAX_WIDTH = 2400  # pixels


def clustered_bars(stem: Path, title: str, groups: list[str], kernels: list[str],
                   panels: list[tuple[str, dict[tuple[str, str], float]]],
                   all_kernels: list[str], style: Style = REPORT,
                   from_zero: bool = True, marks: dict[str, float] | None = None,
                   colours: list[str] | None = None, log_y: bool = False) -> Chart:
    """Bars grouped by `groups` (x axis), one bar per kernel, one panel per metric.

    panels: (y label, {(group, kernel): value}); a missing value draws no bar.
    from_zero: the y axis starts at 0 (False for changes that can be negative).
    marks: y value -> label of horizontal reference lines (say, a noise band).
    colours: one per bar series, instead of the kernels' (series that are not kernels).
    log_y: a logarithmic y axis (values that span decades, each panel on its own).
    """
    # A panel without a single value (say, no contentions recorded) has nothing to draw.
    panels = [(ylabel, values) for ylabel, values in panels
              if any((g, k) in values for g in groups for k in kernels)]
    if not panels:
        raise ChartError(f"{stem}: no values to chart")
    files = []
    for p, (ylabel, values) in enumerate(panels):
        path = stem.with_name(f"{stem.name}.{p}.dat")
        lines = ["# group " + " ".join(_quote(k) for k in kernels)]
        for g in groups:
            lines.append(_quote(g) + " " + " ".join(_num(values.get((g, k), math.nan))
                                                    for k in kernels))
        path.write_text("\n".join(lines) + "\n")
        files.append((path, ylabel))
    colours = colours or _colours(kernels, all_kernels)
    n = len(kernels)
    body = [f"set multiplot layout {len(panels)},1 title {_quote(title)}",
            "set style data histogram", "set style histogram cluster gap 1",
            "set style fill solid 0.85 border -1", "set boxwidth 0.9", "set grid ytics",
            f"set key {style.key}",
            _log_range(panels) if log_y else ("set yrange [0:*]" if from_zero
                                                else "set yrange [*:*]"),
            "set xtics nomirror", "set offsets 0, 0, graph 0.1, 0" if from_zero
            else "set offsets 0, 0, graph 0.1, graph 0.1"]
    for i, (y, label) in enumerate(sorted((marks or {}).items())):
        body.append(f"set arrow {i + 1} from graph 0, first {y:g} to graph 1, first {y:g} "
                    "nohead dt 2 lw 2 lc rgb '#555555' front")
        body.append(f"set label {i + 1} {_quote(label)} at graph 0.005, first {y:g} "
                    "offset 0, 0.6 tc rgb '#555555' front")
    for (path, ylabel), (_, values) in zip(files, panels):
        # gnuplot refuses a histogram column without any valid point.
        present = [i for i, k in enumerate(kernels) if any((g, k) in values for g in groups)]
        plots = [f"{_quote(str(path))} using {i + 2}:xtic(1) lc rgb {_quote(colours[i])} "
                 f"title {_quote(kernels[i])}" for i in present]
        body += [f"set ylabel {_quote(ylabel)}", "plot " + ", \\\n  ".join(plots)]
    width = min(MAX_WIDTH, max(760, 120 + 26 * n * max(1, len(groups))))
    # Many groups, or names wider than their cluster: slant them (with room on the right
    # for the last one) so that no two names print over each other.
    slant = len(groups) > 8 or not labels_fit(groups, (style.size or (width, 0))[0], style)
    if slant:
        body.insert(1, "set xtics rotate by -35 left")
        body.insert(1, f"set rmargin {_slant_margin(groups)}")
    height = 200 + 230 * len(panels) + (160 if slant else 0)
    return _render(stem, "\n".join(body), (width, height), title, style)


def _log_range(panels: list[tuple[str, dict[tuple[str, str], float]]]) -> str:
    """A log y axis over the bars' own values (gnuplot's would round out to whole
    decades, leaving the bars a sliver of the panel)."""
    ys = [v for _, values in panels for v in values.values() if v and v > 0
          and math.isfinite(v)]
    if not ys:
        return "set logscale y"
    low, high = min(ys) / 2, max(ys) * 1.6
    tics = log_tics(low, high)
    return (f"set logscale y\nset yrange [{low:g}:{high:g}]" + (
        "\nset ytics (" + ", ".join(f'"{t:g}" {t:g}' for t in tics) + ")" if tics else ""))


def log_tics(low: float, high: float, most: int = 7) -> list[float]:
    """Round values (1, 2, 5 and 1.5, 3, 7 of each decade) inside a log axis's range, at
    most `most` of them, so that an axis narrower than a decade still has a scale."""
    found = []
    for decade in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1):
        for m in (1, 1.5, 2, 3, 5, 7):
            t = m * 10 ** decade
            if low <= t <= high:
                found.append(round(t, 10))
    while len(found) > most:
        found = found[::2]
    return found


def _slant_margin(groups: list[str]) -> int:
    """The right margin, in characters, that a name slanted at 35 degrees under the last
    group needs (cos 35 of its length), at least 12."""
    return max(12, math.ceil(len(groups[-1]) * 0.82) + 1) if groups else 12


def _font_px(style: Style) -> float:
    """The chart's type size in pixels (the font's points, as gnuplot's cairo draws them)."""
    try:
        return float(style.font.rsplit(",", 1)[1]) * 4 / 3
    except (IndexError, ValueError):
        return 13.0


# Average advance of a DejaVu Sans character, in ems (mixed text).
EM_PER_CHAR = 0.6
# What gnuplot's margins and key leave of a chart's width for its plot.
PLOT_SHARE = 0.75


def labels_fit(groups: list[str], width_px: float, style: Style) -> bool:
    """Whether the groups' names, written level, fit their share of the plot's width
    (each centred under its group, with a character of air between neighbours)."""
    if not groups:
        return True
    room = width_px * PLOT_SHARE / len(groups)
    return max(len(g) + 1 for g in groups) * _font_px(style) * EM_PER_CHAR <= room


def points_with_errors(stem: Path, title: str, groups: list[str], ylabel: str,
                       series: dict[str, dict[str, tuple[float, float, float]]],
                       all_kernels: list[str], style: Style = REPORT, log_y: bool = False,
                       marks: dict[float, str] | None = None,
                       colours: list[str] | None = None, clip: bool = False) -> Chart:
    """Categories along x, per series a point (value, low, high) with its interval as a
    bar, series side by side within a category; marks: y -> label of reference lines.
    clip: the y axis spans the points, not their bars (a bar running off the frame is
    wider than the chart)."""
    names = [n for n in series if series[n]]
    if not names or not groups:
        raise ChartError(f"{stem}: no values to chart")
    blocks = []
    width = 0.6 / max(1, len(names))
    for i, name in enumerate(names):
        nudge = (i - (len(names) - 1) / 2) * width
        blocks.append(f"# {name}: position value low high\n" + "\n".join(
            f"{_num(g + nudge)} {_num(y)} {_num(lo)} {_num(hi)}"
            for g, group in enumerate(groups) if group in series[name]
            for y, lo, hi in [series[name][group]]) or "NaN NaN NaN NaN")
    data = stem.with_suffix(".dat")
    data.write_text("\n\n\n".join(blocks) + "\n")
    colours = colours or _colours(names, all_kernels)
    plots = [f"{_quote(str(data))} index {i} using 1:2:3:4 with yerrorbars "
             f"pt {POINTS[i % len(POINTS)]} ps {1.4 if style.size else 1.0} "
             f"lw {style.line_width} lc rgb {_quote(c)} title {_quote(n)}"
             for i, (n, c) in enumerate(zip(names, colours))]
    body = [f"set title {_quote(title)}" if title else "unset title",
            f"set ylabel {_quote(ylabel)}", "set grid ytics", f"set key {style.key}",
            f"set xrange [-0.6:{len(groups) - 0.4}]",
            "set xtics (" + ", ".join(f"{_quote(g)} {i}" for i, g in enumerate(groups)) + ")",
            "set logscale y\nset format y '%.0s%c'" if log_y
            else "set offsets 0, 0, graph 0.08, graph 0.08"]
    if clip:
        ys = [y for pts in series.values() for y, _, _ in pts.values() if math.isfinite(y)]
        ys += list((marks or {}).keys())
        low, high = min(ys), max(ys)
        pad = (high - low) * 0.15 or abs(high) * 0.5 or 1.0
        body.append(f"set yrange [{low - pad:g}:{high + pad:g}]")
    if len(groups) > 6:
        body += ["set xtics rotate by -35 left", f"set rmargin {_slant_margin(groups)}"]
    for i, (y, label) in enumerate(sorted((marks or {}).items())):
        body.append(f"set arrow {i + 1} from graph 0, first {y:g} to graph 1, first {y:g} "
                    "nohead dt 2 lw 2 lc rgb '#555555' back")
        if label:
            body.append(f"set label {i + 1} {_quote(label)} at graph 0.01, first {y:g} "
                        "offset 0, 0.7 tc rgb '#555555'")
    body.append("plot " + ", \\\n  ".join(plots))
    height = 440 + (160 if len(groups) > 6 else 0)
    return _render(stem, "\n".join(body), (max(760, 140 + 70 * len(groups)), height), title,
                   style)


def boot_dots(stem: Path, title: str, groups: list[str], ylabel: str,
              series: dict[str, dict[str, list[float]]], all_kernels: list[str],
              style: Style = REPORT, log_y: bool = True,
              marks: dict[float, str] | None = None,
              summary: dict[str, dict[str, tuple[float, float, float]]] | None = None,
              colours: list[str] | None = None) -> Chart:
    """One dot per boot: categories along x, per series (a kernel) its boots' values side
    by side within a category, spread a little so equal values stay apart; summary: per
    series and category a (value, low, high) drawn as a point with its interval to the
    right of the dots; marks: y -> label of reference lines."""
    names = [n for n in series if any(series[n].values())]
    extra = [n for n in (summary or {}) if summary[n]]
    if not names or not groups:
        raise ChartError(f"{stem}: no values to chart")
    slots = len(names) + len(extra)
    width = 0.7 / max(1, slots)
    blocks = []
    for i, name in enumerate(names):
        centre = (i - (slots - 1) / 2) * width
        points = []
        for g, group in enumerate(groups):
            values = sorted(series[name].get(group, []))
            for j, y in enumerate(values):
                spread = (j - (len(values) - 1) / 2) * width * 0.6 / max(1, len(values))
                points.append(f"{_num(g + centre + spread)} {_num(y)}")
        blocks.append(f"# {name}: position value (one line per boot)\n"
                      + ("\n".join(points) or "NaN NaN"))
    for i, name in enumerate(extra):
        centre = (len(names) + i - (slots - 1) / 2) * width
        blocks.append(f"# {name}: position value low high\n" + ("\n".join(
            f"{_num(g + centre)} {_num(y)} {_num(lo)} {_num(hi)}"
            for g, group in enumerate(groups) if group in summary[name]
            for y, lo, hi in [summary[name][group]]) or "NaN NaN NaN NaN"))
    data = stem.with_suffix(".dat")
    data.write_text("\n\n\n".join(blocks) + "\n")
    colours = colours or _colours(names, all_kernels) + NEUTRAL[:len(extra)]
    size = 1.6 if style.size else 1.1
    plots = [f"{_quote(str(data))} index {i} using 1:2 with points pt {POINTS[i % len(POINTS)]} "
             f"ps {size} lc rgb {_quote(colours[i])} title {_quote(n)}"
             for i, n in enumerate(names)]
    plots += [f"{_quote(str(data))} index {len(names) + i} using 1:2:3:4 with yerrorbars "
              f"pt 2 ps {size * 1.3} lw {style.line_width} "
              f"lc rgb {_quote(colours[len(names) + i])} title {_quote(n)}"
              for i, n in enumerate(extra)]
    canvas = (max(760, 160 + 200 * len(groups)), 460)
    body = [f"set title {_quote(title)}" if title else "unset title",
            f"set ylabel {_quote(ylabel)}", "set grid ytics", f"set key {style.key}",
            f"set xrange [-0.6:{len(groups) - 0.4}]",
            "set xtics (" + ", ".join(f"{_quote(g)} {i}" for i, g in enumerate(groups)) + ")",
            "set offsets 0, 0, graph 0.08, graph 0.08"]
    ys = [y for n in names for values in series[n].values() for y in values]
    ys += [y for n in extra for v in summary[n].values() for y in v]
    ys = [y for y in ys + list((marks or {}).keys()) if math.isfinite(y) and (y > 0 or not log_y)]
    if log_y:
        body.append("set logscale y")
        if ys:  # the dots' own range: gnuplot's log axis would round out to whole decades
            low, high = min(ys) / 1.25, max(ys) * 1.25
            body.append(f"set yrange [{low:g}:{high:g}]")
            tics = log_tics(low, high)
            if tics:
                body.append("set ytics (" + ", ".join(f'"{t:g}" {t:g}' for t in tics) + ")")
    if not labels_fit(groups, (style.size or canvas)[0], style):
        body += ["set xtics rotate by -20 left", "set rmargin 16"]
    for i, (y, label) in enumerate(sorted((marks or {}).items())):
        body.append(f"set arrow {i + 1} from graph 0, first {y:g} to graph 1, first {y:g} "
                    "nohead dt 2 lw 2 lc rgb '#555555' back")
        if label:
            body.append(f"set label {i + 1} {_quote(label)} at graph 0.01, first {y:g} "
                        "offset 0, 0.7 tc rgb '#555555'")
    body.append("plot " + ", \\\n  ".join(plots))
    return _render(stem, "\n".join(body), canvas, title, style)


def _order_edges(prefix: str, observed: set[tuple[str, str]], allowed: set[tuple[str, str]],
                 counts: dict[tuple[str, str], int]) -> list[str]:
    """dot lines of one lock-order graph; node names carry `prefix` so that several
    graphs can share one picture."""
    nodes = sorted({r for e in observed | allowed for r in e})
    lines = [f"  {_quote(prefix + n)} [label={_quote(n)}];" for n in nodes]
    for held, taken in sorted(observed | allowed):
        count = counts.get((held, taken), 0)
        if (held, taken) in observed and (held, taken) in allowed:
            attrs = f'label="{count}"' if count > 1 else ""
        elif (held, taken) in observed:
            attrs = f'color=red, fontcolor=red, penwidth=2, label="not allowed ({count})"'
        else:
            attrs = "style=dashed, color=gray60"
        lines.append(f"  {_quote(prefix + held)} -> {_quote(prefix + taken)} [{attrs}];")
    return lines


def _dot(stem: Path, lines: list[str]) -> None:
    if not shutil.which("dot"):
        raise ChartError("dot not found: apt-get install graphviz")
    dot_file = stem.with_suffix(".dot")
    dot_file.write_text("\n".join(lines) + "\n")
    for fmt in ("png", "svg"):
        result = subprocess.run(["dot", f"-T{fmt}", "-o", str(stem.with_suffix(f".{fmt}")),
                                 str(dot_file)], capture_output=True, text=True)
        if result.returncode != 0:
            raise ChartError(f"dot {dot_file} failed: {result.stderr.strip()}")


def lockorder_graph(stem: Path, kernel: str, observed: set[tuple[str, str]],
                    allowed: set[tuple[str, str]], counts: dict[tuple[str, str], int]) -> Chart:
    """The icache lock-order graph lockdep observed, by role.

    Solid: observed and allowed; red: observed but not allowed by the
    lock-order file; dashed grey: allowed, not observed in this run.
    """
    lines = [f"digraph {_quote(kernel)} {{", f"  label={_quote(kernel)}; labelloc=t;",
             "  rankdir=TB; node [shape=box, style=rounded, fontname=\"DejaVu Sans\"];",
             "  edge [fontname=\"DejaVu Sans\", fontsize=9];"]
    lines += _order_edges("", observed, allowed, counts)
    lines.append("}")
    _dot(stem, lines)
    return Chart(stem.with_suffix(".png"), stem.with_suffix(".svg"),
                 f"{kernel}: icache lock order observed")


def lockorder_graphs(stem: Path, graphs: dict[str, tuple[set, set, dict]],
                     fontsize: int = 14) -> Chart:
    """Several kernels' lock-order graphs side by side in one picture, so that they are
    drawn at one scale; each titled once, by its kernel's name."""
    lines = ["digraph orders {", "  rankdir=TB; newrank=true;",
             f"  node [shape=box, style=rounded, fontname=\"DejaVu Sans\", fontsize={fontsize}];",
             f"  edge [fontname=\"DejaVu Sans\", fontsize={fontsize - 2}];"]
    for i, (kernel, (observed, allowed, counts)) in enumerate(graphs.items()):
        lines += [f"  subgraph cluster_{i} {{", f"    label={_quote(kernel)}; "
                  f"fontname=\"DejaVu Sans Bold\"; fontsize={fontsize + 4}; color=white;"]
        lines += ["  " + line for line in _order_edges(f"{kernel}.", observed, allowed, counts)]
        lines.append("  }")
    lines.append("}")
    _dot(stem, lines)
    return Chart(stem.with_suffix(".png"), stem.with_suffix(".svg"),
                 "icache lock order observed: " + ", ".join(graphs))


def heatmap(stem: Path, title: str, columns: list[str], rows: list[str],
            values: dict[tuple[str, str], float]) -> Chart:
    """A grid of numbers (rows x columns), every cell labelled, zero included."""
    path = stem.with_suffix(".dat")
    lines = []
    for j, row in enumerate(rows):
        for i, col in enumerate(columns):
            lines.append(f"{i} {j} {_num(values.get((row, col), math.nan))}")
        lines.append("")
    path.write_text("\n".join(lines) + "\n")
    xt = ", ".join(f"{_quote(c)} {i}" for i, c in enumerate(columns))
    yt = ", ".join(f"{_quote(r)} {j}" for j, r in enumerate(rows))
    body = "\n".join([
        f"set title {_quote(title)}", f"set xtics ({xt}) rotate by 30 right",
        f"set ytics ({yt})", f"set xrange [-0.5:{len(columns) - 0.5}]",
        f"set yrange [-0.5:{len(rows) - 0.5}]", "set cbrange [0:*]",
        "set palette defined (0 '#f4f4f4', 1 '#f4a582', 5 '#b2182b')", "unset colorbox",
        f"plot {_quote(str(path))} using 1:2:3 with image notitle, "
        f"'' using 1:2:(column(3) == column(3) ? sprintf('%g', column(3)) : '-') "
        "with labels notitle"])
    return _render(stem, body, (max(600, 110 * len(columns) + 200), 140 + 45 * len(rows)),
                   title)


def scaling_bands(stem: Path, title: str, ylabel: str,
                  bands: dict[str, list[tuple[float, float, float, float]]],
                  measured: dict[str, list[tuple[float, float, float, float]]],
                  all_kernels: list[str]) -> Chart:
    """Predicted throughput against CPUs, log-log: per kernel a line (x, low, mid,
    high) between the edges of its band (over the target machines), and measured points (x, y, low, high)
    with bars."""
    names = list(bands)
    blocks = []
    for name in names:
        blocks.append(f"# {name} predicted: cpus low mid high\n" + "\n".join(
            f"{_num(x)} {_num(lo)} {_num(mid)} {_num(hi)}" for x, lo, mid, hi in bands[name]))
    for i, name in enumerate(names):
        # Nudge each kernel's points sideways (log axis: a factor) so bars stay apart.
        nudge = 1 + 0.04 * (i - (len(names) - 1) / 2)
        points = measured.get(name, [])
        blocks.append(f"# {name} measured: cpus value low high\n" + "\n".join(
            f"{_num(x * nudge)} {_num(y)} {_num(lo)} {_num(hi)}" for x, y, lo, hi in points)
            if points else f"# {name} measured: none\nNaN NaN NaN NaN")
    data = stem.with_suffix(".dat")
    data.write_text("\n\n\n".join(blocks) + "\n")
    colours = _colours(names, all_kernels)
    plots = []
    # Bands as thin edges, not fills: four translucent fills over each other turn to mud.
    # Lines differ in dash and marker as well as colour, the first drawn widest, so a
    # kernel whose prediction equals another's still shows beside it.
    for i, (name, colour) in enumerate(zip(names, colours)):
        for column in (2, 4):
            plots.append(f"{_quote(str(data))} index {i} using 1:{column} with lines lw 1 "
                         f"dt 3 lc rgb {_quote(colour)} notitle")
    for i, (name, colour) in enumerate(zip(names, colours)):
        width = 1.5 + 0.8 * (len(names) - 1 - i)
        plots.append(f"{_quote(str(data))} index {i} using 1:3 with linespoints "
                     f"lw {width:g} dt {DASHES[i % len(DASHES)]} pt {POINTS[i % len(POINTS)]} "
                     f"ps 0.7 lc rgb {_quote(colour)} title {_quote(name)}")
    for i, (name, colour) in enumerate(zip(names, colours)):
        if measured.get(name):
            plots.append(f"{_quote(str(data))} index {len(names) + i} using 1:2:3:4 with "
                         f"yerrorbars pt {POINTS[i % len(POINTS)]} ps 1.1 "
                         f"lc rgb {_quote(colour)} notitle")
    if any(measured.values()):
        plots.append("NaN with yerrorbars pt 7 ps 1.1 lc rgb '#555555' title 'measured'")
    plots.append("NaN with lines lw 1 dt 3 lc rgb '#555555' title 'band over the machines'")
    xmax = max(x for pts in bands.values() for x, *_ in pts)
    # Every bar and band edge inside the picture: a log axis has no room below zero, so
    # a bar's lower end at or below zero is drawn to the bottom edge.
    ys = [v for pts in bands.values() for _, lo, mid, hi in pts for v in (lo, mid, hi)
          if v and v > 0 and math.isfinite(v)]
    ys += [v for pts in measured.values() for _, y, lo, hi in pts for v in (y, lo, hi)
           if v and v > 0 and math.isfinite(v)]
    yrange = f"set yrange [{min(ys) / 2:g}:{max(ys) * 2:g}]" if ys else ""
    body = "\n".join([
        f"set title {_quote(title)}", "set xlabel 'CPUs'", f"set ylabel {_quote(ylabel)}",
        "set logscale x 2", "set logscale y 10", f"set xrange [0.85:{xmax * 1.1:g}]", yrange,
        "set grid xtics ytics",
        "set format y '%.0s%c'", "set key outside right top",
        "plot " + ", \\\n  ".join(plots)])
    return _render(stem, body, (760, 440), title)
