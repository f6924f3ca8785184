"""Triage after a sweep: what the judges could not settle, or settled inconsistently, goes to people.

Reasons (ReviewItem.Reason): unresolved (and uncertain), runs_disagree, judges_disagree (two versions
of one judge, or judges declared comparable, disagree on pass/fail on the same target), high_variance (a criterion whose
run-to-run disagreement on the variance sample is above the threshold), qa_sample (a random sample
of every target a version scored, stratified by language, weighted 1 / inclusion probability: see
`qa_pick`). One item per (target, judge): reasons of an existing item
are merged as a set, never duplicated. Priority: unresolved > disagreements > QA.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from reviewapp import planner_statistics
from reviewapp.judging.services import judges
from reviewapp.models import Conversation, JudgeVersion, ReviewItem, Sweep, Verdict
from scoring import estimates
from scoring.parsing import UNCERTAIN_CODES
from scoring.specs import JudgeSpec

DEFAULT_VARIANCE_THRESHOLD = 0.15
Reason = ReviewItem.Reason
PRIORITY = {
    Reason.UNRESOLVED: 300,
    Reason.UNCERTAIN: 300,
    Reason.RUNS_DISAGREE: 200,
    Reason.JUDGES_DISAGREE: 200,
    Reason.HIGH_VARIANCE: 200,
    Reason.GOLD_DISAGREES: 250,
    # A new version changed its answer: a person settles which one is right, before the random QA sample.
    Reason.VERSION_MOVED: 150,
    Reason.QA_SAMPLE: 100,
    Reason.IMPORTED: 100,
}
# A QA-sample item estimates judge accuracy without bias, so it needs two independent labels at least.
QA_REVIEWS_REQUIRED = 2
REASON_ORDER = [str(r) for r in sorted(PRIORITY, key=lambda r: (-PRIORITY[r], list(PRIORITY).index(r)))]
BATCH = 500


@dataclass
class TriageSummary:
    items_created: int = 0
    items_updated: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    high_variance: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "items_created": self.items_created,
            "items_updated": self.items_updated,
            "reasons": dict(sorted(self.reasons.items())),
            "high_variance": self.high_variance,
        }


# --- what one verdict says, criterion by criterion --------------------------------------------------


def criterion_values(spec: JudgeSpec, verdict: Mapping[str, Any]) -> dict[str, Any]:
    """The answer a resolved verdict gives for each thing a judge decides: overall pass/fail, rating,
    each rubric criterion (pass/fail at its threshold), each weighted sub-metric score, each flag."""
    values: dict[str, Any] = {}
    if verdict.get("passed") is not None:
        values["passed"] = verdict["passed"]
    if verdict.get("rating") is not None:
        values["rating"] = verdict["rating"]
    sub_scores = verdict.get("sub_scores") or {}
    thresholds = {c.name: c.threshold for c in spec.criteria}
    for name, score in sub_scores.items():
        if name in thresholds:
            values[f"criterion:{name}"] = float(score) >= thresholds[name]
        else:
            values[f"sub_score:{name}"] = score
    for flag in verdict.get("flags") or []:
        values[f"flag:{flag}"] = True
    return values


def _disagreeing(runs: list[dict[str, Any]]) -> set[str]:
    """The criteria on which resolved runs do not all give the same answer (a missing flag is 'absent')."""
    names = set().union(*(r.keys() for r in runs))
    out = set()
    for name in names:
        default = False if name.startswith("flag:") else None
        if len({repr(r.get(name, default)) for r in runs}) > 1:
            out.add(name)
    return out


def qa_pick[K: Hashable](*, keys: Sequence[K], languages: Sequence[str], rate: float, seed: str) -> dict[K, float]:
    """A QA sample of `keys`: key -> its sample weight, 1 / inclusion probability.

    Drawn at random from every key given (never by agreement), stratified by language: ceil(rate * N_h)
    of the N_h targets of each language, so each is drawn with probability n_h / N_h
    (`scoring.estimates.qa_sample`). The draw is seeded: the same seed picks the same sample again."""
    if rate <= 0 or not keys:
        return {}
    return {key: 1.0 / probability for key, probability in estimates.qa_sample(keys, languages, rate, seed)}


# --- triage ----------------------------------------------------------------------------------------

TargetKey = tuple[int, int | None]  # (conversation id, turn id or None)


def _verdict_rows(sweep: Sweep) -> Iterable[dict[str, Any]]:
    return (
        Verdict.objects.filter(sweep=sweep)
        .exclude(status=Verdict.Status.NOT_RATED)
        .values(
            "judge_version_id",
            "conversation_id",
            "turn_id",
            "run_index",
            "tier",
            "status",
            "rating",
            "passed",
            "flags",
            "sub_scores",
            "explanation",
            "problem_code",
            "conversation__language",
        )
        .order_by("judge_version_id", "conversation_id", "turn_id", "run_index")
        .iterator(chunk_size=2000)
    )


def variance_compute(
    *, runs_by_target: Mapping[int, Mapping[TargetKey, list[dict]]], specs: Mapping[int, JudgeSpec], threshold: float
) -> dict[str, Any]:
    """Per judge version and criterion: the share of multi-run targets whose resolved runs disagree."""
    result: dict[str, Any] = {"threshold": threshold, "judge_versions": {}}
    for jv_id, targets in runs_by_target.items():
        spec = specs[jv_id]
        observed: dict[str, int] = defaultdict(int)
        disagreeing: dict[str, int] = defaultdict(int)
        disagreeing_targets: dict[str, list] = defaultdict(list)
        multi = 0
        for target, rows in targets.items():
            resolved = [criterion_values(spec, r) for r in rows if r["status"] == Verdict.Status.RESOLVED]
            if len(resolved) < 2:
                continue
            multi += 1
            for name in set().union(*(r.keys() for r in resolved)):
                observed[name] += 1
            for name in _disagreeing(resolved):
                disagreeing[name] += 1
                disagreeing_targets[name].append(list(target))
        criteria = {}
        for name in sorted(observed):
            rate = disagreeing[name] / observed[name]
            criteria[name] = {
                "targets": observed[name],
                "disagreeing": disagreeing[name],
                "rate": round(rate, 4),
                "needs_labels": rate > threshold,
            }
        result["judge_versions"][str(jv_id)] = {
            "label": spec.key,
            "targets_with_runs": multi,
            "criteria": criteria,
        }
    return result


@transaction.atomic
def triage_run(*, sweep: Sweep, variance_threshold: float | None = None, qa_rate: float | None = None) -> TriageSummary:
    """Compute variance and reasons for a sweep's verdicts and queue ReviewItems (merging reasons)."""
    threshold = (
        variance_threshold
        if variance_threshold is not None
        else float(sweep.params.get("variance_threshold", DEFAULT_VARIANCE_THRESHOLD))
    )
    qa_rate = sweep.qa_sample_rate if qa_rate is None else qa_rate
    # jv -> target -> runs
    runs: dict[int, dict[TargetKey, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for row in _verdict_rows(sweep):
        runs[row["judge_version_id"]][(row["conversation_id"], row["turn_id"])].append(row)
    versions = {jv.pk: jv for jv in JudgeVersion.objects.filter(pk__in=list(runs)).select_related("judge")}
    specs = {pk: judges.judge_version_spec(jv) for pk, jv in versions.items()}

    variance = variance_compute(
        runs_by_target={jv: t for jv, t in runs.items() if jv in specs}, specs=specs, threshold=threshold
    )
    reasons: dict[tuple[int, TargetKey], set[str]] = defaultdict(set)  # (judge id, target) -> reasons
    qa_weight: dict[tuple[int, TargetKey], float] = {}
    run0_passed: dict[TargetKey, dict[int, bool]] = defaultdict(dict)  # target -> {jv: passed}
    summary = TriageSummary()

    for jv_id, targets in runs.items():
        jv = versions.get(jv_id)
        if jv is None:
            continue
        spec = specs[jv_id]
        needs_labels = {
            name for name, info in variance["judge_versions"][str(jv_id)]["criteria"].items() if info["needs_labels"]
        }
        summary.high_variance.extend(f"{spec.key} {name}" for name in sorted(needs_labels))
        for target, rows in targets.items():
            key = (jv.judge_id, target)
            if any(r["status"] != Verdict.Status.RESOLVED for r in rows):
                reasons[key].add(Reason.UNRESOLVED)
                if any(r["problem_code"] in UNCERTAIN_CODES for r in rows):
                    reasons[key].add(Reason.UNCERTAIN)
            resolved = [criterion_values(spec, r) for r in rows if r["status"] == Verdict.Status.RESOLVED]
            if len(resolved) >= 2:
                split = _disagreeing(resolved)
                if {"passed", "rating"} & split or any(n.startswith("criterion:") for n in split):
                    reasons[key].add(Reason.RUNS_DISAGREE)
                if needs_labels:
                    reasons[key].add(Reason.HIGH_VARIANCE)
            run0 = next((r for r in rows if r["run_index"] == 0), None)
            if run0 is not None and run0["status"] == Verdict.Status.RESOLVED and run0["passed"] is not None:
                run0_passed[target][jv_id] = run0["passed"]
        # The QA sample: every target the version scored, resolved or not, whatever the runs said.
        keys = sorted(targets, key=lambda t: (t[0], t[1] if t[1] is not None else -1))
        languages = [targets[t][0]["conversation__language"] for t in keys]
        for target, weight in qa_pick(
            keys=keys, languages=languages, rate=qa_rate, seed=f"qa:{sweep.pk}:{jv_id}"
        ).items():
            reasons[(jv.judge_id, target)].add(Reason.QA_SAMPLE)
            qa_weight[(jv.judge_id, target)] = weight

    group_of = comparable_groups(versions)
    for target, by_version in run0_passed.items():
        by_group: dict[str, dict[int, bool]] = defaultdict(dict)
        for jv_id, passed in by_version.items():
            by_group[group_of[jv_id]][jv_id] = passed
        for group in by_group.values():
            if len(set(group.values())) > 1:
                for jv_id in group:
                    reasons[(versions[jv_id].judge_id, target)].add(Reason.JUDGES_DISAGREE)

    for reason_set in reasons.values():
        for reason in reason_set:
            summary.reasons[str(reason)] = summary.reasons.get(str(reason), 0) + 1
    created, updated = review_items_merge(reasons=reasons, qa_weight=qa_weight)
    summary.items_created, summary.items_updated = created, updated

    sweep.params = {**sweep.params, "variance": variance, "triage": summary.as_dict()}
    Sweep.objects.filter(pk=sweep.pk).update(params=sweep.params)
    return summary


def comparable_groups(versions: Mapping[int, JudgeVersion]) -> dict[int, str]:
    """Each judge version's comparison group: versions of one judge always compare; different judges
    only when declared comparable (a `comparable_with` list of judge slugs in a spec, or the setting
    TRIBUNAL_COMPARABLE_JUDGES, a list of slug groups). Conciseness and speakability ask different
    questions, so their pass/fail disagreeing is no reason to call people."""
    parent: dict[str, str] = {}

    def find(slug: str) -> str:
        parent.setdefault(slug, slug)
        while parent[slug] != slug:
            parent[slug] = parent[parent[slug]]
            slug = parent[slug]
        return slug

    def union(a: str, b: str) -> None:
        parent[find(a)] = find(b)

    for jv in versions.values():
        find(jv.judge.slug)
        for other in (jv.spec or {}).get("comparable_with") or []:
            if isinstance(other, str):
                union(jv.judge.slug, other)
    for group in getattr(settings, "TRIBUNAL_COMPARABLE_JUDGES", ()) or ():
        slugs = [slug for slug in group if isinstance(slug, str)]
        for slug in slugs[1:]:
            union(slugs[0], slug)
    return {pk: find(jv.judge.slug) for pk, jv in versions.items()}


def _ordered(reasons: Iterable[str]) -> list[str]:
    unique = {str(r) for r in reasons}
    return sorted(unique, key=lambda r: (REASON_ORDER.index(r) if r in REASON_ORDER else len(REASON_ORDER), r))


def _priority(reasons: Iterable[str]) -> int:
    return max((PRIORITY.get(r, 0) for r in reasons), default=0)


def _reviews_required(base: int, reasons: Iterable[str]) -> int:
    return max(base, QA_REVIEWS_REQUIRED) if Reason.QA_SAMPLE in {str(r) for r in reasons} else base


def review_items_merge(
    *, reasons: Mapping[tuple[int, TargetKey], set[str]], qa_weight: Mapping[tuple[int, TargetKey], float]
) -> tuple[int, int]:
    """Create or update one ReviewItem per (judge, target): reasons merged, priority raised, never lowered."""
    keys = [k for k, v in reasons.items() if v]
    if not keys:
        return 0, 0
    conversations = {
        c.pk: c
        for c in Conversation.objects.filter(pk__in={k[1][0] for k in keys})
        .select_related("dataset")
        .only("id", "language", "dataset__id", "dataset__reviews_required")
    }
    existing: dict[tuple[int, TargetKey], ReviewItem] = {}
    judge_ids = {k[0] for k in keys}
    turn_ids = sorted({k[1][1] for k in keys if k[1][1] is not None})
    conv_ids = sorted({k[1][0] for k in keys if k[1][1] is None})
    for i in range(0, len(turn_ids), BATCH):
        for item in ReviewItem.objects.filter(judge_id__in=judge_ids, turn_id__in=turn_ids[i : i + BATCH]):
            existing[(item.judge_id, (item.conversation_id, item.turn_id))] = item
    for i in range(0, len(conv_ids), BATCH):
        for item in ReviewItem.objects.filter(
            judge_id__in=judge_ids, turn__isnull=True, conversation_id__in=conv_ids[i : i + BATCH]
        ):
            existing[(item.judge_id, (item.conversation_id, None))] = item

    to_create, to_update = [], []
    now = timezone.now()
    for key in keys:
        new_reasons = reasons[key]
        item = existing.get(key)
        if item is None:
            conversation = conversations[key[1][0]]
            to_create.append(
                ReviewItem(
                    judge_id=key[0],
                    conversation_id=key[1][0],
                    turn_id=key[1][1],
                    dataset_id=conversation.dataset_id,
                    language=conversation.language,
                    reasons=_ordered(new_reasons),
                    priority=_priority(new_reasons),
                    sample_weight=qa_weight.get(key, 1.0),
                    reviews_required=_reviews_required(conversation.dataset.reviews_required, new_reasons),
                )
            )
            continue
        merged = _ordered([*item.reasons, *new_reasons])
        priority = max(item.priority, _priority(merged))
        weight = qa_weight.get(key, item.sample_weight) if Reason.QA_SAMPLE not in item.reasons else item.sample_weight
        required = item.reviews_required
        if item.status == ReviewItem.Status.OPEN:
            required = _reviews_required(item.reviews_required, merged)
        if (merged, priority, weight, required) != (
            item.reasons,
            item.priority,
            item.sample_weight,
            item.reviews_required,
        ):
            item.reasons, item.priority, item.sample_weight = merged, priority, weight
            item.reviews_required = required
            item.updated_at = now
            to_update.append(item)
    ReviewItem.objects.bulk_create(to_create, ignore_conflicts=True, batch_size=BATCH)
    if to_create:
        planner_statistics.refresh_after_commit(ReviewItem)
    if to_update:
        ReviewItem.objects.bulk_update(
            to_update, ["reasons", "priority", "sample_weight", "reviews_required", "updated_at"], batch_size=BATCH
        )
    return len(to_create), len(to_update)
