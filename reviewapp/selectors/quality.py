"""Reads for judge quality: (judge verdict, gold) pairs per version and language, version comparisons and
reviewer statistics, each in a fixed number of queries whatever the number of verdicts.

Gold for a target is, in order: the lead's adjudication, the reviewers' unanimous labels (a stored
GoldLabel(source=unanimous), or a closed item whose required reviews all agree and that needed no
adjudication), or an imported human label. Excluded gold labels are never used. The source is kept
with every pair.

A version's verdict on a target is its latest sweep's first run; the next observation of the same
version (run 1 of that sweep, or the previous sweep) is the rerun used as the noise baseline.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q

from scoring import agreement

from ..models import Adjudication, GoldLabel, Judge, JudgeVersion, Review, ReviewItem, Turn, Verdict
from ..models.review import GOLD_SOURCE_ORDER

TargetKey = tuple[int, int | None]  # (conversation id, turn id or None)
GOLD_PRECEDENCE = list(GOLD_SOURCE_ORDER)
DISPUTE_REASONS = {
    ReviewItem.Reason.UNRESOLVED,
    ReviewItem.Reason.UNCERTAIN,
    ReviewItem.Reason.RUNS_DISAGREE,
    ReviewItem.Reason.JUDGES_DISAGREE,
    ReviewItem.Reason.HIGH_VARIANCE,
    ReviewItem.Reason.VERSION_MOVED,
}
TREND_BOOTSTRAP = 0
MOVED_SHOWN = 200


def outcome(judge: Judge, *, rating: float | None, passed: bool | None, label: str = "") -> str | None:
    """The one label a judge answer, a review or a gold label gives, comparable across all three.

    Binary judges compare pass/fail; other scales compare the rating ("3"), then pass/fail, then a label.
    """
    if judge.scale == Judge.Scale.BINARY:
        if passed is not None:
            return "pass" if passed else "fail"
        if rating is not None:
            return "pass" if rating >= (judge.scale_max if judge.scale_max is not None else 1) else "fail"
    if rating is not None:
        return f"{rating:g}"
    if passed is not None:
        return "pass" if passed else "fail"
    return label or None


def scale_labels(judge: Judge) -> list[str]:
    if judge.scale == Judge.Scale.BINARY:
        return ["pass", "fail"]
    bounded = judge.scale_min is not None and judge.scale_max is not None
    if judge.scale == Judge.Scale.ORDINAL and bounded and judge.scale_max - judge.scale_min <= 10:
        return [f"{float(r):g}" for r in range(int(judge.scale_min), int(judge.scale_max) + 1)]
    return []


def _labels(judge: Judge, *columns: Iterable[str]) -> list[str]:
    fixed = scale_labels(judge)
    seen = agreement.label_order(*[list(c) for c in columns])
    return fixed + [label for label in seen if label not in fixed]


def _key(row: dict, prefix: str = "") -> TargetKey:
    return (row[f"{prefix}conversation_id"], row[f"{prefix}turn_id"])


def _language_q(language: str, field: str) -> Q:
    return Q(**{f"{field}__iexact": language}) if language else Q()


# --- gold -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gold:
    outcome: str
    source: str
    categories: tuple[str, ...] = ()


@dataclass
class ReviewRow:
    review_id: int
    item_id: int
    reviewer_id: int
    target: TargetKey
    language: str
    outcome: str | None


def _review_rows(judge: Judge, language: str) -> tuple[list[ReviewRow], dict[int, dict[str, Any]]]:
    """Every review of the judge's items (one query), and per item its status and reviews required."""
    rows, items = [], {}
    for r in (
        Review.objects.filter(_language_q(language, "item__language"), item__judge=judge)
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
            "item__status",
            "item__reviews_required",
            "item__adjudication__id",
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
        items[r["item_id"]] = {
            "status": r["item__status"],
            "required": max(1, r["item__reviews_required"]),
            "adjudicated": r["item__adjudication__id"] is not None,
            "target": _key(r, "item__"),
        }
    return rows, items


def _unanimous(reviews: list[ReviewRow], items: dict[int, dict[str, Any]]) -> dict[TargetKey, Gold]:
    by_item: dict[int, list[ReviewRow]] = defaultdict(list)
    for row in reviews:
        by_item[row.item_id].append(row)
    gold = {}
    for item_id, rows in by_item.items():
        item = items[item_id]
        outcomes = {r.outcome for r in rows}
        if (
            item["status"] == ReviewItem.Status.CLOSED
            and not item["adjudicated"]
            and len(rows) >= item["required"]
            and len(outcomes) == 1
            and None not in outcomes
        ):
            gold[item["target"]] = Gold(outcome=rows[0].outcome or "", source=GoldLabel.Source.UNANIMOUS.value)
    return gold


def judge_gold(*, judge: Judge, language: str = "", reviews=None) -> dict[TargetKey, Gold]:
    """The gold outcome of every target of `judge` that has one, with its source: two queries."""
    if reviews is None:
        reviews = _review_rows(judge, language)
    stored: dict[TargetKey, dict[str, Gold]] = defaultdict(dict)
    for g in GoldLabel.objects.filter(
        _language_q(language, "conversation__language"), judge=judge, excluded=False
    ).values("conversation_id", "turn_id", "source", "rating", "passed", "label", "failure_modes"):
        value = outcome(judge, rating=g["rating"], passed=g["passed"], label=g["label"])
        if value is not None:
            stored[_key(g)][g["source"]] = Gold(value, g["source"], tuple(g["failure_modes"] or ()))
    derived = _unanimous(*reviews)
    gold = {}
    for target in set(stored) | set(derived):
        sources = stored.get(target, {})
        if GoldLabel.Source.UNANIMOUS not in sources and target in derived:
            sources = {**sources, GoldLabel.Source.UNANIMOUS: derived[target]}
        for source in GOLD_PRECEDENCE:
            if source in sources:
                gold[target] = sources[source]
                break
    return gold


# --- verdicts -------------------------------------------------------------------------------------


@dataclass
class Observation:
    sweep_id: int
    run_index: int
    resolved: bool
    outcome: str | None
    flags: list[str]
    explanation: str


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


def _verdicts(judge: Judge, version_ids: list[int], language: str) -> dict[int, dict[TargetKey, TargetVerdicts]]:
    """version id -> target -> its observations, in one query."""
    out: dict[int, dict[TargetKey, TargetVerdicts]] = {pk: {} for pk in version_ids}
    rows = (
        Verdict.objects.filter(_language_q(language, "conversation__language"), judge_version_id__in=version_ids)
        .exclude(status=Verdict.Status.NOT_RATED)
        .order_by("judge_version_id", "conversation_id", "turn_id", "-sweep_id", "run_index")
        .values(
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
            "conversation__language",
        )
    )
    for v in rows.iterator(chunk_size=5000):
        targets = out[v["judge_version_id"]]
        target = targets.get(_key(v))
        if target is None:
            target = targets[_key(v)] = TargetVerdicts(language=v["conversation__language"])
        resolved = v["status"] == Verdict.Status.RESOLVED
        target.runs.append(
            Observation(
                sweep_id=v["sweep_id"],
                run_index=v["run_index"],
                resolved=resolved,
                outcome=outcome(judge, rating=v["rating"], passed=v["passed"], label=v["label"]) if resolved else None,
                flags=list(v["flags"] or []),
                explanation=v["explanation"],
            )
        )
    return out


def _items(judge: Judge, language: str) -> dict[TargetKey, dict[str, Any]]:
    return {
        _key(i): i
        for i in ReviewItem.objects.filter(_language_q(language, "language"), judge=judge).values(
            "id", "conversation_id", "turn_id", "reasons", "sample_weight", "status", "adjudication__id"
        )
    }


# --- quality of one judge ---------------------------------------------------------------------------


@dataclass
class Pair:
    target: TargetKey
    language: str
    gold: str
    judge: str
    gold_source: str
    weight: float
    qa_sample: bool
    disputed: bool


@dataclass
class VersionQuality:
    version: JudgeVersion
    targets: int
    unresolved: int
    pairs: list[Pair]
    overall: agreement.ClassificationReport
    by_language: dict[str, agreement.ClassificationReport] = field(default_factory=dict)
    qa_weighted: agreement.ClassificationReport | None = None
    qa_unweighted: agreement.ClassificationReport | None = None
    disputed: agreement.ClassificationReport | None = None
    runs_accuracy: agreement.Spread | None = None
    runs_macro_f1: agreement.Spread | None = None
    gold_sources: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        out = {
            "judge": self.version.judge.slug,
            "version": self.version.version,
            "targets": self.targets,
            "unresolved": self.unresolved,
            "gold_sources": self.gold_sources,
            **self.overall.as_dict(),
            "by_language": {lang: r.as_dict() for lang, r in self.by_language.items()},
        }
        for name in ("qa_weighted", "qa_unweighted", "disputed"):
            report = getattr(self, name)
            out[name] = report.as_dict() if report else None
        for name in ("runs_accuracy", "runs_macro_f1"):
            spread = getattr(self, name)
            out[name] = spread.as_dict() if spread else None
        return out


def _pairs(
    targets: dict[TargetKey, TargetVerdicts], gold: dict[TargetKey, Gold], items: dict[TargetKey, dict]
) -> list[Pair]:
    pairs = []
    for target, verdicts in targets.items():
        ref = verdicts.reference
        label = gold.get(target)
        if label is None or not ref.resolved or ref.outcome is None:
            continue
        item = items.get(target)
        reasons = set(item["reasons"]) if item else set()
        pairs.append(
            Pair(
                target=target,
                language=verdicts.language,
                gold=label.outcome,
                judge=ref.outcome,
                gold_source=label.source,
                weight=float(item["sample_weight"]) if item else 1.0,
                qa_sample=ReviewItem.Reason.QA_SAMPLE in reasons,
                disputed=bool(reasons & DISPUTE_REASONS) or bool(item and item["adjudication__id"]),
            )
        )
    return pairs


def _report(pairs: list[Pair], labels: list[str], *, n_boot: int, weighted: bool = False):
    return agreement.classification_report(
        [p.gold for p in pairs],
        [p.judge for p in pairs],
        labels=labels,
        weights=[p.weight for p in pairs] if weighted else None,
        n_boot=n_boot,
    )


def _run_spreads(
    targets: dict[TargetKey, TargetVerdicts], gold: dict[TargetKey, Gold], labels: list[str]
) -> tuple[agreement.Spread, agreement.Spread]:
    """Accuracy and macro-F1 of each run (sweep, run index) on its gold pairs: mean +- sd over runs."""
    by_run: dict[tuple[int, int], list[tuple[str, str]]] = defaultdict(list)
    for target, verdicts in targets.items():
        label = gold.get(target)
        if label is None:
            continue
        for run in verdicts.runs:
            if run.resolved and run.outcome is not None:
                by_run[(run.sweep_id, run.run_index)].append((label.outcome, run.outcome))
    reports = [
        agreement.classification_report([g for g, _ in rows], [j for _, j in rows], labels=labels, n_boot=0)
        for rows in by_run.values()
    ]
    return (
        agreement.mean_std([r.accuracy.value for r in reports]),
        agreement.mean_std([r.macro_f1.value for r in reports]),
    )


def version_quality(
    *,
    version: JudgeVersion,
    targets: dict[TargetKey, TargetVerdicts],
    gold: dict[TargetKey, Gold],
    items: dict[TargetKey, dict],
    labels: list[str],
    n_boot: int,
    detail: bool = True,
) -> VersionQuality:
    pairs = _pairs(targets, gold, items)
    quality = VersionQuality(
        version=version,
        targets=len(targets),
        unresolved=sum(1 for t in targets.values() if not t.reference.resolved),
        pairs=pairs,
        overall=_report(pairs, labels, n_boot=n_boot),
        gold_sources=dict(Counter(p.gold_source for p in pairs)),
    )
    if not detail:
        return quality
    by_language: dict[str, list[Pair]] = defaultdict(list)
    for pair in pairs:
        by_language[pair.language].append(pair)
    quality.by_language = {
        lang: _report(rows, labels, n_boot=n_boot) for lang, rows in sorted(by_language.items(), key=lambda x: x[0])
    }
    qa = [p for p in pairs if p.qa_sample]
    quality.qa_weighted = _report(qa, labels, n_boot=n_boot, weighted=True)
    quality.qa_unweighted = _report(qa, labels, n_boot=n_boot)
    quality.disputed = _report([p for p in pairs if p.disputed], labels, n_boot=n_boot)
    quality.runs_accuracy, quality.runs_macro_f1 = _run_spreads(targets, gold, labels)
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


def judge_versions(*, judge: Judge) -> list[JudgeVersion]:
    return list(JudgeVersion.objects.filter(judge=judge).select_related("judge").order_by("created_at", "pk"))


def judge_quality(
    *,
    judge: Judge,
    version: JudgeVersion | None = None,
    language: str = "",
    n_boot: int = agreement.DEFAULT_BOOTSTRAP,
    versions: list[JudgeVersion] | None = None,
) -> JudgeQuality:
    """Every version of `judge` against gold (the trend), and the chosen version (default: the latest) in
    detail: per language, QA-sample weighted, disputed items, runs. Five queries."""
    versions = versions if versions is not None else judge_versions(judge=judge)
    if version is None and versions:
        version = versions[-1]
    reviews = _review_rows(judge, language)
    gold = judge_gold(judge=judge, language=language, reviews=reviews)
    items = _items(judge, language)
    verdicts = _verdicts(judge, [v.pk for v in versions], language)
    labels = _labels(
        judge,
        (g.outcome for g in gold.values()),
        (o.outcome for t in verdicts.values() for tv in t.values() for o in tv.runs if o.outcome),
    )
    trend = [
        version_quality(
            version=v,
            targets=verdicts[v.pk],
            gold=gold,
            items=items,
            labels=labels,
            n_boot=TREND_BOOTSTRAP,
            detail=False,
        )
        for v in versions
    ]
    selected = None
    if version is not None:
        selected = version_quality(
            version=version,
            targets=verdicts.get(version.pk, {}),
            gold=gold,
            items=items,
            labels=labels,
            n_boot=n_boot,
        )
    return JudgeQuality(
        judge=judge,
        versions=versions,
        selected=selected,
        trend=trend,
        labels=labels,
        reviewer_alpha=reviewer_alpha(reviews[0], level="ordinal" if judge.scale == Judge.Scale.ORDINAL else "nominal"),
        language=language,
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

    def flags_by_name(self) -> list[tuple[str, tuple[int, int]]]:
        return [(flag, (before, after)) for flag, before, after, _ in self.flags]


def _categories(judge: Judge, language: str) -> dict[TargetKey, tuple[list[str], str]]:
    """Reviewer categories per target (else the adjudication's): two queries."""
    out: dict[TargetKey, tuple[list[str], str]] = {}
    reviewed: dict[TargetKey, Counter] = defaultdict(Counter)
    for row in Review.categories.through.objects.filter(
        _language_q(language, "review__item__language"), review__item__judge=judge
    ).values("review__item__conversation_id", "review__item__turn_id", "category__slug"):
        reviewed[_key(row, "review__item__")][row["category__slug"]] += 1
    for target, counts in reviewed.items():
        out[target] = ([slug for slug, _ in counts.most_common()], "reviewers")
    for row in Adjudication.categories.through.objects.filter(
        _language_q(language, "adjudication__item__language"), adjudication__item__judge=judge
    ).values("adjudication__item__conversation_id", "adjudication__item__turn_id", "category__slug"):
        target = _key(row, "adjudication__item__")
        slugs, source = out.get(target, ([], "lead"))
        if source == "lead" and row["category__slug"] not in slugs:
            out[target] = ([*slugs, row["category__slug"]], "lead")
    return out


def version_comparison(
    *, a: JudgeVersion, b: JudgeVersion, language: str = "", n_boot: int = agreement.DEFAULT_BOOTSTRAP
) -> Comparison:
    """A before/after comparison of two versions of one judge on the targets both scored: seven queries."""
    judge = a.judge
    verdicts = _verdicts(judge, [a.pk, b.pk], language)
    reviews = _review_rows(judge, language)
    gold = judge_gold(judge=judge, language=language, reviews=reviews)
    categories = _categories(judge, language)
    a_targets, b_targets = verdicts[a.pk], verdicts[b.pk]
    common = sorted(
        t
        for t in set(a_targets) & set(b_targets)
        if a_targets[t].reference.resolved and b_targets[t].reference.resolved
    )
    before = [a_targets[t].reference.outcome or "" for t in common]
    after = [b_targets[t].reference.outcome or "" for t in common]
    labels = _labels(judge, before, after, (g.outcome for g in gold.values()))
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
    for (x, y), count in sorted(movement.moves.items(), key=lambda m: -m[1]):
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

    noise_targets = [t for t in common if (r := a_targets[t].rerun) is not None and r.resolved]
    noise_before = [a_targets[t].reference.outcome or "" for t in noise_targets]
    noise_after = [a_targets[t].rerun.outcome or "" for t in noise_targets]  # type: ignore[union-attr]
    version_after = [b_targets[t].reference.outcome or "" for t in noise_targets]
    noise = agreement.movement_vs_noise(
        [x != y for x, y in zip(noise_before, version_after, strict=True)],
        [x != y for x, y in zip(noise_before, noise_after, strict=True)],
    )
    noise_movement = agreement.movement_matrix(noise_before, noise_after, labels=labels)

    gold_common = [t for t in common if t in gold]
    by_language: dict[str, list[TargetKey]] = defaultdict(list)
    for t in gold_common:
        by_language[a_targets[t].language].append(t)
    gold_rows = []
    only_a = only_b = 0
    for lang, targets in [("", gold_common), *sorted(by_language.items())]:
        g = [gold[t].outcome for t in targets]
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
    return Comparison(
        a=a,
        b=b,
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
    gold: dict[tuple[int, TargetKey], dict[str, str]] = defaultdict(dict)
    for g in GoldLabel.objects.filter(
        _language_q(language, "conversation__language"),
        excluded=False,
        source__in=[GoldLabel.Source.ADJUDICATED, GoldLabel.Source.IMPORTED],
        conversation_id__in={r["item__conversation_id"] for r in rows},
    ).values("judge_id", "conversation_id", "turn_id", "source", "rating", "passed", "label"):
        value = outcome(judges[g["judge_id"]], rating=g["rating"], passed=g["passed"], label=g["label"])
        if value is not None:
            gold[(g["judge_id"], _key(g))][g["source"]] = value

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
        sources = gold.get((r["item__judge_id"], _key(r, "item__")), {})
        truth = next((sources[s_] for s_ in GOLD_PRECEDENCE if s_ in sources), None)
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
    """Every judge with each version's point estimates against gold (no intervals): six queries in all."""
    judges = {j.pk: j for j in Judge.objects.order_by("slug")}
    versions_by_judge: dict[int, list[JudgeVersion]] = defaultdict(list)
    for version in JudgeVersion.objects.select_related("judge").order_by("created_at", "pk"):
        versions_by_judge[version.judge_id].append(version)
    version_judge = {v.pk: v.judge_id for vs in versions_by_judge.values() for v in vs}

    review_rows: dict[int, list[ReviewRow]] = defaultdict(list)
    review_items: dict[int, dict[int, dict[str, Any]]] = defaultdict(dict)
    for r in Review.objects.order_by("item_id", "created_at", "pk").values(
        "id", "item_id", "reviewer_id", "rating", "passed", "label", "item__judge_id", "item__conversation_id",
        "item__turn_id", "item__language", "item__status", "item__reviews_required", "item__adjudication__id",
    ):  # fmt: skip
        judge = judges[r["item__judge_id"]]
        review_rows[judge.pk].append(
            ReviewRow(
                r["id"],
                r["item_id"],
                r["reviewer_id"],
                _key(r, "item__"),
                r["item__language"],
                outcome(judge, rating=r["rating"], passed=r["passed"], label=r["label"]),
            )
        )
        review_items[judge.pk][r["item_id"]] = {
            "status": r["item__status"],
            "required": max(1, r["item__reviews_required"]),
            "adjudicated": r["item__adjudication__id"] is not None,
            "target": _key(r, "item__"),
        }
    stored: dict[int, dict[TargetKey, dict[str, Gold]]] = defaultdict(lambda: defaultdict(dict))
    for g in GoldLabel.objects.filter(excluded=False).values(
        "judge_id", "conversation_id", "turn_id", "source", "rating", "passed", "label"
    ):
        value = outcome(judges[g["judge_id"]], rating=g["rating"], passed=g["passed"], label=g["label"])
        if value is not None:
            stored[g["judge_id"]][_key(g)][g["source"]] = Gold(value, g["source"])
    items: dict[int, dict[TargetKey, dict[str, Any]]] = defaultdict(dict)
    for i in ReviewItem.objects.values(
        "id", "judge_id", "conversation_id", "turn_id", "reasons", "sample_weight", "status", "adjudication__id"
    ):
        items[i["judge_id"]][_key(i)] = i
    verdicts: dict[int, dict[TargetKey, TargetVerdicts]] = defaultdict(dict)
    for v in (
        Verdict.objects.order_by("judge_version_id", "conversation_id", "turn_id", "-sweep_id", "run_index")
        .values(
            "judge_version_id",
            "sweep_id",
            "run_index",
            "conversation_id",
            "turn_id",
            "status",
            "rating",
            "passed",
            "label",
            "conversation__language",
        )
        .iterator(chunk_size=5000)
    ):
        judge = judges[version_judge[v["judge_version_id"]]]
        target = verdicts[v["judge_version_id"]].setdefault(_key(v), TargetVerdicts(v["conversation__language"]))
        resolved = v["status"] == Verdict.Status.RESOLVED
        target.runs.append(
            Observation(
                v["sweep_id"],
                v["run_index"],
                resolved,
                outcome(judge, rating=v["rating"], passed=v["passed"], label=v["label"]) if resolved else None,
                [],
                "",
            )
        )
    out = []
    for judge in judges.values():
        derived = _unanimous(review_rows[judge.pk], review_items[judge.pk])
        gold = {}
        for target in set(stored[judge.pk]) | set(derived):
            sources = dict(stored[judge.pk].get(target, {}))
            if target in derived:
                sources.setdefault(GoldLabel.Source.UNANIMOUS, derived[target])
            gold[target] = next(sources[s] for s in GOLD_PRECEDENCE if s in sources)
        versions = versions_by_judge[judge.pk]
        labels = _labels(judge, (g.outcome for g in gold.values()))
        out.append(
            (
                judge,
                [
                    version_quality(
                        version=v,
                        targets=verdicts[v.pk],
                        gold=gold,
                        items=items[judge.pk],
                        labels=labels,
                        n_boot=0,
                        detail=False,
                    )
                    for v in versions
                ],
            )
        )
    return out
