"""Reads for judge quality: (judge verdict, gold) pairs of one judge version on one explicit slice,
version comparisons and reviewer statistics, each in a fixed number of queries whatever the data size.

A slice is datasets, a sweep, a language (regional variants included) and a date range of the
verdicts. Every figure is about one version on one slice; its label set is the judge's bounded
scale, or for an open label set the labels of the slice's own pairs, never other versions' or other
datasets' labels.

Gold for a target is the one `selectors.gold` picks (adjudicated > unanimous > imported; excluded
never). A gold label and a verdict become comparable outcomes through `selectors.outcomes`: a pair
whose gold is on another field than the one the judge is scored on is refused and counted by reason,
never scored; a conversion that applies is named.

A version's verdict on a target is the first run of the latest sweep in the slice (of the chosen sweep
when there is one); the next observation of the same version (run 1 of that sweep, or an earlier
sweep) is the rerun used as the noise baseline.

Unresolved answers are excluded by default; with `unresolved="wrong"` (EVA's convention) they count
as wrong in a fixed denominator. Both accuracies are always computed and shown side by side.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal

from django.db.models import Q

from scoring import agreement, estimates
from scoring import outcomes as scoring_outcomes

from ..access import language_match_q
from ..models import (
    Adjudication,
    Dataset,
    GoldLabel,
    Judge,
    JudgeVersion,
    Review,
    ReviewItem,
    Sweep,
    Turn,
    Verdict,
)
from . import leakage, outcomes
from .gold import winning_gold, winning_label

TargetKey = tuple[int, int | None]  # (conversation id, turn id or None)
Convention = Literal["excluded", "wrong"]
CONVENTIONS: tuple[Convention, ...] = ("excluded", "wrong")
UNRESOLVED_LABEL = "unresolved"
DISPUTE_REASONS = {
    ReviewItem.Reason.UNRESOLVED,
    ReviewItem.Reason.UNCERTAIN,
    ReviewItem.Reason.RUNS_DISAGREE,
    ReviewItem.Reason.JUDGES_DISAGREE,
    ReviewItem.Reason.HIGH_VARIANCE,
    ReviewItem.Reason.VERSION_MOVED,
    ReviewItem.Reason.GOLD_DISAGREES,
}
# The statuses a judge's answer can have; a verdict of any other status says the judge did not rate the
# target at all, so it is neither scored nor counted as unresolved.
RATED = (Verdict.Status.RESOLVED, Verdict.Status.UNRESOLVED, Verdict.Status.ERROR)
TREND_BOOTSTRAP = 0
MOVED_SHOWN = 200
ESTIMATORS = {
    "accuracy": "Wilson score interval (95%)",
    "macro_f1": "conversation-level bootstrap (95%), macro average over the classes present in the slice",
    "kappa": "conversation-level bootstrap (95%)",
    "qa": "Hajek estimator (weights 1 / inclusion probability)",
    "runs": "mean and sample standard deviation over the runs of one sweep on the same targets",
}


def _key(row: dict, prefix: str = "") -> TargetKey:
    return (row[f"{prefix}conversation_id"], row[f"{prefix}turn_id"])


def _language_q(language: str, field: str) -> Q:
    return language_match_q(language, field) if language else Q()


def outcome(judge: Judge, *, rating: float | None, passed: bool | None, label: str = "") -> str | None:
    """The outcome value `judge` is scored on for one answer, or None when it has none (see selectors.outcomes)."""
    return outcomes.outcome_for(judge, rating=rating, passed=passed, label=label).value


def scale_labels(judge: Judge) -> list[str]:
    return outcomes.scale_labels(judge) or []


def slice_labels(judge: Judge, *columns: Iterable[str]) -> list[str]:
    """The judge's bounded scale, else the labels the slice's own pairs use (numbers in numeric order)."""
    fixed = outcomes.scale_labels(judge)
    if fixed is not None:
        return list(fixed)
    return agreement.label_order(*[list(c) for c in columns])


# --- the slice ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Slice:
    """What a figure is about besides the version: datasets, a sweep, a language, verdict dates."""

    dataset_ids: tuple[int, ...] = ()
    sweep_id: int | None = None
    language: str = ""
    date_from: date | None = None
    date_to: date | None = None
    unresolved: Convention = "excluded"
    dataset_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.unresolved not in CONVENTIONS:
            raise ValueError(f"unresolved is excluded or wrong, not {self.unresolved!r}")

    def verdict_q(self, prefix: str = "") -> Q:
        q = _language_q(self.language, f"{prefix}conversation__language")
        if self.dataset_ids:
            q &= Q(**{f"{prefix}conversation__dataset_id__in": list(self.dataset_ids)})
        if self.sweep_id is not None:
            q &= Q(**{f"{prefix}sweep_id": self.sweep_id})
        if self.date_from is not None:
            q &= Q(**{f"{prefix}created_at__date__gte": self.date_from})
        if self.date_to is not None:
            q &= Q(**{f"{prefix}created_at__date__lte": self.date_to})
        return q

    def target_q(self, prefix: str = "") -> Q:
        """The slice's targets, for rows that hang off a conversation (gold, items, reviews)."""
        q = _language_q(self.language, f"{prefix}conversation__language")
        if self.dataset_ids:
            q &= Q(**{f"{prefix}conversation__dataset_id__in": list(self.dataset_ids)})
        return q

    def as_dict(self) -> dict[str, Any]:
        return {
            "datasets": list(self.dataset_names) or None,
            "sweep": self.sweep_id,
            "language": self.language or None,
            "date_from": self.date_from.isoformat() if self.date_from else None,
            "date_to": self.date_to.isoformat() if self.date_to else None,
            "unresolved": self.unresolved,
        }

    def describe(self) -> str:
        parts = []
        if self.dataset_names:
            parts.append("datasets " + ", ".join(self.dataset_names))
        if self.sweep_id is not None:
            parts.append(f"sweep {self.sweep_id}")
        if self.language:
            parts.append(f"language {self.language}")
        if self.date_from or self.date_to:
            parts.append(f"verdicts {self.date_from or '…'} to {self.date_to or '…'}")
        return "; ".join(parts) or "every dataset, sweep, language and date"


class SliceError(ValueError):
    """A slice naming a dataset or sweep that does not exist, or dates in the wrong order."""


def slice_for(
    *,
    datasets: Iterable[str] = (),
    sweep_id: int | None = None,
    language: str = "",
    date_from: date | None = None,
    date_to: date | None = None,
    unresolved: str = "excluded",
) -> Slice:
    """The slice these filters name: one query for the datasets, one for the sweep; unknown ones are errors."""
    names = list(dict.fromkeys(n for n in datasets if n))
    found = dict(Dataset.objects.filter(name__in=names).values_list("name", "pk")) if names else {}
    missing = [n for n in names if n not in found]
    if missing:
        raise SliceError(f"No dataset named {', '.join(repr(n) for n in missing)}.")
    if sweep_id is not None and not Sweep.objects.filter(pk=sweep_id).exists():
        raise SliceError(f"No sweep {sweep_id}.")
    if date_from and date_to and date_from > date_to:
        raise SliceError(f"The date range starts on {date_from}, after it ends ({date_to}).")
    if unresolved not in CONVENTIONS:
        raise SliceError(f"Unresolved answers are excluded or wrong, not {unresolved!r}.")
    return Slice(
        dataset_ids=tuple(found[n] for n in names),
        dataset_names=tuple(names),
        sweep_id=sweep_id,
        language=language.strip(),
        date_from=date_from,
        date_to=date_to,
        unresolved=unresolved,  # type: ignore[arg-type]
    )


# --- gold -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gold:
    """A target's winning gold label as the judge's outcome (value None when refused, with the reason)."""

    outcome: str | None
    source: str
    categories: tuple[str, ...] = ()
    refused: str = ""
    conversion: str = ""
    sub_scores: dict[str, Any] = field(default_factory=dict)  # a weighted judge's 0-100 sub-scores, when given


def _as_gold(judge: Judge, label: GoldLabel) -> Gold:
    o = outcomes.outcome_for(judge, rating=label.rating, passed=label.passed, label=label.label, source="gold")
    given = (label.metadata or {}).get("sub_scores") if judge.scale == Judge.Scale.WEIGHTED else None
    return Gold(
        o.value,
        label.source,
        tuple(label.failure_modes or ()),
        o.refused,
        o.conversion,
        dict(given) if isinstance(given, dict) else {},
    )


def judge_gold(*, judge: Judge, language: str = "", slice: Slice | None = None) -> dict[TargetKey, Gold]:
    """The winning gold of every target of `judge` in the slice, as outcomes: one query."""
    slice = slice or Slice(language=language)
    labels = winning_gold(judge=judge, language=slice.language, dataset_ids=slice.dataset_ids)
    return {target: _as_gold(judge, label) for target, label in labels.items()}


@dataclass
class ReviewRow:
    review_id: int
    item_id: int
    reviewer_id: int
    target: TargetKey
    language: str
    outcome: str | None


def _review_rows(judge: Judge, slice: Slice) -> list[ReviewRow]:
    """Every review of the judge's items in the slice's targets: one query."""
    rows = []
    for r in (
        Review.objects.filter(slice.target_q("item__"), item__judge=judge)
        .order_by("item_id", "created_at", "pk")
        .values(
            "id",
            "item_id",
            "reviewer_id",
            "rating",
            "passed",
            "label",
            "item__conversation_id",
            "item__turn_id",
            "item__language",
        )
    ):
        rows.append(
            ReviewRow(
                review_id=r["id"],
                item_id=r["item_id"],
                reviewer_id=r["reviewer_id"],
                target=_key(r, "item__"),
                language=r["item__language"],
                outcome=outcome(judge, rating=r["rating"], passed=r["passed"], label=r["label"]),
            )
        )
    return rows


# --- verdicts -------------------------------------------------------------------------------------------


@dataclass
class Observation:
    sweep_id: int
    run_index: int
    status: str
    outcome: str | None  # None when unresolved, failed or refused
    flags: list[str]
    explanation: str
    refused: str = ""
    conversion: str = ""
    sub_scores: dict[str, Any] = field(default_factory=dict)

    @property
    def resolved(self) -> bool:
        return self.status == Verdict.Status.RESOLVED


@dataclass
class TargetVerdicts:
    language: str
    runs: list[Observation] = field(default_factory=list)  # latest sweep first, then run index

    @property
    def reference(self) -> Observation:
        return self.runs[0]

    @property
    def rerun(self) -> Observation | None:
        return self.runs[1] if len(self.runs) > 1 else None


_VERDICT_FIELDS = (
    "judge_version_id",
    "sweep_id",
    "run_index",
    "conversation_id",
    "turn_id",
    "status",
    "rating",
    "passed",
    "label",
    "flags",
    "explanation",
    "sub_scores",
    "conversation__language",
)


def _observation(judge: Judge, v: dict) -> Observation:
    status = v["status"]
    value, refused, conversion = None, "", ""
    if status == Verdict.Status.RESOLVED:
        o = outcomes.outcome_for(judge, rating=v["rating"], passed=v["passed"], label=v["label"], source="judge")
        value, refused, conversion = o.value, o.refused, o.conversion
    return Observation(
        sweep_id=v["sweep_id"],
        run_index=v["run_index"],
        status=status,
        outcome=value,
        flags=list(v.get("flags") or []),
        explanation=v.get("explanation") or "",
        refused=refused,
        conversion=conversion,
        sub_scores=dict(v.get("sub_scores") or {}),
    )


def _verdicts(
    judge: Judge, version_ids: list[int], slice: Slice, *, with_text: bool = True
) -> dict[int, dict[TargetKey, TargetVerdicts]]:
    """version id -> target -> its observations in the slice, in one query."""
    out: dict[int, dict[TargetKey, TargetVerdicts]] = {pk: {} for pk in version_ids}
    fields = (
        _VERDICT_FIELDS
        if with_text
        else tuple(f for f in _VERDICT_FIELDS if f not in ("flags", "explanation", "sub_scores"))
    )
    rows = (
        Verdict.objects.filter(slice.verdict_q(), judge_version_id__in=version_ids, status__in=RATED)
        .order_by("judge_version_id", "conversation_id", "turn_id", "-sweep_id", "run_index")
        .values(*fields)
    )
    for v in rows.iterator(chunk_size=5000):
        targets = out[v["judge_version_id"]]
        target = targets.get(_key(v))
        if target is None:
            target = targets[_key(v)] = TargetVerdicts(language=v["conversation__language"])
        target.runs.append(_observation(judge, v))
    return out


def _items(judge: Judge, slice: Slice) -> dict[TargetKey, dict[str, Any]]:
    return {
        _key(i): i
        for i in ReviewItem.objects.filter(slice.target_q(), judge=judge).values(
            "id", "conversation_id", "turn_id", "reasons", "sample_weight", "status", "adjudication__id"
        )
    }


# --- pairs of one version on one slice ---------------------------------------------------------------------


@dataclass
class Pair:
    target: TargetKey
    language: str
    gold: str
    judge: str  # UNRESOLVED_LABEL when the judge's answer is unresolved or failed
    gold_source: str
    weight: float
    qa_sample: bool
    disputed: bool
    resolved: bool = True


@dataclass
class PairSet:
    """The version's reference verdicts on the slice against gold: what is scored and what is not."""

    targets: int = 0
    unresolved: int = 0  # reference verdicts unresolved (the judge's answer could not be used)
    failed: int = 0  # reference verdicts that are errors (the call failed)
    without_gold: int = 0
    pairs: list[Pair] = field(default_factory=list)  # resolved and scored
    unresolved_pairs: list[Pair] = field(default_factory=list)  # gold scored, the judge unresolved or failed
    refused: Counter = field(default_factory=Counter)  # reason -> pairs
    conversions: Counter = field(default_factory=Counter)  # named rule -> pairs

    def under(self, convention: Convention) -> list[Pair]:
        return self.pairs if convention == "excluded" else self.pairs + self.unresolved_pairs


def _item_facts(items: dict[TargetKey, dict], target: TargetKey) -> tuple[float, bool, bool]:
    item = items.get(target)
    reasons = set(item["reasons"]) if item else set()
    qa = ReviewItem.Reason.QA_SAMPLE in reasons
    disputed = bool(reasons & DISPUTE_REASONS) or bool(item and item["adjudication__id"])
    return (float(item["sample_weight"]) if item else 1.0), qa, disputed


def pair_set(
    targets: dict[TargetKey, TargetVerdicts], gold: dict[TargetKey, Gold], items: dict[TargetKey, dict]
) -> PairSet:
    out = PairSet(targets=len(targets))
    for target, verdicts in targets.items():
        ref = verdicts.reference
        if ref.status == Verdict.Status.ERROR:
            out.failed += 1
        elif not ref.resolved:
            out.unresolved += 1
        label = gold.get(target)
        if label is None:
            out.without_gold += 1
            continue
        if label.outcome is None:
            out.refused[label.refused] += 1
            continue
        if ref.resolved and ref.outcome is None:
            out.refused[ref.refused] += 1
            continue
        for conversion in (
            label.conversion and f"gold {label.conversion}",
            ref.conversion and f"judge {ref.conversion}",
        ):
            if conversion:
                out.conversions[conversion] += 1
        weight, qa, disputed = _item_facts(items, target)
        pair = Pair(
            target=target,
            language=verdicts.language,
            gold=label.outcome,
            judge=ref.outcome if ref.resolved and ref.outcome is not None else UNRESOLVED_LABEL,
            gold_source=label.source,
            weight=weight,
            qa_sample=qa,
            disputed=disputed,
            resolved=ref.resolved,
        )
        (out.pairs if ref.resolved else out.unresolved_pairs).append(pair)
    return out


def _labels_for(judge: Judge, pairs: Sequence[Pair]) -> list[str]:
    labels = slice_labels(judge, [p.gold for p in pairs], [p.judge for p in pairs if p.resolved])
    if any(not p.resolved for p in pairs):
        labels = [*labels, UNRESOLVED_LABEL]
    return labels


def _report(judge: Judge, pairs: Sequence[Pair], *, n_boot: int, weighted: bool = False):
    """Wilson accuracy (at the effective size of conversation clusters), conversation-bootstrap F1 and kappa."""
    return agreement.classification_report(
        [p.gold for p in pairs],
        [p.judge for p in pairs],
        labels=_labels_for(judge, pairs),
        weights=[p.weight for p in pairs] if weighted else None,
        clusters=[p.target[0] for p in pairs],
        n_boot=n_boot,
    )


def _right(pairs: Sequence[Pair]) -> int:
    return sum(1 for p in pairs if p.resolved and p.gold == p.judge)


# --- runs -----------------------------------------------------------------------------------------------


@dataclass
class RunRow:
    run_index: int
    n: int  # targets with gold that every run of the sweep covers
    resolved: int
    unresolved: int
    failed: int
    right: int

    @property
    def accuracy_excluded(self) -> float | None:
        return agreement.run_accuracy(self.counts, unresolved="excluded")

    @property
    def accuracy_wrong(self) -> float | None:
        return agreement.run_accuracy(self.counts, unresolved="wrong")

    @property
    def counts(self) -> agreement.RunCounts:
        return agreement.RunCounts(targets=self.n, correct=self.right, unresolved=self.unresolved, failed=self.failed)

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_index,
            "n": self.n,
            "resolved": self.resolved,
            "unresolved": self.unresolved,
            "failed": self.failed,
            "right": self.right,
            "accuracy_excluded": agreement._round(self.accuracy_excluded),
            "accuracy_wrong": agreement._round(self.accuracy_wrong),
        }


@dataclass
class Runs:
    sweep_id: int | None
    rows: list[RunRow]
    dropped: int  # targets with gold in some run of the sweep but not in every run
    excluded: agreement.Spread
    wrong: agreement.Spread
    macro_f1: agreement.Spread

    @property
    def unresolved_after_first(self) -> int:
        return sum(r.unresolved + r.failed for r in self.rows if r.run_index != self.rows[0].run_index)

    def spread(self, convention: Convention) -> agreement.Spread:
        return self.excluded if convention == "excluded" else self.wrong


def _pick_run_sweep(targets: dict[TargetKey, TargetVerdicts], sweep_id: int | None) -> int | None:
    """The sweep whose runs are compared: the chosen one, else the latest with the most runs."""
    if sweep_id is not None:
        return sweep_id
    runs_per_sweep: dict[int, set[int]] = defaultdict(set)
    for verdicts in targets.values():
        for obs in verdicts.runs:
            runs_per_sweep[obs.sweep_id].add(obs.run_index)
    if not runs_per_sweep:
        return None
    return max(runs_per_sweep, key=lambda s: (len(runs_per_sweep[s]), s))


def run_spreads(
    judge: Judge, targets: dict[TargetKey, TargetVerdicts], gold: dict[TargetKey, Gold], sweep_id: int | None
) -> Runs:
    """Accuracy of each run of ONE sweep on the gold targets every run covers, under both conventions."""
    sweep = _pick_run_sweep(targets, sweep_id)
    by_run: dict[int, dict[TargetKey, Observation]] = defaultdict(dict)
    for target, verdicts in targets.items():
        label = gold.get(target)
        if label is None or label.outcome is None:
            continue
        for obs in verdicts.runs:
            if obs.sweep_id == sweep and not (obs.resolved and obs.outcome is None):
                by_run[obs.run_index][target] = obs
    if not by_run:
        empty = agreement.mean_std([])
        return Runs(sweep, [], 0, empty, empty, empty)
    covered = [set(observed) for observed in by_run.values()]
    common = set.intersection(*covered)
    dropped = len(set.union(*covered) - common)
    rows, f1s = [], []
    for run_index in sorted(by_run):
        observed = by_run[run_index]
        resolved = [t for t in common if observed[t].resolved]
        right = sum(1 for t in resolved if observed[t].outcome == gold[t].outcome)
        rows.append(
            RunRow(
                run_index=run_index,
                n=len(common),
                resolved=len(resolved),
                unresolved=sum(1 for t in common if observed[t].status == Verdict.Status.UNRESOLVED),
                failed=sum(1 for t in common if observed[t].status == Verdict.Status.ERROR),
                right=right,
            )
        )
        g = [gold[t].outcome or "" for t in resolved]
        j = [observed[t].outcome or "" for t in resolved]
        f1s.append(
            agreement.classification_report(g, j, labels=slice_labels(judge, g, j), n_boot=0).macro_f1.value
            if resolved
            else None
        )
    return Runs(
        sweep_id=sweep,
        rows=rows,
        dropped=dropped,
        excluded=agreement.runs_accuracy([r.counts for r in rows], unresolved="excluded"),
        wrong=agreement.runs_accuracy([r.counts for r in rows], unresolved="wrong"),
        macro_f1=agreement.mean_std(f1s),
    )


# --- quality of one version -------------------------------------------------------------------------------


@dataclass
class QaEstimate:
    """How often the judge is right on everything it scored, from the random QA sample."""

    estimate: estimates.WeightedProportion

    @property
    def estimator(self) -> str:
        return {"hajek": "Hajek", "horvitz-thompson": "Horvitz-Thompson"}[self.estimate.estimator] + (
            " (weights 1 / inclusion probability; " + self.estimate.interval + ")"
        )

    @property
    def sampled(self) -> int:
        return self.estimate.n_sampled

    @property
    def with_gold(self) -> int:
        return self.estimate.n_labelled

    @property
    def missing(self) -> int:
        return self.estimate.missing

    @property
    def accuracy(self) -> agreement.Estimate:
        e = self.estimate
        return agreement.Estimate(e.value, e.low, e.high)

    def as_dict(self) -> dict[str, Any]:
        return {
            "estimator": self.estimate.estimator,
            "sampled": self.sampled,
            "with_gold": self.with_gold,
            "missing": self.missing,
            "accuracy": self.accuracy.as_dict(),
            "detail": self.estimate.as_dict(),
        }


def qa_estimate(
    targets: dict[TargetKey, TargetVerdicts],
    gold: dict[TargetKey, Gold],
    items: dict[TargetKey, dict],
    convention: Convention,
) -> QaEstimate:
    """Hajek estimate over the QA items among the version's targets: each item stands for 1 / probability
    targets of its language; an item still without gold is counted as missing, never as right or wrong.

    Under "excluded" a sampled target whose answer is unresolved is outside the population being
    estimated (resolved answers); under "wrong" it is a wrong answer. A refused pair is left out."""
    sample = []
    for target, verdicts in targets.items():
        item = items.get(target)
        if item is None or ReviewItem.Reason.QA_SAMPLE not in set(item["reasons"]):
            continue
        ref = verdicts.reference
        if not ref.resolved and convention == "excluded":
            continue
        label = gold.get(target)
        if (label is not None and label.outcome is None) or (ref.resolved and ref.outcome is None):
            continue
        value = None if label is None else (ref.resolved and ref.outcome == label.outcome)
        probability = min(1.0, 1.0 / float(item["sample_weight"])) if item["sample_weight"] else 1.0
        sample.append(estimates.SampleItem(stratum=verdicts.language, probability=probability, value=value))
    return QaEstimate(estimates.proportion_estimate(sample, estimator="hajek"))


# --- prediction-powered pass rates -------------------------------------------------------------------------


@dataclass
class PassRate:
    """One version x language: the judge's own pass rate, the human-only estimate and the PPI-corrected rate."""

    language: str
    n_judged: int  # resolved verdicts of the version in the language
    n_labelled: int  # of them, QA-sampled with gold
    raw: agreement.Estimate
    human: agreement.Estimate | None
    ppi: agreement.Estimate | None
    width_ratio: float | None
    method: str
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "language": self.language,
            "n_judged": self.n_judged,
            "n_labelled": self.n_labelled,
            "judge_raw": self.raw.as_dict(),
            "human_only": self.human.as_dict() if self.human else None,
            "ppi": self.ppi.as_dict() if self.ppi else None,
            "width_ratio": agreement._round(self.width_ratio),
            "method": self.method,
            "note": self.note,
        }


def _passes(rule: outcomes.OutcomeRule, value: str | None) -> bool | None:
    if value is None:
        return None
    if rule.derived_from == "ordinal":
        threshold = rule.threshold()
        return None if threshold is None else float(value) >= threshold
    return value == "pass"


def pass_rates(
    version: JudgeVersion,
    targets: dict[TargetKey, TargetVerdicts],
    gold: dict[TargetKey, Gold],
    items: dict[TargetKey, dict],
) -> tuple[list[PassRate], str]:
    """Per language: PPI on the random QA sample with gold (the labelled set) and the other resolved verdicts.

    The human labels must be a uniform random sample of the language's targets: the QA sample is one
    (simple random within each language stratum); disagreement-picked items never enter."""
    rule = outcomes.pass_fail_rule(version.judge, version)
    if rule is None:
        return [], "This judge has no pass/fail view (an ordinal version without a declared pass threshold)."
    by_language: dict[str, tuple[list[bool], list[bool], list[bool]]] = defaultdict(lambda: ([], [], []))
    for target, verdicts in targets.items():
        ref = verdicts.reference
        judged = _passes(rule, ref.outcome) if ref.resolved else None
        if judged is None:
            continue
        human_list, labelled, unlabelled = by_language[verdicts.language]
        item = items.get(target)
        label = gold.get(target)
        truth = _passes(rule, label.outcome) if label is not None else None
        if item is not None and ReviewItem.Reason.QA_SAMPLE in set(item["reasons"]) and truth is not None:
            human_list.append(truth)
            labelled.append(judged)
        else:
            unlabelled.append(judged)
    rows = []
    for language, (human, labelled, unlabelled) in sorted(by_language.items()):
        judged = labelled + unlabelled
        raw = agreement.proportion_interval(sum(judged), len(judged))
        if len(human) < 2 or not unlabelled:
            rows.append(
                PassRate(language, len(judged), len(human), raw, None, None, None, "", "too few QA labels for PPI")
            )
            continue
        result = estimates.prediction_powered_rate(human, labelled, unlabelled)
        rows.append(
            PassRate(
                language, len(judged), len(human), raw, result.human, result.ppi, result.width_ratio, result.method
            )
        )
    return rows, ""


@dataclass
class VersionQuality:
    version: JudgeVersion
    slice: Slice
    scored: PairSet
    overall: agreement.ClassificationReport
    accuracy: dict[str, tuple[int, agreement.Estimate]] = field(default_factory=dict)  # convention -> (n, estimate)
    by_language: dict[str, agreement.ClassificationReport] = field(default_factory=dict)
    qa_weighted: agreement.ClassificationReport | None = None
    qa_unweighted: agreement.ClassificationReport | None = None
    qa: QaEstimate | None = None
    pass_rates: list[PassRate] = field(default_factory=list)
    pass_rates_note: str = ""
    sub_scores: dict[str, scoring_outcomes.SubScoreDifference] = field(default_factory=dict)
    disputed: agreement.ClassificationReport | None = None
    runs: Runs | None = None
    gold_sources: dict[str, int] = field(default_factory=dict)
    excluded_gold: int = 0  # gold targets left out: this version was drafted from them (selectors/leakage.py)

    @property
    def targets(self) -> int:
        return self.scored.targets

    @property
    def unresolved(self) -> int:
        return self.scored.unresolved

    @property
    def pairs(self) -> list[Pair]:
        return self.scored.pairs

    @property
    def runs_accuracy(self) -> agreement.Spread | None:
        return self.runs.spread(self.slice.unresolved) if self.runs else None

    @property
    def runs_macro_f1(self) -> agreement.Spread | None:
        return self.runs.macro_f1 if self.runs else None

    @property
    def refused_statement(self) -> list[tuple[int, str]]:
        return sorted(((n, reason) for reason, n in self.scored.refused.items()), reverse=True)

    def as_dict(self) -> dict[str, Any]:
        out = {
            "judge": self.version.judge.slug,
            "version": self.version.version,
            "slice": self.slice.as_dict(),
            "unresolved_convention": self.slice.unresolved,
            "estimators": ESTIMATORS,
            "targets": self.targets,
            "unresolved": self.scored.unresolved,
            "failed": self.scored.failed,
            "without_gold": self.scored.without_gold,
            "refused": {"n": sum(self.scored.refused.values()), "reasons": dict(self.scored.refused)},
            "conversions": dict(self.scored.conversions),
            "gold_sources": self.gold_sources,
            **self.overall.as_dict(),
            "accuracy_excluded": _accuracy_dict(self.accuracy.get("excluded")),
            "accuracy_wrong": _accuracy_dict(self.accuracy.get("wrong")),
            "by_language": {lang: r.as_dict() for lang, r in self.by_language.items()},
        }
        for name in ("qa_weighted", "qa_unweighted", "disputed"):
            report = getattr(self, name)
            out[name] = report.as_dict() if report else None
        out["qa_sample"] = self.qa.as_dict() if self.qa else None
        out["pass_rates"] = {"rows": [r.as_dict() for r in self.pass_rates], "note": self.pass_rates_note}
        out["evidence"] = self.overall.evidence.as_dict() if self.overall.evidence else None
        out["sub_scores"] = {name: d.as_dict() for name, d in self.sub_scores.items()}
        out["runs_accuracy"] = self.runs_accuracy.as_dict() if self.runs_accuracy else None
        out["runs_macro_f1"] = self.runs_macro_f1.as_dict() if self.runs_macro_f1 else None
        if self.runs is not None:
            out["runs_accuracy_excluded"] = self.runs.excluded.as_dict()
            out["runs_accuracy_wrong"] = self.runs.wrong.as_dict()
            out["runs"] = {
                "sweep": self.runs.sweep_id,
                "dropped_targets": self.runs.dropped,
                "unresolved_after_first_run": self.runs.unresolved_after_first,
                "per_run": [r.as_dict() for r in self.runs.rows],
            }
        return out


def _accuracy_dict(entry: tuple[int, agreement.Estimate] | None) -> dict[str, Any] | None:
    if entry is None:
        return None
    n, estimate = entry
    return {"n": n, **estimate.as_dict()}


def _accuracy_under(judge: Judge, pairs: Sequence[Pair]) -> tuple[int, agreement.Estimate]:
    return len(pairs), _report(judge, pairs, n_boot=0).accuracy


def version_quality(
    *,
    version: JudgeVersion,
    targets: dict[TargetKey, TargetVerdicts],
    gold: dict[TargetKey, Gold],
    items: dict[TargetKey, dict],
    n_boot: int,
    slice: Slice | None = None,
    detail: bool = True,
) -> VersionQuality:
    slice = slice or Slice()
    judge = version.judge
    scored = pair_set(targets, gold, items)
    chosen = scored.under(slice.unresolved)
    quality = VersionQuality(
        version=version,
        slice=slice,
        scored=scored,
        overall=_report(judge, chosen, n_boot=n_boot),
        gold_sources=dict(Counter(p.gold_source for p in chosen)),
    )
    quality.accuracy = {c: _accuracy_under(judge, scored.under(c)) for c in CONVENTIONS}
    if not detail:
        return quality
    by_language: dict[str, list[Pair]] = defaultdict(list)
    for pair in chosen:
        by_language[pair.language].append(pair)
    quality.by_language = {lang: _report(judge, rows, n_boot=n_boot) for lang, rows in sorted(by_language.items())}
    qa = [p for p in scored.pairs if p.qa_sample]
    quality.qa_weighted = _report(judge, qa, n_boot=n_boot, weighted=True)
    quality.qa_unweighted = _report(judge, qa, n_boot=n_boot)
    quality.qa = qa_estimate(targets, gold, items, slice.unresolved)
    quality.pass_rates, quality.pass_rates_note = pass_rates(version, targets, gold, items)
    if judge.scale == Judge.Scale.WEIGHTED:
        # Sub-scores are compared apart from the pass/fail outcome: mean absolute difference per sub-metric.
        sub_pairs = [
            (gold[t].sub_scores, v.reference.sub_scores)
            for t, v in targets.items()
            if t in gold and gold[t].sub_scores and v.reference.resolved and v.reference.sub_scores
        ]
        quality.sub_scores = scoring_outcomes.sub_score_differences(sub_pairs) if sub_pairs else {}
    quality.disputed = _report(judge, [p for p in chosen if p.disputed], n_boot=n_boot)
    quality.runs = run_spreads(judge, targets, gold, slice.sweep_id)
    return quality


@dataclass
class JudgeQuality:
    judge: Judge
    versions: list[JudgeVersion]
    selected: VersionQuality | None
    trend: list[VersionQuality]
    labels: list[str]
    reviewer_alpha: dict[str, dict[str, Any]]  # language -> {alpha, units, agreement}
    language: str
    slice: Slice = field(default_factory=Slice)


def judge_versions(*, judge: Judge) -> list[JudgeVersion]:
    return list(
        JudgeVersion.objects.filter(judge=judge).select_related("judge", "provenance").order_by("created_at", "pk")
    )


def judge_quality(
    *,
    judge: Judge,
    version: JudgeVersion | None = None,
    language: str = "",
    n_boot: int = agreement.DEFAULT_BOOTSTRAP,
    versions: list[JudgeVersion] | None = None,
    slice: Slice | None = None,
) -> JudgeQuality:
    """Every version of `judge` on the slice (the trend), and the chosen version (default: the latest) in
    detail: per language, QA sample, disputed items, runs. Five queries."""
    slice = slice or Slice(language=language)
    versions = versions if versions is not None else judge_versions(judge=judge)
    if version is None and versions:
        version = versions[-1]
    reviews = _review_rows(judge, slice)
    gold = judge_gold(judge=judge, slice=slice)
    items = _items(judge, slice)
    verdicts = _verdicts(judge, [v.pk for v in versions], slice)
    trend = [
        version_quality(
            version=v,
            targets=verdicts[v.pk],
            gold=leakage.held_out(gold, leakage.excluded_of(v)),
            items=items,
            n_boot=TREND_BOOTSTRAP,
            slice=slice,
            detail=False,
        )
        for v in versions
    ]
    selected = None
    if version is not None:
        excluded = leakage.excluded_of(version)
        selected = version_quality(
            version=version,
            targets=verdicts.get(version.pk, {}),
            gold=leakage.held_out(gold, excluded),
            items=items,
            n_boot=n_boot,
            slice=slice,
        )
        selected.excluded_gold = sum(1 for t in excluded if t in gold)
    return JudgeQuality(
        judge=judge,
        versions=versions,
        selected=selected,
        trend=trend,
        labels=selected.overall.labels if selected else scale_labels(judge),
        reviewer_alpha=reviewer_alpha(reviews, level="ordinal" if judge.scale == Judge.Scale.ORDINAL else "nominal"),
        language=slice.language,
        slice=slice,
    )


def reviewer_alpha(reviews: list[ReviewRow], *, level: agreement.Level = "nominal") -> dict[str, dict[str, Any]]:
    """Krippendorff's alpha between reviewers per language (and overall), over items with two or more reviews."""
    units_by_language: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for row in reviews:
        if row.outcome is not None:
            units_by_language[row.language][row.item_id].append(row.outcome)
            units_by_language[""][row.item_id].append(row.outcome)
    out = {}
    for lang in sorted(units_by_language):
        units = [u for u in units_by_language[lang].values() if len(u) >= 2]
        agree, pairs = agreement.pairwise_agreement(units)
        out[lang] = {
            "alpha": agreement.krippendorff_alpha(units, level=level),
            "units": len(units),
            "pairwise": agree / pairs if pairs else None,
        }
    return out


# --- before / after --------------------------------------------------------------------------------


@dataclass
class MovedTarget:
    target: TargetKey
    language: str
    before: str
    after: str
    categories: list[str]
    category_source: str
    text: str = ""
    explanation: str = ""


@dataclass
class MoveSummary:
    before: str
    after: str
    count: int
    categories: list[tuple[str, int]]
    uncategorised: int

    @property
    def statement(self) -> str:
        if not self.categories:
            return f"None of the {self.count} {self.before} \u2192 {self.after} moves has a reviewer category yet."
        top, top_count = self.categories[0]
        return f"{top_count} of {self.count} {self.before} \u2192 {self.after} moves are {top}."


@dataclass
class Comparison:
    a: JudgeVersion
    b: JudgeVersion
    language: str
    compared: int
    movement: agreement.Movement
    moves: list[MoveSummary]
    moved: list[MovedTarget]
    flags: list[tuple[str, int, int, int]]  # flag, count under A, count under B, change
    noise: agreement.NoiseComparison
    noise_movement: agreement.Movement
    gold_rows: list[dict[str, Any]]  # per language (and "all"): n, A report, B report, McNemar on right/wrong
    only_a: int
    only_b: int
    statement: str = ""
    directions: Directions | None = None  # ordinal judges: up / down moves, against the rerun's split
    excluded_gold: int = 0  # gold targets left out: either version was drafted from them

    def flags_by_name(self) -> list[tuple[str, tuple[int, int]]]:
        return [(flag, (before, after)) for flag, before, after, _ in self.flags]


def _categories(judge: Judge, slice: Slice) -> dict[TargetKey, tuple[list[str], str]]:
    """Reviewer categories per target (else the adjudication's): two queries."""
    out: dict[TargetKey, tuple[list[str], str]] = {}
    reviewed: dict[TargetKey, Counter] = defaultdict(Counter)
    for row in Review.categories.through.objects.filter(
        slice.target_q("review__item__"), review__item__judge=judge
    ).values("review__item__conversation_id", "review__item__turn_id", "category__slug"):
        reviewed[_key(row, "review__item__")][row["category__slug"]] += 1
    for target, counts in reviewed.items():
        out[target] = ([slug for slug, _ in counts.most_common()], "reviewers")
    for row in Adjudication.categories.through.objects.filter(
        slice.target_q("adjudication__item__"), adjudication__item__judge=judge
    ).values("adjudication__item__conversation_id", "adjudication__item__turn_id", "category__slug"):
        target = _key(row, "adjudication__item__")
        slugs, source = out.get(target, ([], "lead"))
        if source == "lead" and row["category__slug"] not in slugs:
            out[target] = ([*slugs, row["category__slug"]], "lead")
    return out


@dataclass
class Split:
    """Up and down moves of an ordinal judge's rating."""

    up: int = 0
    down: int = 0

    def add(self, before: str, after: str) -> None:
        if float(after) > float(before):
            self.up += 1
        elif float(after) < float(before):
            self.down += 1

    def as_dict(self) -> dict[str, int]:
        return {"up": self.up, "down": self.down}


@dataclass
class Directions:
    """A -> B moves up and down, beside the rerun of A (noise), overall, per language, per category."""

    version: Split
    noise: Split
    by_language: list[tuple[str, Split, Split]]
    by_category: list[tuple[str, Split]]

    @property
    def statement(self) -> str:
        v, n = self.version, self.noise
        return f"{v.up} up / {v.down} down from A to B, vs {n.up} / {n.down} between two runs of A."

    def as_dict(self) -> dict[str, Any]:
        return {
            "version": self.version.as_dict(),
            "noise": self.noise.as_dict(),
            "by_language": {lang: {"version": v.as_dict(), "noise": n.as_dict()} for lang, v, n in self.by_language},
            "by_category": {slug: s.as_dict() for slug, s in self.by_category},
        }


def _directions(
    common: list[TargetKey],
    before: list[str],
    after: list[str],
    noise_targets: list[TargetKey],
    noise_before: list[str],
    noise_after: list[str],
    *,
    languages: dict[TargetKey, str],
    categories: dict[TargetKey, tuple[list[str], str]],
    gold: dict[TargetKey, Gold],
) -> Directions:
    version, noise = Split(), Split()
    by_language: dict[str, tuple[Split, Split]] = defaultdict(lambda: (Split(), Split()))
    by_category: dict[str, Split] = defaultdict(Split)
    for target, x, y in zip(common, before, after, strict=True):
        version.add(x, y)
        by_language[languages[target]][0].add(x, y)
        slugs = categories.get(target, ([], ""))[0] or list(gold[target].categories if target in gold else ())
        for slug in slugs:
            by_category[slug].add(x, y)
    for target, x, y in zip(noise_targets, noise_before, noise_after, strict=True):
        noise.add(x, y)
        by_language[languages[target]][1].add(x, y)
    return Directions(
        version=version,
        noise=noise,
        by_language=[(lang, v, n) for lang, (v, n) in sorted(by_language.items())],
        by_category=sorted(by_category.items(), key=lambda kv: (-(kv[1].up + kv[1].down), kv[0])),
    )


def version_comparison(
    *,
    a: JudgeVersion,
    b: JudgeVersion,
    language: str = "",
    n_boot: int = agreement.DEFAULT_BOOTSTRAP,
    slice: Slice | None = None,
) -> Comparison:
    """A before/after comparison of two versions of one judge on the targets both scored: five queries.

    Works for turn- and conversation-level judges alike (a target is a turn or a whole conversation)."""
    slice = slice or Slice(language=language)
    language = slice.language
    judge = a.judge
    verdicts = _verdicts(judge, [a.pk, b.pk], slice)
    all_gold = judge_gold(judge=judge, slice=slice)
    excluded = leakage.excluded_of(a) | leakage.excluded_of(b)
    gold = leakage.held_out(all_gold, excluded)
    categories = _categories(judge, slice)
    a_targets, b_targets = verdicts[a.pk], verdicts[b.pk]
    common = sorted(
        (
            t
            for t in set(a_targets) & set(b_targets)
            if a_targets[t].reference.outcome is not None and b_targets[t].reference.outcome is not None
        ),
        key=lambda t: (t[0], t[1] if t[1] is not None else -1),
    )
    before = [a_targets[t].reference.outcome or "" for t in common]
    after = [b_targets[t].reference.outcome or "" for t in common]
    labels = slice_labels(judge, before, after, [g for t in common if t in gold and (g := gold[t].outcome) is not None])
    movement = agreement.movement_matrix(before, after, labels=labels)

    moved: list[MovedTarget] = []
    for target, x, y in zip(common, before, after, strict=True):
        if x != y:
            slugs, source = categories.get(target, ([], ""))
            if not slugs and target in gold and gold[target].categories:
                slugs, source = list(gold[target].categories), "gold"
            moved.append(
                MovedTarget(
                    target=target,
                    language=a_targets[target].language,
                    before=x,
                    after=y,
                    categories=slugs,
                    category_source=source,
                    explanation=b_targets[target].reference.explanation,
                )
            )
    moves = []
    for (x, y), count in sorted(movement.moves.items(), key=lambda m: (-m[1], m[0])):
        rows = [m for m in moved if (m.before, m.after) == (x, y)]
        counted = Counter(slug for m in rows for slug in m.categories)
        moves.append(MoveSummary(x, y, count, counted.most_common(), sum(1 for m in rows if not m.categories)))
    shown = moved[:MOVED_SHOWN]
    texts = dict(
        Turn.objects.filter(pk__in=[m.target[1] for m in shown if m.target[1] is not None]).values_list("pk", "text")
    )
    for m in shown:
        m.text = texts.get(m.target[1], "") if m.target[1] is not None else ""

    flags_a = Counter(f for t in common for f in a_targets[t].reference.flags)
    flags_b = Counter(f for t in common for f in b_targets[t].reference.flags)
    flags = [
        (f, flags_a.get(f, 0), flags_b.get(f, 0), flags_b.get(f, 0) - flags_a.get(f, 0))
        for f in sorted(set(flags_a) | set(flags_b))
    ]

    noise_targets = [t for t in common if (r := a_targets[t].rerun) is not None and r.outcome is not None]
    noise_before = [a_targets[t].reference.outcome or "" for t in noise_targets]
    noise_after = [a_targets[t].rerun.outcome or "" for t in noise_targets]  # type: ignore[union-attr]
    version_after = [b_targets[t].reference.outcome or "" for t in noise_targets]
    noise = agreement.movement_vs_noise(
        [x != y for x, y in zip(noise_before, version_after, strict=True)],
        [x != y for x, y in zip(noise_before, noise_after, strict=True)],
    )
    noise_movement = agreement.movement_matrix(noise_before, noise_after, labels=labels)

    gold_common = [t for t in common if t in gold and gold[t].outcome is not None]
    by_language: dict[str, list[TargetKey]] = defaultdict(list)
    for t in gold_common:
        by_language[a_targets[t].language].append(t)
    gold_rows = []
    only_a = only_b = 0
    for lang, targets in [("", gold_common), *sorted(by_language.items())]:
        g = [gold[t].outcome or "" for t in targets]
        ra = agreement.classification_report(
            g, [a_targets[t].reference.outcome or "" for t in targets], labels=labels, n_boot=n_boot
        )
        rb = agreement.classification_report(
            g, [b_targets[t].reference.outcome or "" for t in targets], labels=labels, n_boot=n_boot
        )
        right_a = [a_targets[t].reference.outcome == gold[t].outcome for t in targets]
        right_b = [b_targets[t].reference.outcome == gold[t].outcome for t in targets]
        a_only = sum(1 for x, y in zip(right_a, right_b, strict=True) if x and not y)
        b_only = sum(1 for x, y in zip(right_a, right_b, strict=True) if y and not x)
        if not lang:
            only_a, only_b = a_only, b_only
        gold_rows.append(
            {
                "language": lang,
                "n": len(targets),
                "a": ra,
                "b": rb,
                "a_only": a_only,
                "b_only": b_only,
                "p_value": agreement.mcnemar_exact(b_only, a_only),
            }
        )
    directions = None
    if outcomes.rule_for(judge).kind == "ordinal":
        directions = _directions(
            common,
            before,
            after,
            noise_targets,
            noise_before,
            noise_after,
            languages={t: a_targets[t].language for t in common},
            categories=categories,
            gold=gold,
        )
    return Comparison(
        a=a,
        b=b,
        directions=directions,
        language=language,
        compared=len(common),
        movement=movement,
        moves=moves,
        moved=shown,
        flags=flags,
        noise=noise,
        noise_movement=noise_movement,
        gold_rows=gold_rows,
        only_a=only_a,
        only_b=only_b,
        statement=noise.statement(f"{judge.slug}@{a.version}", f"{judge.slug}@{b.version}"),
        excluded_gold=sum(1 for t in excluded if t in all_gold),
    )


# --- reviewers ---------------------------------------------------------------------------------------


@dataclass
class ReviewerStats:
    reviewer_id: int
    username: str
    reviews: int = 0
    with_gold: int = 0
    agree_gold: int = 0
    peer_pairs: int = 0
    peer_agree: int = 0
    seconds: int = 0
    timed: int = 0
    languages: Counter = field(default_factory=Counter)
    categories: Counter = field(default_factory=Counter)

    @property
    def gold_agreement(self) -> float | None:
        return self.agree_gold / self.with_gold if self.with_gold else None

    @property
    def peer_agreement(self) -> float | None:
        return self.peer_agree / self.peer_pairs if self.peer_pairs else None

    @property
    def items_per_hour(self) -> float | None:
        return self.timed * 3600 / self.seconds if self.seconds else None

    @property
    def language_counts(self) -> list[tuple[str, int]]:
        return sorted(self.languages.items())

    @property
    def top_categories(self) -> list[tuple[str, int]]:
        return self.categories.most_common()


def reviewer_stats(*, reviewer_ids: list[int] | None = None, language: str = "") -> list[ReviewerStats]:
    """Each reviewer's agreement with gold (adjudicated or imported: never gold their own votes made) and
    with peers on the same items, their pace, and the categories they use: four queries."""
    judges = {j.pk: j for j in Judge.objects.all()}
    rows = list(
        Review.objects.filter(_language_q(language, "item__language"))
        .order_by("reviewer__username", "pk")
        .values(
            "id",
            "reviewer_id",
            "reviewer__username",
            "item_id",
            "item__judge_id",
            "item__conversation_id",
            "item__turn_id",
            "item__language",
            "rating",
            "passed",
            "label",
            "seconds_spent",
        )
    )
    categories: dict[int, list[str]] = defaultdict(list)
    for review_id, slug in Review.categories.through.objects.filter(
        _language_q(language, "review__item__language")
    ).values_list("review_id", "category__slug"):
        categories[review_id].append(slug)
    # Unanimous gold is left out: it is the reviewers' own votes, so agreeing with it proves nothing.
    grouped: dict[tuple[int, TargetKey], list[GoldLabel]] = defaultdict(list)
    for g in GoldLabel.objects.filter(
        _language_q(language, "conversation__language"),
        excluded=False,
        source__in=[GoldLabel.Source.ADJUDICATED, GoldLabel.Source.IMPORTED],
        conversation_id__in={r["item__conversation_id"] for r in rows},
    ).only("id", "judge_id", "conversation_id", "turn_id", "source", "rating", "passed", "label", "excluded"):
        grouped[(g.judge_id, (g.conversation_id, g.turn_id))].append(g)
    gold: dict[tuple[int, TargetKey], str] = {}
    for key, labels in grouped.items():
        best = winning_label(labels)
        value = outcome(judges[key[0]], rating=best.rating, passed=best.passed, label=best.label) if best else None
        if value is not None:
            gold[key] = value

    by_item: dict[int, list[tuple[int, str | None]]] = defaultdict(list)
    for r in rows:
        r["outcome"] = outcome(judges[r["item__judge_id"]], rating=r["rating"], passed=r["passed"], label=r["label"])
        by_item[r["item_id"]].append((r["reviewer_id"], r["outcome"]))

    stats: dict[int, ReviewerStats] = {}
    for r in rows:
        if reviewer_ids is not None and r["reviewer_id"] not in reviewer_ids:
            continue
        s = stats.setdefault(r["reviewer_id"], ReviewerStats(r["reviewer_id"], r["reviewer__username"]))
        s.reviews += 1
        s.languages[r["item__language"]] += 1
        s.categories.update(categories.get(r["id"], []))
        if r["seconds_spent"]:
            s.seconds += r["seconds_spent"]
            s.timed += 1
        truth = gold.get((r["item__judge_id"], _key(r, "item__")))
        if truth is not None and r["outcome"] is not None:
            s.with_gold += 1
            s.agree_gold += truth == r["outcome"]
        for other, value in by_item[r["item_id"]]:
            if other != r["reviewer_id"] and value is not None and r["outcome"] is not None:
                s.peer_pairs += 1
                s.peer_agree += value == r["outcome"]
    return sorted(stats.values(), key=lambda s: s.username)


# --- every judge at a glance ---------------------------------------------------------------------------


def quality_overview() -> list[tuple[Judge, list[VersionQuality]]]:
    """Every judge with each version's point estimates against gold (no intervals): five queries in all."""
    judges = {j.pk: j for j in Judge.objects.order_by("slug")}
    versions_by_judge: dict[int, list[JudgeVersion]] = defaultdict(list)
    for version in JudgeVersion.objects.select_related("judge").order_by("created_at", "pk"):
        version.judge = judges[version.judge_id]
        versions_by_judge[version.judge_id].append(version)
    version_judge = {v.pk: v.judge_id for vs in versions_by_judge.values() for v in vs}

    grouped: dict[int, dict[TargetKey, list[GoldLabel]]] = defaultdict(lambda: defaultdict(list))
    for g in GoldLabel.objects.filter(excluded=False).only(
        "id",
        "judge_id",
        "conversation_id",
        "turn_id",
        "source",
        "rating",
        "passed",
        "label",
        "failure_modes",
        "excluded",
        "metadata",
    ):
        grouped[g.judge_id][(g.conversation_id, g.turn_id)].append(g)
    gold: dict[int, dict[TargetKey, Gold]] = defaultdict(dict)
    for judge_id, targets in grouped.items():
        for target, labels in targets.items():
            best = winning_label(labels)
            if best is not None:
                gold[judge_id][target] = _as_gold(judges[judge_id], best)
    items: dict[int, dict[TargetKey, dict[str, Any]]] = defaultdict(dict)
    for i in ReviewItem.objects.values(
        "id", "judge_id", "conversation_id", "turn_id", "reasons", "sample_weight", "status", "adjudication__id"
    ):
        items[i["judge_id"]][_key(i)] = i
    verdicts: dict[int, dict[TargetKey, TargetVerdicts]] = defaultdict(dict)
    fields = tuple(f for f in _VERDICT_FIELDS if f not in ("flags", "explanation", "sub_scores"))
    for v in (
        Verdict.objects.filter(status__in=RATED)
        .order_by("judge_version_id", "conversation_id", "turn_id", "-sweep_id", "run_index")
        .values(*fields)
        .iterator(chunk_size=5000)
    ):
        judge = judges[version_judge[v["judge_version_id"]]]
        target = verdicts[v["judge_version_id"]].setdefault(_key(v), TargetVerdicts(v["conversation__language"]))
        target.runs.append(_observation(judge, v))
    return [
        (
            judge,
            [
                version_quality(
                    version=v,
                    targets=verdicts[v.pk],
                    gold=gold[judge.pk],
                    items=items[judge.pk],
                    n_boot=0,
                    detail=False,
                )
                for v in versions_by_judge[judge.pk]
            ],
        )
        for judge in judges.values()
    ]
