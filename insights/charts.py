"""Charts as inline SVG, drawn on the server: no JavaScript, no CDN, nothing for CSP to allow.

Colours are SVG presentation attributes (not style attributes), and every mark carries a
<title> so hovering (or a screen reader) gives the exact figure.
"""

from datetime import date

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

# Undeliverable (nobody could be reached) is its own outcome, apart from plain expiry.
OUTCOME_ORDER = ("approved", "rejected", "expired", "undeliverable")
COLOURS = {
    "approved": "#2e7d32",
    "rejected": "#c62828",
    "expired": "#9e9e9e",
    "undeliverable": "#6a1b9a",
    "p50": "#1565c0",
    "p90": "#ef6c00",
}
WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 720, 180, 48, 22, 8


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 90:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def about(approximate: bool) -> str:
    """The mark of a figure read from a histogram (within ±2.5 %)."""
    return "≈" if approximate else ""


def _svg(body: list[str], label: str, height: int = HEIGHT) -> SafeString:
    return mark_safe(
        f'<svg class="chart" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(label)}" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(body)}</svg>'
    )


def _axis(days: list[date], top_label: str, plot_h: int) -> list[str]:
    return [
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH}" y2="{TOP + plot_h}" stroke="#bbb"/>',
        f'<text x="{LEFT - 4}" y="{TOP + 10}" text-anchor="end" font-size="11" fill="#555">{escape(top_label)}</text>',
        f'<text x="{LEFT - 4}" y="{TOP + plot_h}" text-anchor="end" font-size="11" fill="#555">0</text>',
        f'<text x="{LEFT}" y="{HEIGHT - 6}" font-size="11" fill="#555">{days[0]:%d %b}</text>',
        f'<text x="{WIDTH}" y="{HEIGHT - 6}" text-anchor="end" font-size="11" fill="#555">{days[-1]:%d %b}</text>',
    ]


def outcomes_per_day(days: list[date], per_day: dict) -> SafeString:
    """Stacked bars: approved, rejected, expired and undeliverable requests of each day."""
    plot_h = HEIGHT - TOP - BOTTOM
    peak = max((sum(per_day[day].values()) for day in days), default=0) or 1
    step = (WIDTH - LEFT) / len(days)
    body = _axis(days, f"{peak:,}", plot_h)
    for index, day in enumerate(days):
        x, y = LEFT + index * step + 1, TOP + plot_h
        counts = per_day[day]
        title = f"{day:%a %d %b}: " + ", ".join(f"{counts[o]:,} {o}" for o in OUTCOME_ORDER)
        body.append(f"<g><title>{escape(title)}</title>")
        for outcome in OUTCOME_ORDER:
            h = counts[outcome] / peak * plot_h
            if h:
                y -= h
                body.append(
                    f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(step - 2, 1):.1f}" height="{h:.1f}" '
                    f'fill="{COLOURS[outcome]}"/>'
                )
        body.append("</g>")
    return _svg(body, "Approved, rejected, expired and undeliverable requests per day")


def decision_times(days: list[date], p50: dict, p90: dict, approximate: set | frozenset = frozenset()) -> SafeString:
    """Lines: median and 90th percentile time to decision, per day (≈ on a day read from a histogram)."""
    plot_h = HEIGHT - TOP - BOTTOM
    peak = max((v for v in list(p50.values()) + list(p90.values()) if v is not None), default=0) or 1
    step = (WIDTH - LEFT) / len(days)
    body = _axis(days, duration(peak), plot_h)
    for name, series in (("p90", p90), ("p50", p50)):
        points = [
            (LEFT + (index + 0.5) * step, TOP + plot_h - series[day] / peak * plot_h, day, series[day])
            for index, day in enumerate(days)
            if series[day] is not None
        ]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _, _ in points)
            body.append(f'<polyline points="{path}" fill="none" stroke="{COLOURS[name]}" stroke-width="2"/>')
        for x, y, day, value in points:
            body.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{COLOURS[name]}">'
                f"<title>{escape(f'{day:%a %d %b} {name}: {about(day in approximate)}{duration(value)}')}"
                "</title></circle>"
            )
    return _svg(body, "Time to decision per day, median and 90th percentile")


def breakdown_bars(rows: list) -> SafeString:
    """Horizontal stacked bars, one per config, rule or reviewer."""
    row_h, label_w = 22, 220
    height = max(len(rows), 1) * row_h + 4
    peak = max((row.total for row in rows), default=0) or 1
    body = []
    for index, row in enumerate(rows):
        y = index * row_h + 2
        body.append(
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" font-size="12" fill="#333">'
            f"{escape(row.label[:34])}</text>"
        )
        x = label_w
        title = f"{row.label}: " + ", ".join(f"{row.counts[o]:,} {o}" for o in OUTCOME_ORDER)
        body.append(f"<g><title>{escape(title)}</title>")
        for outcome in OUTCOME_ORDER:
            w = row.counts[outcome] / peak * (WIDTH - label_w - 60)
            if w:
                body.append(
                    f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" fill="{COLOURS[outcome]}"/>'
                )
                x += w
        body.append(f'<text x="{x + 4:.1f}" y="{y + 15}" font-size="11" fill="#555">{row.total:,}</text></g>')
    return _svg(body, "Requests by outcome", height=height)


def delivery_bars(channels: list) -> SafeString:
    """Horizontal stacked bars, one per channel: delivered, failed and pending deliveries."""
    row_h, label_w = 22, 120
    parts = (("delivered", COLOURS["approved"]), ("failed", COLOURS["rejected"]), ("pending", COLOURS["expired"]))
    height = max(len(channels), 1) * row_h + 4
    peak = max((h.delivered + h.failed + h.pending for h in channels), default=0) or 1
    body = []
    for index, health in enumerate(channels):
        y = index * row_h + 2
        body.append(
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" font-size="12" fill="#333">'
            f"{escape(health.label)}</text>"
        )
        x = label_w
        title = f"{health.label}: " + ", ".join(f"{getattr(health, name):,} {name}" for name, _ in parts)
        body.append(f"<g><title>{escape(title)}</title>")
        for name, colour in parts:
            w = getattr(health, name) / peak * (WIDTH - label_w - 60)
            if w:
                body.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{row_h - 6}" fill="{colour}"/>')
                x += w
        total = health.delivered + health.failed + health.pending
        body.append(f'<text x="{x + 4:.1f}" y="{y + 15}" font-size="11" fill="#555">{total:,}</text></g>')
    return _svg(body, "Deliveries per channel", height=height)
