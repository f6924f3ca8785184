"""A rubric generator's JSON as a Tribunal rubric judge.

The file is told apart from judge YAML by its keys: a top-level ``rubric`` object holding ``criteria``
and ``judge_setup`` (plus ``edge_cases`` and ``operations``). What each part becomes:

* criteria -> rubric criteria (binary, score threshold 1) keyed by a stable identifier; the
  criterion's pass-rate threshold ("95% pass required") and required flag -> the spec's gate;
* pass/fail examples -> golden examples of the rendered prompt (``golden_cases``);
* judge_setup.variance_check -> the sweep's repeats, variance sample and disagreement threshold;
* judge_setup.uncertainty_fallback -> the unresolved rule (the prompt asks for ``"uncertain": true``
  and the parser stores such an answer as unresolved with its raw text);
* edge_cases -> cases with the criteria they test (tagged on conversations in the app);
* operations.kill_criteria -> gate rules, each with its own exit code and message.

Nothing is guessed: a threshold without a percentage, a scoring that is not binary, an edge case
naming an unknown criterion or a kill criterion in none of the known forms is refused with the file,
the line and the field.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scoring.errors import TribunalError
from scoring.records import record_dict
from scoring.specs import Criterion, JudgeSpec, RenderedPrompt, render, validate_spec

# Exit codes of the kill-criterion gate rules; 1 stays the generic gate failure.
EXIT_BLOCK = 2
EXIT_PAGE = 3
EXIT_HOLD = 4
SCOPE_GOLDEN = "golden"
SCOPE_PRODUCTION = "production"
SCOPES = (SCOPE_GOLDEN, SCOPE_PRODUCTION)

_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%")
_PASS_RATE_RULE = re.compile(
    r"^(?P<who>any required criterion|required criterion)\s+drops below\s+(?P<pct>\d+(?:\.\d+)?)\s*%\s*pass on\s+"
    r"(?P<where>.+?)\s*(?:→|->)\s*(?P<action>.+)$",
    re.IGNORECASE,
)
_VARIANCE_RULE = re.compile(
    r"^judge disagreement\s*>\s*(?P<pct>\d+(?:\.\d+)?)\s*%\s*on any criterion in\s+(?P<where>.+?)\s*(?:→|->)\s*"
    r"(?P<action>.+)$",
    re.IGNORECASE,
)
_VARIANCE_CHECK = re.compile(
    r"run judge\s+(?P<repeats>\d+)\s*[\u00d7x]\s*on\s+(?P<pct>\d+(?:\.\d+)?)\s*%.*?>\s*(?P<threshold>\d+(?:\.\d+)?)\s*%"
    r"\s*disagreement",
    re.IGNORECASE | re.DOTALL,
)
_MODEL = re.compile(r"^\s*(?P<model>[A-Za-z0-9][\w.\-]*)\s+as judge", re.IGNORECASE)
_QUOTED_TEMPLATE = re.compile(r"prompt template:\s*'(?P<template>.+)'\s*$", re.IGNORECASE | re.DOTALL)


class RubricImportError(TribunalError, ValueError):
    """A rubric generator file that cannot become a judge: says file, line and field."""


@dataclass(frozen=True)
class EdgeCaseSpec:
    position: int
    case: str
    criteria: tuple[str, ...]
    coverage: str


@dataclass(frozen=True)
class KillRule:
    text: str
    kind: str  # "pass_rate" or "variance"
    threshold: float
    scope: str  # golden | production | variance
    action: str
    exit_code: int

    def as_dict(self) -> dict[str, Any]:
        return record_dict(self)


@dataclass(frozen=True)
class GoldenCase:
    criterion: str
    expected: str  # "pass" or "fail"
    text: str


@dataclass(frozen=True)
class RubricImport:
    spec: JudgeSpec
    edge_cases: tuple[EdgeCaseSpec, ...]
    kill_rules: tuple[KillRule, ...]
    golden: tuple[GoldenCase, ...] = field(default_factory=tuple)


def is_rubric_generator(data: Any) -> bool:
    rubric = data.get("rubric") if isinstance(data, Mapping) else None
    return isinstance(rubric, Mapping) and isinstance(rubric.get("criteria"), list) and "judge_setup" in rubric


def criterion_key(name: str) -> str:
    """A stable identifier for a criterion name: lower-case words joined by underscores."""
    words = re.findall(r"[a-z0-9]+", name.lower().replace("≤", " max "))
    return "_".join(words)[:80]


class _Where:
    """Builds errors that name the file, the line of the offending value and its field path."""

    def __init__(self, text: str, source: str):
        self.text, self.source = text, source

    def line_of(self, value: Any) -> int:
        needle = json.dumps(value, ensure_ascii=False)[:60] if not isinstance(value, str) else value[:60]
        for candidate in (json.dumps(needle, ensure_ascii=False)[1:-1], needle):
            index = self.text.find(candidate)
            if index >= 0:
                return self.text.count("\n", 0, index) + 1
        return 1

    def error(self, path: str, value: Any, message: str) -> RubricImportError:
        return RubricImportError(f"{self.source}:{self.line_of(value)}: {path}: {message}")


def _text(where: _Where, data: Mapping[str, Any], key: str, path: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise where.error(f"{path}.{key}", data.get(key) or key, "must be a non-empty string")
    return value.strip()


def _percent(where: _Where, value: Any, path: str) -> float:
    found = _PERCENT.match(value) if isinstance(value, str) else None
    if found is None:
        raise where.error(path, value, f"expected a pass rate such as '95% pass', not {value!r}")
    rate = float(found.group(1)) / 100
    if not 0 <= rate <= 1:
        raise where.error(path, value, f"a pass rate is between 0% and 100%, not {found.group(1)}%")
    return rate


def _scope(where: _Where, text: str, path: str, value: str) -> str:
    lowered = text.lower()
    if "golden" in lowered:
        return SCOPE_GOLDEN
    if "production" in lowered or "nightly" in lowered:
        return SCOPE_PRODUCTION
    raise where.error(path, value, f"cannot tell which set {text!r} is (expected the golden set or production)")


def _exit_code(action: str) -> int:
    lowered = action.lower()
    if "page" in lowered or "roll back" in lowered:
        return EXIT_PAGE
    if "hold" in lowered or "escalate" in lowered:
        return EXIT_HOLD
    return EXIT_BLOCK


def kill_rule(where: _Where, text: str, path: str) -> KillRule:
    if found := _PASS_RATE_RULE.match(text.strip()):
        kind, scope = "pass_rate", _scope(where, found.group("where"), path, text)
        exit_code = _exit_code(found.group("action"))
    elif found := _VARIANCE_RULE.match(text.strip()):
        kind, scope, exit_code = "variance", "variance", EXIT_HOLD
    else:
        raise where.error(
            path,
            text,
            "a kill criterion reads 'Any required criterion drops below N% pass on <golden set | production ...> → "
            "action' or 'Judge disagreement >N% on any criterion in <check> → action'",
        )
    return KillRule(
        text=text.strip(),
        kind=kind,
        threshold=float(found.group("pct")) / 100,
        scope=scope,
        action=found.group("action").strip(),
        exit_code=exit_code,
    )


def _template(criteria: Sequence[Criterion]) -> str:
    checklist = "\n".join(f"- {c.name}: {c.description}" for c in criteria)
    shape = ", ".join(f'"{c.name}": {{{{"score": 0 | 1, "passed": true | false}}}}' for c in criteria)
    return (
        "## Conversation so far ({language_display_name})\n"
        "{conversation_turns}\n\n"
        "## Response to check (turn {turn_id}, agent)\n"
        "{turn_text}\n\n"
        "## Checklist\n"
        f"{checklist}\n"
        "{language_guidance}\n\n"
        "## Answer\n"
        "One JSON object with every item, PASS as score 1 and FAIL as score 0, and a one-sentence justification "
        "for each item in the explanation:\n"
        f'{{{{"criteria": {{{{{shape}}}}}, "explanation": "<one sentence per item>"}}}}\n'
        '"passed" must agree with "score". If you are unsure about any item, or the response is ambiguous, answer '
        '{{"uncertain": true, "explanation": "<which item and why>"}} instead.\n'
    )


def rubric_from_data(data: Mapping[str, Any], *, text: str, source: str, slug: str | None = None) -> RubricImport:
    where = _Where(text, source)
    rubric = data["rubric"]
    raw_criteria = rubric["criteria"]
    if not raw_criteria:
        raise where.error("rubric.criteria", "criteria", "a rubric needs at least one criterion")
    criteria: list[Criterion] = []
    titles: dict[str, str] = {}
    gate: dict[str, dict[str, Any]] = {}
    golden: list[GoldenCase] = []
    for index, raw in enumerate(raw_criteria):
        path = f"rubric.criteria[{index}]"
        if not isinstance(raw, Mapping):
            raise where.error(path, raw, "a criterion is an object")
        name = _text(where, raw, "name", path)
        key = criterion_key(name)
        if not key or key in titles:
            raise where.error(f"{path}.name", name, f"criterion {name!r} repeats another criterion's name")
        scoring = _text(where, raw, "scoring", path)
        if not scoring.lower().startswith("binary"):
            raise where.error(
                f"{path}.scoring", scoring, f"only binary (pass/fail) criteria are supported, not {scoring!r}"
            )
        if not isinstance(raw.get("required"), bool):
            raise where.error(f"{path}.required", name, "required must be true or false")
        rate = _percent(where, raw.get("threshold"), f"{path}.threshold")
        measures = _text(where, raw, "measures", path)
        criteria.append(Criterion(name=key, threshold=1.0, required=raw["required"], description=measures))
        titles[key] = name
        gate[key] = {"threshold": rate, "required": raw["required"], "text": str(raw["threshold"])}
        examples = raw.get("examples") or {}
        if not isinstance(examples, Mapping) or not examples:
            raise where.error(f"{path}.examples", name, "each criterion needs its pass and fail examples")
        for expected in ("pass", "fail"):
            example = examples.get(expected)
            if not isinstance(example, str) or not example.strip():
                raise where.error(f"{path}.examples.{expected}", name, f"missing the {expected} example")
            golden.append(GoldenCase(criterion=key, expected=expected, text=example.strip()))
    by_title = {title.lower(): key for key, title in titles.items()}

    setup = rubric["judge_setup"]
    if not isinstance(setup, Mapping):
        raise where.error("rubric.judge_setup", "judge_setup", "must be an object")
    approach = _text(where, setup, "approach", "rubric.judge_setup")
    variance_text = _text(where, setup, "variance_check", "rubric.judge_setup")
    uncertainty = _text(where, setup, "uncertainty_fallback", "rubric.judge_setup")
    found = _VARIANCE_CHECK.search(variance_text)
    if found is None:
        raise where.error(
            "rubric.judge_setup.variance_check",
            variance_text,
            "expected 'Run judge Nx on P% of the eval set ... >T% disagreement'",
        )
    variance = {
        "repeats": int(found.group("repeats")),
        "sample_rate": float(found.group("pct")) / 100,
        "disagreement_threshold": float(found.group("threshold")) / 100,
        "text": variance_text,
    }
    model_match = _MODEL.match(approach)
    template_match = _QUOTED_TEMPLATE.search(approach)
    system = (template_match.group("template") if template_match else approach).strip()
    system = system.replace("{", "{{").replace("}", "}}")
    system += " You answer with one JSON object and nothing else."

    edge_cases: list[EdgeCaseSpec] = []
    for index, raw in enumerate(data.get("edge_cases") or ()):
        path = f"edge_cases[{index}]"
        if not isinstance(raw, Mapping):
            raise where.error(path, raw, "an edge case is an object")
        case = _text(where, raw, "case", path)
        names = [part.strip() for part in _text(where, raw, "criterion", path).split("+")]
        keys = []
        for part in names:
            found_key = by_title.get(part.lower())
            if found_key is None:
                raise where.error(f"{path}.criterion", part, f"{part!r} is not one of the rubric's criteria")
            keys.append(found_key)
        edge_cases.append(
            EdgeCaseSpec(position=index + 1, case=case, criteria=tuple(keys), coverage=str(raw.get("coverage") or ""))
        )

    operations = data.get("operations") or {}
    if not isinstance(operations, Mapping):
        raise where.error("operations", "operations", "must be an object")
    rules = tuple(
        kill_rule(where, str(rule), f"operations.kill_criteria[{index}]")
        for index, rule in enumerate(operations.get("kill_criteria") or ())
    )
    aggregate = str(rubric.get("aggregate_scoring") or "")

    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    slug = slug or criterion_key(Path(source).stem).replace("_", "-")
    spec = JudgeSpec(
        slug=slug,
        version=f"rubric-{digest[:12]}",
        name=slug.replace("-", " ").replace("_", " "),
        description=aggregate or f"Rubric judge from {Path(source).name}",
        level="turn",
        scale="rubric",
        scale_min=0.0,
        scale_max=4.0,
        failure_modes=(),
        system_template=system,
        user_template=_template(criteria),
        template_syntax="format",
        required_keys=("criteria", "explanation"),
        criteria=tuple(criteria),
        model=model_match.group("model").lower() if model_match else None,
        params={
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "gate": gate,
            "criterion_titles": titles,
            "variance_check": variance,
            "variance_threshold": variance["disagreement_threshold"],
            "uncertainty_fallback": {"text": uncertainty, "rule": "unresolved"},
            "kill_criteria": [rule.as_dict() for rule in rules],
            "golden_examples": [{"criterion": g.criterion, "expected": g.expected, "text": g.text} for g in golden],
            "edge_cases": [
                {"position": e.position, "case": e.case, "criteria": list(e.criteria), "coverage": e.coverage}
                for e in edge_cases
            ],
            "operations": {
                k: operations[k] for k in ("cadence", "trigger", "communication", "archival") if k in operations
            },
            "aggregate_scoring": aggregate,
        },
        source=source,
    )
    validate_spec(spec)
    return RubricImport(spec=spec, edge_cases=tuple(edge_cases), kill_rules=rules, golden=tuple(golden))


def rubric_from_text(text: str, *, source: str, slug: str | None = None) -> RubricImport:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RubricImportError(f"{source}:{exc.lineno}: not valid JSON: {exc.msg}") from exc
    if not is_rubric_generator(data):
        raise RubricImportError(f"{source}:1: rubric: not a rubric generator file (no rubric.criteria and judge_setup)")
    return rubric_from_data(data, text=text, source=source, slug=slug)


def rubric_from_file(path: str | Path, *, slug: str | None = None) -> RubricImport:
    path = Path(path)
    return rubric_from_text(path.read_text(encoding="utf-8"), source=str(path), slug=slug)


def looks_like_rubric_file(path: str | Path) -> bool:
    path = Path(path)
    if not path.is_file() or path.suffix.lower() != ".json":
        return False
    try:
        return is_rubric_generator(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False


# --- golden examples of the rendered prompt -----------------------------------------------------------


@dataclass(frozen=True)
class GoldenCheck:
    case: GoldenCase
    prompt: RenderedPrompt | None
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def golden_cases(spec: JudgeSpec) -> list[GoldenCase]:
    return [
        GoldenCase(criterion=str(g["criterion"]), expected=str(g["expected"]), text=str(g["text"]))
        for g in (spec.params or {}).get("golden_examples") or ()
    ]


def golden_variables(case: GoldenCase, *, language: str = "en") -> dict[str, Any]:
    return {
        "language_display_name": "English" if language == "en" else language,
        "conversation_turns": "(the example below carries its own context)",
        "turn_id": 0,
        "turn_text": case.text,
    }


def golden_check(spec: JudgeSpec, case: GoldenCase, *, language: str = "en") -> GoldenCheck:
    """Render one example into the judge's prompt and check what the judge will read: the example
    verbatim, the criterion it tests with its definition, the answer shape for every criterion and
    the uncertainty fallback."""
    problems: list[str] = []
    try:
        prompt = render(spec, golden_variables(case, language=language), language=language)
    except (KeyError, ValueError, IndexError) as exc:
        return GoldenCheck(case=case, prompt=None, problems=(f"the prompt does not render: {exc}",))
    criterion = next((c for c in spec.criteria if c.name == case.criterion), None)
    if criterion is None:
        problems.append(f"criterion {case.criterion!r} is not in the spec")
    elif f"- {criterion.name}: {criterion.description}" not in prompt.user:
        problems.append(f"the checklist lacks {criterion.name!r} and its definition")
    if case.text not in prompt.user:
        problems.append("the example does not appear verbatim in the prompt")
    for c in spec.criteria:
        if f'"{c.name}": {{"score": 0 | 1' not in prompt.user:
            problems.append(f"the answer shape lacks {c.name!r}")
    if '"uncertain": true' not in prompt.user:
        problems.append("the prompt does not offer the uncertainty fallback")
    if "{" in prompt.system and "}" not in prompt.system:
        problems.append("the system prompt has an unbalanced brace")
    return GoldenCheck(case=case, prompt=prompt, problems=tuple(problems))


def golden_verdict_matches(case: GoldenCase, sub_scores: Mapping[str, float], spec: JudgeSpec) -> bool | None:
    """Whether a resolved answer on a golden example gives the example's expected result (None: not scored)."""
    criterion = next((c for c in spec.criteria if c.name == case.criterion), None)
    score = sub_scores.get(case.criterion)
    if criterion is None or score is None:
        return None
    return (float(score) >= criterion.threshold) == (case.expected == "pass")
