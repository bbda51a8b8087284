"""`iomimic model show`: a model at a glance."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from iomimic.model import chain_edges, chain_initial, stats_shares
from iomimic.report import human_bytes, table


def _dist(d: dict[str, Any]) -> str:
    kind = d["kind"]
    if kind == "empirical":
        q = d["quantiles_ns"]
        return f"empirical, median {q[len(q) // 2] / 1e3:,.1f} µs ({len(q)} quantiles)"
    params = ", ".join(f"{k}={v / 1e3 if k.endswith('_ns') else v:,.4g}" for k, v in d.items() if k != "kind")
    return f"{kind} ({params.replace('_ns', '_us')})"


def _stays(buckets: list[dict] | None) -> str:
    """A top-level state's stays: kept (visits of up to so many requests) or as its self-loop
    gives them."""
    if not buckets:
        return "self-loop"
    return f"kept: {min(b['from'] for b in buckets):,}–{max(b['to'] for b in buckets) - 1:,} a visit"


def _runs(state: dict[str, Any]) -> str:
    """A top-level state's runs (per request class: how many, how many re-started where an
    earlier one did) and whether its occupancy profile steers the walk."""
    out = []
    for r in state.get("runs") or []:
        fresh = sum(f[3] for f in r["fresh"])
        restart = r.get("restart", 0.0)
        runs = round(fresh / (1 - restart)) if restart < 1 else fresh
        sizes = r["sizes"]
        size = human_bytes(max(zip(sizes["p"], sizes["bytes"]))[1])
        what = "reads" if r["op"] == 0 else "writes and trims"
        out.append(f"{what} of {size}: {runs:,} runs, {100 * restart:.0f}% re-started")
    if state.get("profile"):
        out.append("occupancy profile")
    return "\n".join(out) or "-"


def _stats(s: dict[str, Any] | None) -> str:
    if not s:
        return "thread's"
    s = stats_shares(s)
    sizes = sorted(zip(s["sizes"]["p"], s["sizes"]["bytes"]), reverse=True)[:2]
    size = ", ".join(f"{human_bytes(b)} {100 * p:.0f}%" for p, b in sizes)
    return (
        f"rd {100 * s['ops'][0]:.0f}% seq {100 * s['sequential']:.0f}% reuse {100 * s['reuse']:.0f}% · {size}"
    )


def _count(chain: dict[str, Any]) -> tuple[int, int]:
    states = len(chain["states"])
    edges = sum(len(r["to"]) for r in chain["transitions"])
    for s in chain["states"]:
        if s.get("children"):
            a, b = _count(s["children"])
            states, edges = states + a, edges + b
    return states, edges


def hierarchy(d: dict[str, Any], states: str = "states") -> str:
    """Levels x states of a model; a mix's parts each keep their own, said when they differ."""
    parts = (d.get("selection") or {}).get("mixed") or []
    if len({(p["levels"], p["states"]) for p in parts}) > 1:
        each = ", ".join(f"{p['name']} {p['levels']} x {p['states']}" for p in parts)
        return f"up to {d['levels']} level(s) x {d['states']} {states} (parts: {each})"
    return f"{d['levels']} level(s) x {d['states']} {states}"


def _streams(t: dict[str, Any]) -> str:
    """A thread's stream, or the streams that share data it was trained from, with shares."""
    members = t.get("members") or []
    if not members:
        return str(t["stream"])
    shown = ", ".join(f"{s} ({100 * p:.0f}%)" for s, p in members[:6])
    return shown + (f", … {len(members) - 6} more" if len(members) > 6 else "")


def _windows(n: int) -> str:
    return f"{n} window" if n == 1 else f"{n} windows"


def _chosen_by(sel: dict[str, Any]) -> str:
    """How the levels were chosen: given, or each rule's choice and the IOPS it simulated."""
    if "mixed" in sel:
        return "each part's own (a mix)"
    if "levels_by_fidelity" not in sel:
        return "given" if sel else "-"
    tried = sel.get("levels_tried") or []
    iops = ", ".join(f"{t['simulated_iops']:,.0f}" for t in tried if t.get("simulated_iops") is not None)
    by_iops = sel.get("levels_by_iops")
    simulated = (
        f"simulated IOPS {by_iops} (original {sel['original_simulated_iops']:,.0f}; by level {iops})"
        if by_iops is not None
        else "simulated IOPS not used"
    )
    return f"fidelity figures {sel['levels_by_fidelity']}, {simulated}"


def _states_chosen_by(sel: dict[str, Any]) -> str:
    """How the states per level were chosen: given, by the transition ratio, or among the
    choices it could not tell apart by their models' worst deviation."""
    if "mixed" in sel:
        return "each part's own (a mix)"
    if not sel:
        return "-"
    if sel.get("states_given", True):
        return "given"
    if "states_tried" not in sel:
        return "lowest transition ratio"  # a model trained before the ratios were kept
    ratios = ", ".join(f"{t['states']}: {t['transition_ratio']:.3f}" for t in sel["states_tried"])
    ties = sel.get("states_by_fidelity")
    if not ties:
        return f"lowest transition ratio ({ratios})"
    worst = ", ".join(f"{t['states']} x {t['levels']}: {t['worst_deviation']:.2f}" for t in ties)
    return f"fewest within 0.02 of the best worst deviation ({worst}), ratios within 2 % ({ratios})"


def _population(sel: dict[str, Any]) -> str:
    """Whether re-use follows the trace's stated population, and why."""
    p = sel.get("population")
    if not p:
        return "-"
    if p.get("given"):
        return f"{'kept' if p['kept'] else 'not kept'} (--population {'on' if p['kept'] else 'off'})"
    if "mean_deviation_with" not in p:
        return f"not judged: it would re-use {100 * p.get('reused_share', 0):.1f} % of the requests"
    verdict = "kept" if p["kept"] else "not kept"
    return (
        f"{verdict}: mean deviation {p['mean_deviation_with']:.3f} with it, "
        f"{p['mean_deviation_without']:.3f} without (in targets)"
    )


def render_model(model, console: Console, max_states: int = 16) -> None:
    d = model.data
    head = table(f"model {d['name']}", show_header=False)
    head.add_column("", style="bold")
    head.add_column("")
    total_states = total_edges = 0
    for t in d["threads"]:
        a, b = _count(t["chain"])
        total_states, total_edges = total_states + a, total_edges + b
    for row in (
        ("source", str(d.get("source") or "-")),
        ("trained on", f"{d['requests']:,} requests over {d['duration_ns'] / 1e9:,.3f} s"),
        ("hierarchy", hierarchy(d, "states per level")),
        ("states chosen by", _states_chosen_by(d.get("selection") or {})),
        ("levels chosen by", _chosen_by(d.get("selection") or {})),
        ("re-use by population", _population(d.get("selection") or {})),
        ("threads", f"{len(d['threads'])}"),
        ("states / transitions", f"{total_states:,} / {total_edges:,}"),
        ("volumes", ", ".join(f"{v['name']} ({human_bytes(v['span_bytes'])})" for v in d["volumes"])),
        ("rate profile", f"{_windows(len(d['rate']['shares']))} of {d['rate']['window_ns'] / 1e9:g} s"),
    ):
        head.add_row(*row)
    console.print(head)
    threads = table("threads")
    for c in ("thread", "stream", "weight", "mix", "inter-arrival", "reuse", "align"):
        threads.add_column(c)
    for t in d["threads"]:
        reuse = f"{len(t['reuse']['buckets'])} buckets" if t.get("reuse") else "off"
        threads.add_row(
            t["name"],
            _streams(t),
            f"{t['weight']:.4g}",
            _stats(t["defaults"]),
            _dist(t["defaults"]["interarrival"]),
            reuse,
            human_bytes(t["alignment"]),
        )
    console.print(threads)
    for t in d["threads"][:4]:
        chain = t["chain"]
        st = table(f"{t['name']}: top-level states")
        for c in ("state", "volume", "range", "start share", "stays", "runs", "top transitions (p: stats)"):
            st.add_column(c)
        rows, initial = chain_edges(chain), chain_initial(chain)
        for i, s in enumerate(chain["states"][:max_states]):
            edges = sorted(rows[i], key=lambda e: -e["p"])[:3]
            tr = "\n".join(f"→{e['to']} {e['p']:.2f}: {_stats(e.get('stats'))}" for e in edges) or "-"
            name = d["volumes"][s["volume"]]["name"]
            st.add_row(
                str(i),
                name,
                f"{human_bytes(s['start'])} – {human_bytes(s['end'])}",
                f"{initial[i]:.3f}",
                _stays(s.get("stays")),
                _runs(s),
                tr,
            )
        if len(chain["states"]) > max_states:
            st.add_row("…", f"{len(chain['states']) - max_states} more (--max-states)", "", "", "", "", "")
        console.print(st)
