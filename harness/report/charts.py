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


def _render(stem: Path, body: str, size: tuple[int, int], title: str) -> Chart:
    """Run one gnuplot body twice: PNG and SVG."""
    if not shutil.which("gnuplot"):
        raise ChartError("gnuplot not found: apt-get install gnuplot-nox")
    w, h = size
    script = "\n".join([
        f"set terminal pngcairo size {w},{h} font {_quote(FONT)} noenhanced",
        f"set output {_quote(str(stem.with_suffix('.png')))}",
        body,
        "unset multiplot",
        f"set terminal svg size {w},{h} font {_quote(FONT)} noenhanced background rgb 'white'",
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


def _colours(kernels: list[str], all_kernels: list[str]) -> list[str]:
    return [PALETTE[all_kernels.index(k) % len(PALETTE)] if k in all_kernels
            else PALETTE[-1] for k in kernels]


def lines_with_errors(stem: Path, title: str, xlabel: str, ylabel: str,
                      series: dict[str, list[tuple[float, float, float]]],
                      all_kernels: list[str], xtics: list[str] | None = None) -> Chart:
    """One line per series: points (x, mean, half-width of the 95% interval)."""
    names = list(series)
    blocks = []
    for i, name in enumerate(names):
        # Nudge each series sideways a little so error bars do not hide each other.
        nudge = (i - (len(names) - 1) / 2) * 0.04
        points = sorted(series[name])
        blocks.append(f"# {name}\n" + "\n".join(
            f"{_num(x + nudge)} {_num(y)} {_num(e if math.isfinite(e) else 0.0)}"
            for x, y, e in points))
    stem.with_suffix(".dat").write_text("\n\n\n".join(blocks) + "\n")
    colours = _colours(names, all_kernels)
    plots = [f"{_quote(str(stem.with_suffix('.dat')))} index {i} using 1:2:3 with yerrorlines "
             f"lw 2 pt 7 lc rgb {_quote(c)} title {_quote(n)}"
             for i, (n, c) in enumerate(zip(names, colours))]
    tics = ""
    if xtics:
        tics = "set xtics (" + ", ".join(f"{_quote(t)} {i}" for i, t in enumerate(xtics)) + ")"
    else:
        xs = sorted({x for pts in series.values() for x, _, _ in pts})
        tics = "set xtics (" + ", ".join(f"{_quote(f'{x:g}')} {x:g}" for x in xs) + ")"
        if len(xs) == 1:
            tics += f"\nset xrange [{xs[0] - 1:g}:{xs[0] + 1:g}]"
    body = "\n".join([
        f"set title {_quote(title)}", f"set xlabel {_quote(xlabel)}",
        f"set ylabel {_quote(ylabel)}", "set grid ytics", "set key outside right top",
        "set yrange [0:*]", "set offsets 0.2, 0.2, graph 0.1, 0", tics,
        "plot " + ", \\\n  ".join(plots)])
    return _render(stem, body, (760, 420), title)


MAX_WIDTH = 2400  # pixels


def clustered_bars(stem: Path, title: str, groups: list[str], kernels: list[str],
                   panels: list[tuple[str, dict[tuple[str, str], float]]],
                   all_kernels: list[str]) -> Chart:
    """Bars grouped by `groups` (x axis), one bar per kernel, one panel per metric.

    panels: (y label, {(group, kernel): value}); a missing value draws no bar.
    """
    files = []
    for p, (ylabel, values) in enumerate(panels):
        path = stem.with_name(f"{stem.name}.{p}.dat")
        lines = ["# group " + " ".join(_quote(k) for k in kernels)]
        for g in groups:
            lines.append(_quote(g) + " " + " ".join(_num(values.get((g, k), math.nan))
                                                    for k in kernels))
        path.write_text("\n".join(lines) + "\n")
        files.append((path, ylabel))
    colours = _colours(kernels, all_kernels)
    n = len(kernels)
    body = [f"set multiplot layout {len(panels)},1 title {_quote(title)}",
            "set style data histogram", "set style histogram cluster gap 1",
            "set style fill solid 0.85 border -1", "set boxwidth 0.9", "set grid ytics",
            "set key outside right top", "set yrange [0:*]", "set xtics nomirror",
            "set offsets 0, 0, graph 0.1, 0"]
    for (path, ylabel), (_, values) in zip(files, panels):
        # gnuplot refuses a histogram column without any valid point.
        present = [i for i, k in enumerate(kernels) if any((g, k) in values for g in groups)]
        plots = [f"{_quote(str(path))} using {i + 2}:xtic(1) lc rgb {_quote(colours[i])} "
                 f"title {_quote(kernels[i])}" for i in present]
        body += [f"set ylabel {_quote(ylabel)}", "plot " + ", \\\n  ".join(plots)]
    # Many groups: slant their names and keep the picture a picture.
    if len(groups) > 8:
        body.insert(1, "set xtics rotate by -35 left")
    height = 200 + 230 * len(panels) + (160 if len(groups) > 8 else 0)
    width = min(MAX_WIDTH, max(760, 120 + 26 * n * max(1, len(groups))))
    return _render(stem, "\n".join(body), (width, height), title)


def lockorder_graph(stem: Path, kernel: str, observed: set[tuple[str, str]],
                    allowed: set[tuple[str, str]], counts: dict[tuple[str, str], int]) -> Chart:
    """The icache lock-order graph lockdep observed, by role.

    Solid: observed and allowed; red: observed but not allowed by the
    lock-order file; dashed grey: allowed, not observed in this run.
    """
    if not shutil.which("dot"):
        raise ChartError("dot not found: apt-get install graphviz")
    nodes = sorted({r for e in observed | allowed for r in e})
    lines = [f"digraph {_quote(kernel)} {{", f"  label={_quote(kernel)}; labelloc=t;",
             "  rankdir=TB; node [shape=box, style=rounded, fontname=\"DejaVu Sans\"];",
             "  edge [fontname=\"DejaVu Sans\", fontsize=9];"]
    lines += [f"  {_quote(n)};" for n in nodes]
    for held, taken in sorted(observed | allowed):
        count = counts.get((held, taken), 0)
        if (held, taken) in observed and (held, taken) in allowed:
            attrs = f'label="{count}"' if count > 1 else ""
        elif (held, taken) in observed:
            attrs = f'color=red, fontcolor=red, penwidth=2, label="not allowed ({count})"'
        else:
            attrs = "style=dashed, color=gray60"
        lines.append(f"  {_quote(held)} -> {_quote(taken)} [{attrs}];")
    lines.append("}")
    dot_file = stem.with_suffix(".dot")
    dot_file.write_text("\n".join(lines) + "\n")
    for fmt in ("png", "svg"):
        result = subprocess.run(["dot", f"-T{fmt}", "-o", str(stem.with_suffix(f".{fmt}")),
                                 str(dot_file)], capture_output=True, text=True)
        if result.returncode != 0:
            raise ChartError(f"dot {dot_file} failed: {result.stderr.strip()}")
    return Chart(stem.with_suffix(".png"), stem.with_suffix(".svg"),
                 f"{kernel}: icache lock order observed")


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
    high) inside a shaded band, and measured points (x, y, low, high) with bars."""
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
    for i, (name, colour) in enumerate(zip(names, colours)):
        plots.append(f"{_quote(str(data))} index {i} using 1:2:4 with filledcurves "
                     f"fs transparent solid 0.15 noborder lc rgb {_quote(colour)} notitle")
        plots.append(f"{_quote(str(data))} index {i} using 1:3 with lines lw 2 "
                     f"lc rgb {_quote(colour)} title {_quote(name)}")
    for i, (name, colour) in enumerate(zip(names, colours)):
        if measured.get(name):
            plots.append(f"{_quote(str(data))} index {len(names) + i} using 1:2:3:4 with "
                         f"yerrorbars pt 7 ps 0.8 lc rgb {_quote(colour)} notitle")
    if any(measured.values()):
        # One key entry for every kernel's measured points, in the kernels' colours.
        plots.append("NaN with yerrorbars pt 7 ps 0.8 lc rgb '#555555' title 'measured'")
    xmax = max(x for pts in bands.values() for x, *_ in pts)
    body = "\n".join([
        f"set title {_quote(title)}", "set xlabel 'CPUs'", f"set ylabel {_quote(ylabel)}",
        "set logscale x 2", "set logscale y 10", f"set xrange [0.85:{xmax * 1.1:g}]",
        "set grid xtics ytics",
        "set format y '%.0s%c'", "set key outside right top",
        "plot " + ", \\\n  ".join(plots)])
    return _render(stem, body, (760, 440), title)
