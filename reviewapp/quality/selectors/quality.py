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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q

from reviewapp.models import Judge, JudgeVersion
from reviewapp.quality.selectors import leakage
from reviewapp.quality.selectors import quality_columns as columns
from reviewapp.quality.selectors import quality_reads as reads
from reviewapp.quality.selectors.quality_estimates import (
    PassRate,
    QaEstimate,
    Runs,
    pass_rates,
    qa_estimate,
    run_spreads,
)
from reviewapp.quality.selectors.quality_pairs import (
    Pair,
    PairCounts,
    TargetVerdicts,
    pair_set,
    pairs_report,
)
from reviewapp.quality.selectors.quality_slice import (
    CONVENTIONS,
    ESTIMATORS,
    TREND_BOOTSTRAP,
    Gold,
    ReviewRow,
    Slice,
    TargetKey,
    review_rows,
    scale_labels,
)
from scoring import agreement, classification
from scoring import outcomes as scoring_outcomes


@dataclass
class VersionQuality:
    version: JudgeVersion
    slice: Slice
    scored: PairCounts  # a PairSet, pairs and all, from version_quality
    overall: classification.ClassificationReport
    accuracy: dict[str, tuple[int, agreement.Estimate]] = field(default_factory=dict)  # convention -> (n, estimate)
    by_language: dict[str, classification.ClassificationReport] = field(default_factory=dict)
    qa_weighted: classification.ClassificationReport | None = None
    qa_unweighted: classification.ClassificationReport | None = None
    qa: QaEstimate | None = None
    pass_rates: list[PassRate] = field(default_factory=list)
    pass_rates_note: str = ""
    sub_scores: dict[str, scoring_outcomes.SubScoreDifference] = field(default_factory=dict)
    disputed: classification.ClassificationReport | None = None
    runs: Runs | None = None
    gold_sources: dict[str, int] = field(default_factory=dict)
    excluded_gold: int = 0  # gold targets left out: this version was drafted from them (selectors/leakage.py)

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
            "targets": self.scored.targets,
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
    return len(pairs), pairs_report(judge, pairs, n_boot=0).accuracy


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
        overall=pairs_report(judge, chosen, n_boot=n_boot),
        gold_sources=dict(Counter(p.gold_source for p in chosen)),
    )
    quality.accuracy = {c: _accuracy_under(judge, scored.under(c)) for c in CONVENTIONS}
    if not detail:
        return quality
    by_language: dict[str, list[Pair]] = defaultdict(list)
    for pair in chosen:
        by_language[pair.language].append(pair)
    quality.by_language = {lang: pairs_report(judge, rows, n_boot=n_boot) for lang, rows in sorted(by_language.items())}
    qa = [p for p in scored.pairs if p.qa_sample]
    quality.qa_weighted = pairs_report(judge, qa, n_boot=n_boot, weighted=True)
    quality.qa_unweighted = pairs_report(judge, qa, n_boot=n_boot)
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
    quality.disputed = pairs_report(judge, [p for p in chosen if p.disputed], n_boot=n_boot)
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
    detail: per language, QA sample, disputed items, runs. Five queries. The figures are
    `version_quality`'s, computed column-wise (selectors/quality_columns.py)."""
    slice = slice or Slice(language=language)
    versions = versions if versions is not None else judge_versions(judge=judge)
    if version is None and versions:
        version = versions[-1]
    reviews = review_rows(judge, slice)
    labels = columns.Labels()
    gold = reads.read_gold([judge], slice, {judge.pk: labels})[judge.pk]
    items = reads.read_items(judge, slice)
    answers = columns.Answers(judge, labels)
    verdicts = reads.read_verdicts(
        slice.verdict_q(),
        [v.pk for v in versions],
        lambda _: answers,
        runs_of=version.pk if version is not None else None,
        sub_scores=judge.scale == Judge.Scale.WEIGHTED,
    )

    def pairs_of(v: JudgeVersion) -> columns.Columns:
        on = verdicts.get(v.pk) or columns.no_verdicts(runs=v == version)
        detail = items if v == version else None
        return columns.columns_of(judge, on, answers, gold, excluded=leakage.excluded_of(v), items=detail)

    def figures(v: JudgeVersion, c: columns.Columns, n_boot: int, detail: bool) -> VersionQuality:
        return columns.version_figures(
            version=v, c=c, answers=answers, gold=gold, items=items, n_boot=n_boot, slice=slice, detail=detail
        )

    chosen = pairs_of(version) if version is not None else None
    trend = [figures(v, chosen if chosen and v == version else pairs_of(v), TREND_BOOTSTRAP, False) for v in versions]
    selected = None
    if version is not None and chosen is not None:
        selected = figures(version, chosen, n_boot, True)
        selected.excluded_gold = gold.count(leakage.excluded_of(version))
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


# --- every judge at a glance ---------------------------------------------------------------------------


def quality_overview() -> list[tuple[Judge, list[VersionQuality]]]:
    """Every judge with each version's point estimates against gold (accuracy's Wilson interval, no
    bootstrap): four queries in all (review items weigh nothing in these figures)."""
    judges = {j.pk: j for j in Judge.objects.order_by("slug")}
    versions_by_judge: dict[int, list[JudgeVersion]] = defaultdict(list)
    for version in JudgeVersion.objects.select_related("judge").order_by("created_at", "pk"):
        version.judge = judges[version.judge_id]
        versions_by_judge[version.judge_id].append(version)
    version_judge = {v.pk: v.judge_id for vs in versions_by_judge.values() for v in vs}
    labels = {pk: columns.Labels() for pk in judges}
    answers = {pk: columns.Answers(j, labels[pk]) for pk, j in judges.items()}
    gold = reads.read_gold(list(judges.values()), Slice(), labels) if judges else {}
    # The overview's figures are not per language: its verdicts are read without their conversations.
    verdicts = reads.read_verdicts(Q(), list(version_judge), lambda pk: answers[version_judge[pk]], languages=False)
    overview = []
    for judge in judges.values():
        trend = [
            columns.version_figures(
                version=v,
                c=columns.columns_of(judge, verdicts[v.pk], answers[judge.pk], gold[judge.pk]),
                answers=answers[judge.pk],
                gold=gold[judge.pk],
                items=None,
                n_boot=0,
                slice=Slice(),
                detail=False,
            )
            for v in versions_by_judge[judge.pk]
        ]
        overview.append((judge, trend))
    return overview
