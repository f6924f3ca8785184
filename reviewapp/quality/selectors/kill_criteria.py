"""Kill criteria of rubric judges (scoring/rubric_import.py) checked on a sweep's gate report.

A pass-rate rule ("Any required criterion drops below 100% pass on golden set -> block PR") applies to
a sweep of its scope: the golden set (a validation dataset) or production (an agent-run dataset), or
the scope given on the command line. A variance rule ("Judge disagreement >15% on any criterion in 2x
variance check -> ... hold eval") reads the run-to-run disagreement triage stored on the sweep. Each
rule that fires gives its own message and exit code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reviewapp.judging.selectors.sweeps import OVERALL, GateReport
from reviewapp.judging.services import judges
from reviewapp.models import Dataset, JudgeVersion, Sweep
from scoring.rubric_import import SCOPE_GOLDEN, SCOPE_PRODUCTION


@dataclass
class KillHit:
    judge_version: str
    rule: dict[str, Any]
    criteria: list[tuple[str, float]]

    @property
    def message(self) -> str:
        below = ", ".join(f"{name} {rate:.1%}" for name, rate in self.criteria)
        return f"Kill criterion ({self.judge_version}): {self.rule['text']} [{below}]"

    def as_dict(self) -> dict[str, Any]:
        return {
            "judge_version": self.judge_version,
            "text": self.rule["text"],
            "action": self.rule["action"],
            "exit_code": self.rule["exit_code"],
            "criteria": [{"criterion": n, "rate": r} for n, r in self.criteria],
        }


@dataclass
class KillReport:
    scope: str
    hits: list[KillHit] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return int(self.hits[0].rule["exit_code"]) if self.hits else 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "fired": [h.as_dict() for h in self.hits],
            "not_checked": self.not_checked,
            "exit_code": self.exit_code,
        }


def sweep_scope(sweep: Sweep) -> str:
    """The set a sweep ran on, for kill criteria: its own `scope` param, else its dataset's kind."""
    scope = str((sweep.params or {}).get("scope") or "")
    if scope:
        return scope
    kind = sweep.dataset.kind if sweep.dataset_id else ""
    return {Dataset.Kind.VALIDATION: SCOPE_GOLDEN, Dataset.Kind.RUN: SCOPE_PRODUCTION}.get(kind, "")


def kill_criteria_check(*, sweep: Sweep, report: GateReport, scope: str = "") -> KillReport:
    scope = scope or sweep_scope(sweep)
    out = KillReport(scope=scope)
    rows_by_version: dict[str, list] = {}
    for row in report.rows:
        rows_by_version.setdefault(row.judge_version, []).append(row)
    variance = ((sweep.params or {}).get("variance") or {}).get("judge_versions") or {}
    for jv in JudgeVersion.objects.filter(sweeps=sweep).select_related("judge").order_by("judge__slug", "id"):
        spec = judges.judge_version_spec(jv)
        rules = (spec.params or {}).get("kill_criteria") or ()
        required = {c.name for c in spec.criteria if c.required}
        for rule in rules:
            if rule["kind"] == "pass_rate":
                if rule["scope"] != scope:
                    out.not_checked.append(f"{spec.key}: {rule['text']} (this sweep is not on the {rule['scope']} set)")
                    continue
                below = [
                    (row.criterion, row.pass_rate)
                    for row in rows_by_version.get(spec.key, ())
                    if row.criterion != OVERALL
                    and row.criterion in required
                    and row.pass_rate is not None
                    and row.pass_rate < float(rule["threshold"])
                ]
                if below:
                    out.hits.append(KillHit(spec.key, rule, below))
            elif rule["kind"] == "variance":
                measured = variance.get(str(jv.pk))
                if not measured or not measured.get("targets_with_runs"):
                    out.not_checked.append(f"{spec.key}: {rule['text']} (no target has two runs in this sweep)")
                    continue
                above = [
                    (name.removeprefix("criterion:"), float(info["rate"]))
                    for name, info in sorted(measured["criteria"].items())
                    if name.startswith("criterion:") and float(info["rate"]) > float(rule["threshold"])
                ]
                if above:
                    out.hits.append(KillHit(spec.key, rule, above))
    return out
