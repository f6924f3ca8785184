"""Before / after: how a new judge version moved against an older one on the same slice, against a rerun."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from reviewapp.models import Adjudication, Judge, JudgeVersion, Review, Turn
from reviewapp.quality.selectors import leakage, outcomes
from reviewapp.quality.selectors.quality_pairs import slice_verdicts
from reviewapp.quality.selectors.quality_slice import (
    MOVED_SHOWN,
    Gold,
    Slice,
    TargetKey,
    judge_gold,
    slice_labels,
    target_key,
)
from scoring import agreement, before_after, classification
from scoring.records import record_dict

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
    movement: before_after.Movement
    moves: list[MoveSummary]
    moved: list[MovedTarget]
    flags: list[tuple[str, int, int, int]]  # flag, count under A, count under B, change
    noise: before_after.NoiseComparison
    noise_movement: before_after.Movement
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
        reviewed[target_key(row, "review__item__")][row["category__slug"]] += 1
    for target, counts in reviewed.items():
        out[target] = ([slug for slug, _ in counts.most_common()], "reviewers")
    for row in Adjudication.categories.through.objects.filter(
        slice.target_q("adjudication__item__"), adjudication__item__judge=judge
    ).values("adjudication__item__conversation_id", "adjudication__item__turn_id", "category__slug"):
        target = target_key(row, "adjudication__item__")
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
        return record_dict(self)


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
    verdicts = slice_verdicts(judge, [a.pk, b.pk], slice)
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
    movement = before_after.movement_matrix(before, after, labels=labels)

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
    noise = before_after.movement_vs_noise(
        [x != y for x, y in zip(noise_before, version_after, strict=True)],
        [x != y for x, y in zip(noise_before, noise_after, strict=True)],
    )
    noise_movement = before_after.movement_matrix(noise_before, noise_after, labels=labels)

    gold_common = [t for t in common if t in gold and gold[t].outcome is not None]
    by_language: dict[str, list[TargetKey]] = defaultdict(list)
    for t in gold_common:
        by_language[a_targets[t].language].append(t)
    gold_rows = []
    only_a = only_b = 0
    for lang, targets in [("", gold_common), *sorted(by_language.items())]:
        g = [gold[t].outcome or "" for t in targets]
        ra = classification.classification_report(
            g, [a_targets[t].reference.outcome or "" for t in targets], labels=labels, n_boot=n_boot
        )
        rb = classification.classification_report(
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
                "p_value": before_after.mcnemar_exact(b_only, a_only),
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
