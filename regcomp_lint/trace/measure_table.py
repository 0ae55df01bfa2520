"""The ``--measure`` table in the terminal, laid out like Accelerate's regional-compilation
benchmark (compile time and step time per strategy, with ratios against the baselines), and
the measured verdict the recommendation quotes."""

from __future__ import annotations

from regcomp_lint.trace.measure import DESCRIPTIONS


def to_text(measured: dict) -> str:
    head = (
        f"Measured ({measured['step']} step, mixed precision {measured['mixed_precision']}, {measured['device']}; "
        f"steady = median over {measured['steps']} steps after {measured['warmup']}; each strategy in fresh processes "
        "with its own empty compiler cache)"
    )
    header = (
        "strategy",
        "cold start s",
        "× eager",
        "× full",
        "warm start s",
        "steady ms (min–max)",
        "× eager",
        "× full",
        "peak memory",
        "graphs",
        "breaks",
        "recompiles",
    )
    table = [header]
    failures = []
    for row in measured["strategies"]:
        if not row["ok"]:
            table.append((row["strategy"], "—", "", "", "", "", "", "", "", "", "", ""))
            failures.append(f"  {row['strategy']}: {row['error']}")
            continue
        table.append(
            (
                row["strategy"],
                _num(row["cold_start_s"], 2),
                _times(row["cold_vs_eager"]),
                _times(row["cold_vs_full"]),
                _num(row["warm_start_s"], 2),
                f"{_num(row['steady_median_ms'], 1)} ({_num(row['steady_min_ms'], 1)}–{_num(row['steady_max_ms'], 1)})",
                _times(row["steady_vs_eager"]),
                _times(row["steady_vs_full"]),
                f"{(row['peak_memory_bytes'] or 0) / 2**20:.0f} MiB {'RSS' if row['peak_memory_kind'] == 'peak RSS' else 'CUDA'}",
                str(row["graphs"]),
                str(row["graph_breaks"]),
                str(row["recompiles"]),
            )
        )
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    lines = [head, ""]
    for i, row in enumerate(table):
        lines.append(
            "  " + "  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths)))
        )
        if i == 0:
            lines.append("  " + "  ".join("-" * w for w in widths))
    if failures:
        lines.append("")
        lines.append("Did not run:")
        lines.extend(failures)
    lines.append("")
    lines.extend(f"  {name}: {DESCRIPTIONS[name]}" for name in _names(measured))
    verdict = verdict_lines(measured)
    if verdict:
        lines.append("")
        lines.extend(verdict)
    return "\n".join(lines) + "\n"


def verdict_lines(measured: dict) -> list[str]:
    """``regions: 5.1× faster cold start than full, steady step +3%; full pays off after 240 steps``,
    one line per compiled strategy, then the winner for the goal."""
    out = []
    for row in measured["strategies"]:
        if not row["ok"] or row["strategy"] in ("eager", "full") or row["cold_vs_full"] is None:
            continue
        cold, steady = row["cold_vs_full"], row["steady_vs_full"]
        speed = f"{1 / cold:.1f}× faster cold start" if cold < 1 else f"{cold:.1f}× slower cold start"
        line = f"{row['strategy']}: {speed} than full, steady step {_percent(steady)}"
        even = row["break_even_vs_full"]
        if even:
            line += f"; {even['after_it']} pays off after {even['steps']} steps"
        out.append(line)
    if measured["winner"]:
        out.append(f"winner for --optimize {measured['optimize']}: {measured['winner']}")
    overhead = measured["overhead"]
    if overhead["fraction"] is not None:
        out.append(
            f"(trace and measure took {overhead['total_s']:.0f} s, {overhead['fraction']:.1%} of it outside the strategies' processes)"
        )
    return out


def _names(measured: dict) -> list[str]:
    return [row["strategy"] for row in measured["strategies"]]


def _num(value, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _times(ratio) -> str:
    return "" if ratio is None else f"{ratio:.2f}×"


def _percent(ratio) -> str:
    if ratio is None:
        return "unknown"
    return f"{(ratio - 1) * 100:+.0f}%"
