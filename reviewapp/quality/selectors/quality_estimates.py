"""Run-to-run spread, the QA-sample estimate and prediction-powered pass rates of one version."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from reviewapp.models import Judge, JudgeVersion, ReviewItem, Verdict
from reviewapp.quality.selectors import outcomes
from reviewapp.quality.selectors.quality_pairs import Observation, TargetVerdicts
from reviewapp.quality.selectors.quality_slice import Convention, Gold, TargetKey, slice_labels
from scoring import agreement, classification, estimates
from scoring.records import plain, record_dict

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
            **record_dict(self, "n", "resolved", "unresolved", "failed", "right"),
            "accuracy_excluded": agreement.rounded(self.accuracy_excluded),
            "accuracy_wrong": agreement.rounded(self.accuracy_wrong),
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
            classification.classification_report(g, j, labels=slice_labels(judge, g, j), n_boot=0).macro_f1.value
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
            **record_dict(self, "language", "n_judged", "n_labelled"),
            "judge_raw": plain(self.raw),
            "human_only": plain(self.human),
            "ppi": plain(self.ppi),
            "width_ratio": agreement.rounded(self.width_ratio),
            **record_dict(self, "method", "note"),
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
