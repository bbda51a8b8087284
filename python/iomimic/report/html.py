"""`iomimic report`: one self-contained HTML page about a trace, or a synthetic trace beside
its original. Every figure is inline SVG and the style is inline, so the page needs nothing
from the network (or from anywhere) when it is opened, mailed or archived.

With a synthetic trace the validation table comes first, then every figure with both traces
on the same axes; then the per-trace summary and the busiest streams.
"""

from __future__ import annotations

import html
from typing import Any

from iomimic import __version__
from iomimic.profile import summary_row
from iomimic.report import human_bytes
from iomimic.report.figures import FIGURES, Drawn, prepare, render
from iomimic.trace import Trace

#: Rows of the per-stream table.
STREAM_ROWS = 20

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1400px; color: #222;
       padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
.sub { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 0.8em 0; }
th, td { padding: 0.25em 0.8em; border-bottom: 1px solid #eee; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f6f6f6; }
td.ok { color: #217a3c; } td.missed { color: #b3261e; font-weight: 600; }
figure { margin: 1.2em 0; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-weight: 600; margin-bottom: 0.3em; }
"""

#: Marks the page as drawn once every chart has a size: what a browser test waits for.
CHECK = """
window.addEventListener("load", () => {
  const charts = document.querySelectorAll("figure[data-chart] svg");
  const drawn = [...charts].filter(svg => svg.getBoundingClientRect().width > 0).length;
  document.body.dataset.charts = charts.length;
  document.body.dataset.chartsDrawn = drawn;
});
"""


def _table(header: list[str], rows: list[list[str]], classes: list[list[str]] | None = None) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cells = []
        for j, cell in enumerate(row):
            cls = classes[i][j] if classes else ""
            cells.append(
                f'<td class="{cls}">{html.escape(cell)}</td>' if cls else f"<td>{html.escape(cell)}</td>"
            )
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _validation(result: dict[str, Any]) -> str:
    from iomimic.report.validation import validation_cells

    header, rows = validation_cells(result)
    classes = [
        ["", "", "", "ok" if r["ok"] else ("missed" if r["ok"] is False else ""), *[""] * (len(header) - 4)]
        for r in result["rows"]
    ]
    met = f"<p>{result['passed']} of {result['checked']} targets met.</p>"
    return f"<h2>Validation: original against synthetic</h2>{_table(header, rows, classes)}{met}"


def _summary(drawn: list[Drawn]) -> str:
    header = ["figure", *(d.label for d in drawn)]
    figures = [
        ("requests", lambda p: f"{p['requests']:,}"),
        ("duration", lambda p: f"{p['duration_s']:,.3f} s"),
        ("IOPS", lambda p: f"{p['iops']:,.1f}"),
        ("MB/s", lambda p: f"{p['mb_per_s']:,.2f}"),
        ("reads", lambda p: f"{100 * p['read_fraction']:.1f} %"),
        ("sequential", lambda p: f"{100 * p['sequential_fraction']:.1f} %"),
        ("mean size", lambda p: human_bytes(p["size"]["mean_bytes"])),
        ("mean gap", lambda p: f"{p['interarrival']['mean_us']:,.1f} µs"),
        ("volumes", lambda p: f"{len(p['volumes']):,}"),
        ("streams", lambda p: f"{len(p['streams']):,}"),
    ]
    rows = [[name, *(show(d.profile) for d in drawn)] for name, show in figures]
    return f"<h2>Summary</h2>{_table(header, rows)}"


def _streams(d: Drawn) -> str:
    names = d.profile.get("stream_names", {})
    groups = sorted(
        (summary_row(f"{k} ({names[k]})" if k in names else k, f) for k, f in d.profile["streams"].items()),
        key=lambda r: -r["requests"],
    )
    rows = [
        [
            r["name"],
            f"{r['requests']:,}",
            f"{100 * r['read_fraction']:.1f} %",
            f"{100 * r['sequential_fraction']:.1f} %",
            f"{r['iops']:,.1f}",
            human_bytes(r["mean_bytes"]),
            f"{r['mean_interarrival_us']:,.1f}",
        ]
        for r in groups[:STREAM_ROWS]
    ]
    more = f"<p>… and {len(groups) - STREAM_ROWS:,} more.</p>" if len(groups) > STREAM_ROWS else ""
    header = ["stream", "requests", "reads", "sequential", "IOPS", "mean size", "mean gap µs"]
    return f"<h2>Busiest streams of the {html.escape(d.label)} trace</h2>{_table(header, rows)}{more}"


def _svg(fig) -> str:
    """A figure as inline SVG (its XML prologue and doctype dropped)."""
    text = render(fig, "svg").decode()
    return text[text.index("<svg") :]


def build_page(original: Trace, synthetic: Trace | None = None, title: str | None = None) -> str:
    """The whole page as text."""
    from iomimic.validate import validate

    traces = [("original" if synthetic is not None else "trace", original)]
    if synthetic is not None:
        traces.append(("synthetic", synthetic))
    drawn = prepare(traces)
    source = original.report.get("path") or "trace"
    title = title or (f"{source} against its synthetic" if synthetic is not None else str(source))
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="sub">iomimic {__version__}: {len(original):,} requests'
        + (f" against {len(synthetic):,} synthetic" if synthetic is not None else "")
        + "</p>",
    ]
    if synthetic is not None:
        parts.append(_validation(validate(original, synthetic)))
    parts.append(_summary(drawn))
    for name, caption, build in FIGURES:
        head = f'<figure data-chart="{name}"><figcaption>{html.escape(caption)}</figcaption>'
        parts.append(f"{head}{_svg(build(drawn))}</figure>")
    parts.append(_streams(drawn[0]))
    parts.append(f"<script>{CHECK}</script></body></html>")
    return "\n".join(parts)
