"""Column limits and code formats of what an import writes: plain functions returning a problem or "".

Lengths and ranges are those of reviewapp.models (tests/reviewapp/corpus/test_import_strict.py checks they
agree): an import never lets the database cut a string or wrap a number.
"""

from __future__ import annotations

import re
from typing import Any

# Column lengths and ranges of what an import writes (reviewapp.models; tests check they agree).
LIMITS = {
    "dataset_name": 200,
    "external_id": 200,
    "language": 35,
    "label": 100,
    "judge": 100,
    "version": 64,
}
INT32_MAX = 2**31 - 1
SMALLINT_MAX = 32767

# BCP 47 (RFC 5646) as Tribunal accepts it: a 2-3 letter language, an optional 4-letter script, an
# optional region (2 letters or 3 digits), then variants (5-8 alphanumerics, or a digit and 3
# alphanumerics). Case is kept as given. Extensions and private use (-u-, -x-) are not accepted.
BCP47 = re.compile(
    r"^[A-Za-z]{2,3}(?:-[A-Za-z]{4})?(?:-(?:[A-Za-z]{2}|[0-9]{3}))?(?:-(?:[A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*$"
)
SLUG = re.compile(r"^[-A-Za-z0-9_]+$")


def language_problem(code: str) -> str:
    """Why `code` is not a language Tribunal accepts, or ""."""
    if len(code) > LIMITS["language"]:
        return f"is {len(code)} characters long, more than the {LIMITS['language']} a language code may have"
    if not BCP47.match(code):
        return "expected a BCP 47 language code (en, fr, fr-CA, zh-Hant-TW, ...), got " + shown(code)
    return ""


def length_problem(value: str, limit_name: str) -> str:
    limit = LIMITS[limit_name]
    if len(value) > limit:
        return f"is {len(value)} characters long, more than the {limit} allowed (it would be cut, so it is refused)"
    return ""


def slug_problem(value: str) -> str:
    problem = length_problem(value, "judge")
    if problem:
        return problem
    if not SLUG.match(value):
        return f"expected a judge slug (letters, digits, - and _), got {shown(value)}"
    return ""


def shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def spec_columns_check(spec: Any) -> None:
    """Refuse a judge spec whose slug or version label would not fit its column (raises SpecError)."""
    from scoring.specs import SpecError

    where = getattr(spec, "source", "") or "judge spec"
    problem = slug_problem(spec.slug)
    if problem:
        raise SpecError(f"{where} field slug: {problem}")
    problem = length_problem(spec.version, "version")
    if problem:
        raise SpecError(f"{where} field version: {problem}")
