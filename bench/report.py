"""The table: each figure beside its floor, the ratio, the target and whether it was met."""

import statistics


def row(figure: str, value, floor, unit: str, ratio, target: str, met, spread=None) -> dict:
    """`spread`: the lowest and highest of the rounds' ratios, where a figure has rounds."""
    return {
        "figure": figure,
        "value": value,
        "floor": floor,
        "unit": unit,
        "ratio": ratio,
        "spread": spread,
        "target": target,
        "met": met,
    }


# Every engine call (registration, plain poll, long-poll answer, outcome) against its Django floor.
ENGINE_FLOOR_RATIO = 0.9


def load_rows(run: dict, *, throughput: str, latency: str) -> list[dict]:
    """A paired load's rows: throughput beside the Django floor (the target) and the bare floor (the median of
    the rounds' ratios), then p50 and p99 beside the Django floor's."""
    floor, real = run["floor"], run["portal"]
    ratio = statistics.median(run["ratios"])
    bare = statistics.median(run["bare_ratios"])
    rows = [
        row(
            throughput,
            real["throughput_rps"],
            floor["throughput_rps"],
            " req/s",
            ratio,
            f"≥ {ENGINE_FLOOR_RATIO}× floor",
            ratio >= ENGINE_FLOOR_RATIO and _clean(real),
            spread=(min(run["ratios"]), max(run["ratios"])),
        ),
        row(
            f"{throughput} beside the bare ASGI floor",
            real["throughput_rps"],
            run["bare"]["throughput_rps"],
            " req/s",
            bare,
            "—",
            None,
            spread=(min(run["bare_ratios"]), max(run["bare_ratios"])),
        ),
    ]
    for p in ("p50", "p99"):
        value, floor_value = real[f"{p}_ms"], floor[f"{p}_ms"]
        ratio = value / floor_value if floor_value else None
        rows.append(row(f"{latency}: {p}", value, floor_value, " ms", ratio, "—", None))
    return rows


def _clean(run: dict) -> bool:
    """A run counts only if every measured answer was a 2xx and no connection failed."""
    return run["errors"] == 0 and run["ok"] == run["requests"]


def fmt(value, unit: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.1f}{unit}" if value < 100 else f"{value:,.0f}{unit}"
    return f"{value:,}{unit}"


def table(rows: list[dict]) -> str:
    lines = [
        "| figure | value | floor | ratio (rounds' range) | target | met |",
        "|---|---:|---:|---:|---|---|",
    ]
    for r in rows:
        ratio = "—" if r["ratio"] is None else f"{r['ratio']:.2f}×"
        if r.get("spread"):
            ratio += " ({:.2f}–{:.2f})".format(*r["spread"])
        met = {True: "yes", False: "**no**", None: "—"}[r["met"]]
        lines.append(
            f"| {r['figure']} | {fmt(r['value'], r['unit'])} | {fmt(r['floor'], r['unit'])} | {ratio} |"
            f" {r['target']} | {met} |"
        )
    return "\n".join(lines)
