"""Geometry for the server-rendered SVG charts (heatmaps and line charts): no JavaScript, no inline style.

Templates draw what these return: every heatmap cell carries its number as text and a class per
intensity bucket (so colour is never the only cue), the diagonal is outlined, and line charts carry
a marker shape and a value label per point.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

BUCKETS = 6  # heat-0 (empty) .. heat-5 (the row's largest share)
CELL = 46
LABEL_W = 64
LABEL_H = 40


def _fmt(value: float) -> str:
    return f"{value:g}" if float(value).is_integer() else f"{value:.1f}"


def heatmap(
    matrix: Sequence[Sequence[float]],
    labels: Sequence[str],
    *,
    row_title: str,
    column_title: str,
    diagonal_is_agreement: bool = True,
) -> dict[str, Any]:
    """A labels x labels grid; each cell's shade is its share of the row (so rare classes stay readable)."""
    k = len(labels)
    cells = []
    for i, row in enumerate(matrix):
        total = sum(row)
        for j, value in enumerate(row):
            share = value / total if total else 0.0
            bucket = 0 if not value else min(BUCKETS - 1, 1 + int(share * (BUCKETS - 1)))
            cells.append(
                {
                    "x": LABEL_W + j * CELL,
                    "y": LABEL_H + i * CELL,
                    "cx": LABEL_W + j * CELL + CELL / 2,
                    "cy": LABEL_H + i * CELL + CELL / 2 + 5,
                    "value": _fmt(value),
                    "bucket": bucket,
                    "diagonal": diagonal_is_agreement and i == j,
                    "title": f"{row_title} {labels[i]}, {column_title} {labels[j]}: {_fmt(value)} ({share:.0%} of row)",
                }
            )
    return {
        "width": LABEL_W + k * CELL + 8,
        "height": LABEL_H + k * CELL + 8,
        "cell": CELL,
        "cells": cells,
        "columns": [{"x": LABEL_W + j * CELL + CELL / 2, "label": label} for j, label in enumerate(labels)],
        "rows": [{"y": LABEL_H + i * CELL + CELL / 2 + 5, "label": label} for i, label in enumerate(labels)],
        "row_title": row_title,
        "column_title": column_title,
        "title_x": LABEL_W + k * CELL / 2,
        "label_x": LABEL_W - 8,
    }


def line_chart(
    x_labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    width: int = 560,
    height: int = 220,
) -> dict[str, Any]:
    """Lines over 0..1 (accuracy, F1) for each series; points carry their value and a per-series marker."""
    left, right, top, bottom = 44, 16, 16, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    n = len(x_labels)

    def x_at(i: int) -> float:
        return left + (plot_w / 2 if n == 1 else i * plot_w / (n - 1))

    def y_at(v: float) -> float:
        return top + (1 - v) * plot_h

    lines = []
    for index, (name, values) in enumerate(series):
        points = []
        for i, v in enumerate(values):
            if v is None:
                continue
            x, y = round(x_at(i), 1), round(y_at(v), 1)
            points.append(
                {
                    "x": x,
                    "y": y,
                    "square_x": x - 4,
                    "square_y": y - 4,
                    "triangle": f"M{x} {y - 5:.1f} l5 9 h-10 z",
                    "text_y": y - 8,
                    "value": f"{v:.2f}",
                    "label": x_labels[i],
                }
            )
        lines.append(
            {
                "name": name,
                "index": index,
                "points": points,
                "polyline": " ".join(f"{p['x']},{p['y']}" for p in points),
            }
        )
    return {
        "width": width,
        "height": height,
        "lines": lines,
        "grid": [{"y": round(y_at(v), 1), "label": f"{v:.1f}"} for v in (0.0, 0.25, 0.5, 0.75, 1.0)],
        "x_ticks": [{"x": round(x_at(i), 1), "label": label} for i, label in enumerate(x_labels)],
        "left": left,
        "tick_x": left - 6,
        "right": width - right,
        "bottom": height - bottom,
        "tick_y": height - bottom + 18,
    }


def interval_chart(rows: Sequence[tuple[str, Any]], *, width: int = 560, row_height: int = 26) -> dict[str, Any]:
    """Estimates on a shared 0..1 axis: a dot per value and a bar for its 95% interval, labelled in text.

    `rows` are (label, estimate) with estimate.value, .low and .high (low/high may be None: dot only).
    """
    left, right, top = 230, 24, 20
    plot_w = width - left - right

    def x_at(v: float) -> float:
        return round(left + max(0.0, min(1.0, v)) * plot_w, 1)

    items = []
    for i, (label, estimate) in enumerate(rows):
        y = top + i * row_height + row_height / 2
        low, high = estimate.low, estimate.high
        items.append(
            {
                "label": label,
                "y": y,
                "text_y": y + 4,
                "x": x_at(estimate.value),
                "low_x": x_at(low) if low is not None else None,
                "high_x": x_at(high) if high is not None else None,
                "value": f"{estimate.value:.3f}",
                "interval": f"[{low:.3f}, {high:.3f}]" if low is not None and high is not None else "no interval",
            }
        )
    height = top + len(rows) * row_height + 24
    return {
        "width": width,
        "height": height,
        "rows": items,
        "label_x": left - 8,
        "axis_y": height - 18,
        "ticks": [{"x": x_at(v), "label": f"{v:.2f}"} for v in (0.0, 0.25, 0.5, 0.75, 1.0)],
        "top": top - 6,
    }


# --- the charts of the quality and comparison pages -----------------------------------------------------


def quality_charts(quality: Any, selected: Any) -> dict[str, Any]:
    """The judge page's charts: confusion heatmap, trend over versions, accuracy intervals, per-class F1."""
    counted = bool(selected and selected.overall.n)
    return {
        "heatmap": heatmap(selected.overall.confusion, selected.overall.labels, row_title="Gold", column_title="Judge")
        if counted
        else None,
        "trend": trend_chart(quality) if quality and len(quality.trend) > 1 else None,
        "intervals": accuracy_intervals(selected) if selected else None,
        "per_class": [
            {"label": label, "f1": selected.overall.per_class_f1.get(label), "support": selected.overall.support[label]}
            for label in selected.overall.labels
        ]
        if counted
        else [],
    }


def trend_chart(quality: Any) -> dict:
    """Accuracy, macro-F1 and kappa of each version, oldest first."""
    return line_chart(
        [v.version.version for v in quality.trend],
        [
            ("Accuracy", [v.overall.accuracy.value for v in quality.trend]),
            ("Macro-F1", [v.overall.macro_f1.value for v in quality.trend]),
            ("Cohen's kappa", [v.overall.kappa.value for v in quality.trend]),
        ],
    )


def accuracy_intervals(selected: Any) -> dict | None:
    """Accuracy estimates of the version side by side, each with its 95% interval."""
    rows = [
        (f"unresolved left out (n={n})" if c == "excluded" else f"unresolved wrong (n={n})", e)
        for c, (n, e) in selected.accuracy.items()
    ]
    if selected.qa is not None and selected.qa.accuracy.value is not None:
        rows.append((f"QA sample, Hajek (n={selected.qa.with_gold})", selected.qa.accuracy))
    for row in selected.pass_rates:
        if row.ppi is not None and row.human is not None:
            rows.append((f"{row.language} pass rate, judge (n={row.n_judged})", row.raw))
            rows.append((f"{row.language} pass rate, humans (n={row.n_labelled})", row.human))
            rows.append((f"{row.language} pass rate, PPI", row.ppi))
    rows = [(label, e) for label, e in rows if e.value is not None]
    return interval_chart(rows) if rows else None


def comparison_charts(comparison: Any, *, a: Any, b: Any) -> dict[str, Any]:
    """The compare page's heatmaps: how labels moved from A to B, and A's own rerun noise."""
    return {
        "movement_chart": heatmap(
            comparison.movement.matrix,
            comparison.movement.labels,
            row_title=f"{a.version}",
            column_title=f"{b.version}",
        )
        if comparison and comparison.compared
        else None,
        "noise_chart": heatmap(
            comparison.noise_movement.matrix,
            comparison.noise_movement.labels,
            row_title=f"{a.version} run",
            column_title=f"{a.version} rerun",
        )
        if comparison and comparison.noise.n
        else None,
    }
