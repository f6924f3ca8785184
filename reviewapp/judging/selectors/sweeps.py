"""Reads for the sweep screens and the gate: sweep lists, progress, tier ratios, variance and pass rates."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef, Q, QuerySet

from reviewapp.access import language_allowed, language_q, sees_all_languages
from reviewapp.judging.services import judges
from reviewapp.models import Conversation, JudgeVersion, Sweep, Verdict
from scoring.records import record_dict
from scoring.rubric import criterion_passes

# --- access and lists --------------------------------------------------------------------------------


def _foreign_language_conversations(user):
    """Conversations of the sweep's dataset in a language the user may not see."""
    return Conversation.objects.filter(dataset_id=OuterRef("dataset_id")).exclude(language_q(user))


def sweeps_visible(*, user) -> QuerySet[Sweep]:
    """Leads and admins see every sweep; a reviewer sees sweeps whose every target is in their languages."""
    qs = Sweep.objects.select_related("dataset", "created_by").prefetch_related("judge_versions__judge")
    if sees_all_languages(user):
        return qs
    in_language = ~Q(language="") & language_q(user, "language")
    whole_dataset = Q(language="") & ~Q(dataset__isnull=True) & ~Exists(_foreign_language_conversations(user))
    return qs.filter(in_language | whole_dataset)


def check_sweep(user, sweep: Sweep) -> Sweep:
    """The access helper for one sweep (PermissionDenied when its languages are not the user's)."""
    if sees_all_languages(user):
        return sweep
    if sweep.language:
        if language_allowed(user, sweep.language):
            return sweep
    elif sweep.dataset_id and not sweep.dataset.conversations.exclude(language_q(user)).exists():
        return sweep
    raise PermissionDenied("This sweep covers languages that are not assigned to you.")


def judge_versions_for_form() -> QuerySet[JudgeVersion]:
    """Versions that can be swept: imported placeholders (verdicts without a prompt) are left out."""
    return (
        JudgeVersion.objects.select_related("judge")
        .exclude(spec__has_key="imported")
        .order_by("judge__slug", "-created_at")
    )


def runnable_judge_versions() -> QuerySet[JudgeVersion]:
    """The versions a sweep can run: `runnable_spec` accepts them (a prompt to send, a known scale, no
    audio the spec cannot send). Two queries: the candidates, then the form's list of them."""
    runnable = []
    for judge_version in judge_versions_for_form():
        try:
            judges.runnable_spec(judge_version)
        except judges.JudgeNotRunnable:
            continue
        runnable.append(judge_version.pk)
    return judge_versions_for_form().filter(pk__in=runnable)


# --- one sweep ------------------------------------------------------------------------------------------


# SVG fill attributes, not style: the CSP allows no inline style.
SEGMENT_COLORS = {
    "tier1": "#2e7d32",
    "llm": "#1565c0",
    "unresolved": "#f9a825",
    "failed": "#c62828",
    "pending": "#bdbdbd",
}


@dataclass(frozen=True)
class Segment:
    key: str
    label: str
    count: int
    x: float
    width: float
    color: str


@dataclass(frozen=True)
class SweepProgress:
    sweep: Sweep
    expected_verdicts: int
    percent: int
    running: bool
    segments: list[Segment]
    variance_rows: list[dict[str, Any]]
    variance_threshold: float | None
    triage: dict[str, Any]


def sweep_progress(*, sweep: Sweep) -> SweepProgress:
    """Progress and the tier ratio from the counters finalize keeps (no scan of the Verdict table)."""
    expected = int(sweep.params.get("expected_verdicts") or 0) or sweep.total_targets
    if sweep.status == Sweep.Status.DONE:
        percent = 100
    else:
        percent = min(99, round(100 * sweep.verdicts_written / expected)) if expected else 0
    llm_resolved = max(0, sweep.escalated - sweep.unresolved - sweep.failed)
    pending = max(0, sweep.total_targets - sweep.tier1_resolved - sweep.escalated)
    parts = [
        ("tier1", "Resolved by signatures", sweep.tier1_resolved),
        ("llm", "Resolved by the LLM", llm_resolved),
        ("unresolved", "Unresolved", sweep.unresolved),
        ("failed", "Failed", sweep.failed),
        ("pending", "Not scored yet", pending),
    ]
    total = sum(count for _, _, count in parts) or 1
    segments, x = [], 0.0
    for key, label, count in parts:
        width = round(100 * count / total, 3)
        segments.append(
            Segment(key=key, label=label, count=count, x=round(x, 3), width=width, color=SEGMENT_COLORS[key])
        )
        x += width
    variance = sweep.params.get("variance") or {}
    rows = []
    for info in (variance.get("judge_versions") or {}).values():
        for name, stats in (info.get("criteria") or {}).items():
            rows.append({"judge": info.get("label", ""), "criterion": name, **stats})
    rows.sort(key=lambda r: (not r["needs_labels"], -r["rate"], r["judge"], r["criterion"]))
    return SweepProgress(
        sweep=sweep,
        expected_verdicts=expected,
        percent=percent,
        running=sweep.status in (Sweep.Status.PENDING, Sweep.Status.RUNNING),
        segments=segments,
        variance_rows=rows,
        variance_threshold=variance.get("threshold"),
        triage=sweep.params.get("triage") or {},
    )


# --- the gate -------------------------------------------------------------------------------------------

OVERALL = "overall"


@dataclass
class GateRow:
    judge_version: str
    criterion: str
    targets: int = 0
    passed: int = 0
    failed: int = 0
    unresolved: int = 0
    not_scored: int = 0
    threshold: float | None = None
    required: bool = False
    threshold_source: str = ""

    @property
    def pass_rate(self) -> float | None:
        """Passed over every target: an unresolved verdict never counts as a pass."""
        return round(self.passed / self.targets, 4) if self.targets else None

    @property
    def resolved_pass_rate(self) -> float | None:
        decided = self.passed + self.failed
        return round(self.passed / decided, 4) if decided else None

    @property
    def ok(self) -> bool | None:
        if self.threshold is None:
            return None
        return self.pass_rate is not None and self.pass_rate >= self.threshold

    def as_dict(self) -> dict[str, Any]:
        return record_dict(
            self,
            "judge_version",
            "criterion",
            "targets",
            "passed",
            "failed",
            "unresolved",
            "not_scored",
            "pass_rate",
            "resolved_pass_rate",
            "threshold",
            "threshold_source",
            "required",
            "ok",
        )


@dataclass
class GateReport:
    sweep_id: int
    sweep_status: str
    rows: list[GateRow] = field(default_factory=list)

    @property
    def failing(self) -> list[GateRow]:
        return [row for row in self.rows if row.required and row.ok is False]

    @property
    def passed(self) -> bool:
        return self.sweep_status == Sweep.Status.DONE and not self.failing

    def as_dict(self) -> dict[str, Any]:
        return {
            "sweep": self.sweep_id,
            "status": self.sweep_status,
            "passed": self.passed,
            "failing": [f"{r.judge_version} {r.criterion}" for r in self.failing],
            "rows": [row.as_dict() for row in self.rows],
        }


def _gate_entry(value: Any) -> tuple[float | None, bool]:
    if isinstance(value, Mapping):
        threshold = value.get("threshold", value.get("min_pass_rate"))
        return (float(threshold) if threshold is not None else None), bool(value.get("required", True))
    return float(value), True


def _threshold_for(
    spec, criterion_name: str, overrides: Mapping[str, float], criterion=None
) -> tuple[float | None, bool, str]:
    """Command line first, then the spec's `gate` section (in params), then the rubric criterion itself."""
    names = [criterion_name] if criterion_name != OVERALL else [OVERALL, spec.slug]
    for name in names:
        for key in (f"{spec.slug}@{spec.version}:{name}", f"{spec.slug}:{name}", name):
            if key in overrides:
                return float(overrides[key]), True, "command line"
    gate = (spec.params or {}).get("gate")
    if gate is not None:
        if not isinstance(gate, Mapping):
            if criterion_name == OVERALL:
                threshold, required = _gate_entry(gate)
                return threshold, required, "spec gate"
        else:
            for name in names:
                if name in gate:
                    threshold, required = _gate_entry(gate[name])
                    return threshold, required, "spec gate"
            if criterion_name == OVERALL and ("threshold" in gate or "min_pass_rate" in gate):
                threshold, required = _gate_entry(gate)
                return threshold, required, "spec gate"
    if criterion is not None and 0 <= criterion.threshold <= 1:
        return float(criterion.threshold), criterion.required, "criterion threshold"
    return None, False, ""


def gate_report(*, sweep: Sweep, overrides: Mapping[str, float] | None = None) -> GateReport:
    """Pass rate per judge version and criterion on run 0 of a sweep, against its threshold."""
    overrides = overrides or {}
    report = GateReport(sweep_id=sweep.pk, sweep_status=sweep.status)
    rows_by_jv: dict[int, dict[str, GateRow]] = defaultdict(dict)
    specs = {}
    versions = JudgeVersion.objects.filter(Q(sweeps=sweep) | Q(verdicts__sweep=sweep)).select_related("judge")
    for jv in versions.distinct().order_by("judge__slug", "id"):
        spec = judges.judge_version_spec(jv)
        specs[jv.pk] = spec
        label = spec.key
        threshold, required, source = _threshold_for(spec, OVERALL, overrides)
        rows_by_jv[jv.pk][OVERALL] = GateRow(
            label, OVERALL, threshold=threshold, required=required, threshold_source=source
        )
        for criterion in spec.criteria:
            threshold, required, source = _threshold_for(spec, criterion.name, overrides, criterion)
            rows_by_jv[jv.pk][criterion.name] = GateRow(
                label, criterion.name, threshold=threshold, required=required, threshold_source=source
            )

    verdicts = (
        Verdict.objects.filter(sweep=sweep, run_index=0)
        .exclude(status=Verdict.Status.NOT_RATED)  # a turn the judge did not rate is not a target of the gate
        .values_list("judge_version_id", "status", "passed", "sub_scores", "signature__criterion")
        .iterator(chunk_size=5000)
    )
    for jv_id, status, passed, sub_scores, signature_criterion in verdicts:
        spec = specs.get(jv_id)
        if spec is None:
            continue
        rows = rows_by_jv[jv_id]
        for row in rows.values():
            row.targets += 1
        if status != Verdict.Status.RESOLVED:
            for row in rows.values():
                row.unresolved += 1
            continue
        _count(rows[OVERALL], passed)
        for criterion in spec.criteria:
            score = (sub_scores or {}).get(criterion.name)
            if score is not None:
                _count(rows[criterion.name], criterion_passes(criterion, float(score)))
            elif signature_criterion == criterion.name:
                _count(rows[criterion.name], passed)
            else:
                rows[criterion.name].not_scored += 1
    for rows in rows_by_jv.values():
        report.rows.extend(rows.values())
    return report


def _count(row: GateRow, passed: bool | None) -> None:
    if passed is True:
        row.passed += 1
    elif passed is False:
        row.failed += 1
    else:
        row.not_scored += 1


def parse_threshold(text: str) -> tuple[str, float]:
    name, sep, value = text.rpartition("=")
    if not sep or not name:
        raise ValueError(f"--threshold takes CRITERION=RATE, not {text!r}.")
    try:
        rate = float(value)
    except ValueError as exc:
        raise ValueError(f"--threshold {text!r}: {value!r} is not a number.") from exc
    if not 0 <= rate <= 1:
        raise ValueError(f"--threshold {text!r}: a pass rate is between 0 and 1.")
    return name.strip(), rate
