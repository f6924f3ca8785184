"""Verdicts of one judge version on one slice, and their (verdict, gold) pairs."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import TextField
from django.db.models.functions import Cast

from reviewapp.models import Judge, ReviewItem, Verdict
from reviewapp.quality.selectors import outcomes
from reviewapp.quality.selectors.quality_slice import (
    DISPUTE_REASONS,
    RATED,
    UNRESOLVED_LABEL,
    Convention,
    Gold,
    Slice,
    TargetKey,
    slice_labels,
    target_key,
)
from scoring import classification

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


VERDICT_FIELDS = (
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


def observation_of(judge: Judge, v: dict) -> Observation:
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


def slice_verdicts(
    judge: Judge, version_ids: list[int], slice: Slice, *, with_text: bool = True
) -> dict[int, dict[TargetKey, TargetVerdicts]]:
    """version id -> target -> its observations in the slice, in one query."""
    out: dict[int, dict[TargetKey, TargetVerdicts]] = {pk: {} for pk in version_ids}
    columns: list = [f for f in VERDICT_FIELDS if f not in ("flags", "explanation", "sub_scores")]
    if with_text:
        # Flags and sub-scores as their JSON text: few distinct values, each decoded once.
        columns += [
            Cast("flags", output_field=TextField()),
            "explanation",
            Cast("sub_scores", output_field=TextField()),
        ]
    rows = (
        Verdict.objects.filter(slice.verdict_q(), judge_version_id__in=version_ids, status__in=RATED)
        .order_by("judge_version_id", "conversation_id", "turn_id", "-sweep_id", "run_index")
        .values_list(*columns)
    )
    said = outcomes.Outcomes(judge, "judge")
    decoded: dict[str | None, Any] = {None: None}
    resolved = Verdict.Status.RESOLVED
    for row in rows.iterator(chunk_size=5000):
        version_id, sweep_id, run_index, conversation_id, turn_id, status, rating, passed, label, language = row[:10]
        flags, explanation, sub_scores = row[10:] if with_text else (None, "", None)
        targets = out[version_id]
        key = (conversation_id, turn_id)
        target = targets.get(key)
        if target is None:
            target = targets[key] = TargetVerdicts(language=language)
        for text in (flags, sub_scores):
            if text not in decoded:
                decoded[text] = json.loads(text)
        o = said(rating, passed, label) if status == resolved else None
        target.runs.append(
            Observation(
                sweep_id=sweep_id,
                run_index=run_index,
                status=status,
                outcome=o.value if o else None,
                flags=list(decoded[flags] or []),
                explanation=explanation or "",
                refused=o.refused if o else "",
                conversion=o.conversion if o else "",
                sub_scores=dict(decoded[sub_scores] or {}),
            )
        )
    return out


def slice_items(judge: Judge, slice: Slice) -> dict[TargetKey, dict[str, Any]]:
    return {
        target_key(i): i
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
class PairCounts:
    """The version's reference verdicts on the slice against gold: how many are scored and why the others
    are not (what a page shows of a PairSet)."""

    targets: int = 0
    unresolved: int = 0  # reference verdicts unresolved (the judge's answer could not be used)
    failed: int = 0  # reference verdicts that are errors (the call failed)
    without_gold: int = 0
    refused: Counter = field(default_factory=Counter)  # reason -> pairs
    conversions: Counter = field(default_factory=Counter)  # named rule -> pairs


@dataclass
class PairSet(PairCounts):
    """The counts and the scored pairs themselves."""

    pairs: list[Pair] = field(default_factory=list)  # resolved and scored
    unresolved_pairs: list[Pair] = field(default_factory=list)  # gold scored, the judge unresolved or failed

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


def pairs_report(judge: Judge, pairs: Sequence[Pair], *, n_boot: int, weighted: bool = False):
    """Wilson accuracy (at the effective size of conversation clusters), conversation-bootstrap F1 and kappa."""
    return classification.classification_report(
        [p.gold for p in pairs],
        [p.judge for p in pairs],
        labels=_labels_for(judge, pairs),
        weights=[p.weight for p in pairs] if weighted else None,
        clusters=[p.target[0] for p in pairs],
        n_boot=n_boot,
    )


def _right(pairs: Sequence[Pair]) -> int:
    return sum(1 for p in pairs if p.resolved and p.gold == p.judge)
