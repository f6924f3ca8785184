"""A snapshot's datasheet shaped for its page: the class columns and the per-language rows of counts."""

from reviewapp.models import ExportSnapshot


def datasheet_table(*, snapshot: ExportSnapshot) -> dict:
    """The datasheet, its counts, the label classes in order, each class's total and one row per
    language (language, count per class, row total). No query: the datasheet is stored on the row."""
    sheet = snapshot.datasheet or {}
    counts = sheet.get("counts") or {}
    by_class = counts.get("by_class") or {}
    classes = sorted(by_class)
    language_rows = [
        (language, [per_class.get(name, 0) for name in classes], sum(per_class.values()))
        for language, per_class in sorted((counts.get("by_language_class") or {}).items())
    ]
    return {
        "sheet": sheet,
        "counts": counts,
        "classes": classes,
        "class_totals": [by_class.get(name, 0) for name in classes],
        "language_rows": language_rows,
    }
