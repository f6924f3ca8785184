"""Evidence for a new judge version: per language, the adjudicated and unanimous disagreements with the
current version, few-shot examples chosen to cover each failure category (balanced across gold labels),
and a guidance block quoting what reviewers flagged, shown as a diff against the current prompt.

Nothing here writes: the lead edits the draft and `services.drafts.draft_version_save` stores it.
"""

from __future__ import annotations

import difflib
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from django.db.models import Count, Q

from reviewapp.judging.services import judges
from reviewapp.models import (
    Adjudication,
    Comment,
    GoldLabel,
    Judge,
    JudgeVersion,
    ProofRun,
    Review,
    ReviewItem,
    Turn,
    Verdict,
    VersionProvenance,
)
from reviewapp.quality.selectors.leakage import TargetKey
from reviewapp.quality.selectors.quality_slice import judge_gold, outcome
from scoring.specs import guidance_for

EXAMPLES_PER_LANGUAGE = 6
QUOTES_PER_CATEGORY = 2
CONTEXT_TURNS = 2
CORRECTION_SOURCES = (GoldLabel.Source.ADJUDICATED, GoldLabel.Source.UNANIMOUS)
UNCATEGORISED = "uncategorised"


@dataclass
class Quote:
    text: str
    author: str
    category: str
    comment_id: int | None = None  # a Comment; None for a review's own comment or a lead's rationale
    item_id: int | None = None


@dataclass
class Disagreement:
    item_id: int
    target: TargetKey
    language: str
    text: str
    context: list[tuple[str, str]]
    gold: str
    gold_source: str
    judge_said: str
    explanation: str
    categories: list[str]
    quotes: list[Quote] = field(default_factory=list)


@dataclass
class LanguageDraft:
    language: str
    disagreements: list[Disagreement]
    examples: list[Disagreement]
    categories: list[tuple[str, int]]
    quoted: list[Quote]
    current_guidance: str
    proposed_guidance: str

    @property
    def diff(self) -> list[tuple[str, str]]:
        return guidance_diff(self.current_guidance, self.proposed_guidance, self.language)


@dataclass
class Draft:
    judge: Judge
    parent: JudgeVersion
    languages: list[LanguageDraft]

    @property
    def item_ids(self) -> list[int]:
        used = {d.item_id for lang in self.languages for d in lang.examples}
        used |= {q.item_id for lang in self.languages for q in lang.quoted if q.item_id is not None}
        return sorted(used)

    @property
    def comment_ids(self) -> list[int]:
        return sorted({q.comment_id for lang in self.languages for q in lang.quoted if q.comment_id is not None})

    @property
    def disagreements(self) -> int:
        return sum(len(lang.disagreements) for lang in self.languages)


def guidance_diff(current: str, proposed: str, language: str) -> list[tuple[str, str]]:
    """A unified diff of one language's guidance block: (kind, line) with kind in add/del/hunk/same."""
    lines = []
    for line in difflib.unified_diff(
        current.splitlines(), proposed.splitlines(), f"current/{language}", f"draft/{language}", lineterm=""
    ):
        if line.startswith(("---", "+++")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "same"
        lines.append((kind, line))
    return lines


def _latest_outcomes(judge: Judge, version: JudgeVersion) -> dict[TargetKey, tuple[str, str]]:
    """(outcome, explanation) of the version's latest resolved run-0 verdict per target: one query."""
    out: dict[TargetKey, tuple[str, str]] = {}
    seen: set[TargetKey] = set()
    rows = (
        Verdict.objects.filter(judge_version=version, run_index=0)
        .order_by("conversation_id", "turn_id", "-sweep_id")
        .values("conversation_id", "turn_id", "status", "rating", "passed", "label", "explanation")
    )
    for v in rows.iterator(chunk_size=5000):
        target = (v["conversation_id"], v["turn_id"])
        if target in seen:
            continue
        seen.add(target)
        said = outcome(judge, rating=v["rating"], passed=v["passed"], label=v["label"])
        if v["status"] == Verdict.Status.RESOLVED and said is not None:
            out[target] = (said, v["explanation"] or "")
    return out


def _pick_examples(rows: list[Disagreement], limit: int) -> list[Disagreement]:
    """Cover each failure category once (most frequent first), always from the gold label least
    represented so far, then fill up the same way."""
    chosen: list[Disagreement] = []
    per_label: Counter = Counter()
    left = sorted(rows, key=lambda d: d.item_id)

    def take(candidates: list[Disagreement]) -> None:
        best = min(candidates, key=lambda d: (per_label[d.gold], d.item_id))
        chosen.append(best)
        per_label[best.gold] += 1
        left.remove(best)

    counts = Counter(c for d in rows for c in d.categories)
    for category, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if len(chosen) >= limit:
            break
        if any(category in d.categories for d in chosen):
            continue
        candidates = [d for d in left if category in d.categories]
        if candidates:
            take(candidates)
    while left and len(chosen) < limit:
        take(left)
    return sorted(chosen, key=lambda d: d.item_id)


def _quote(text: str, limit: int = 240) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def guidance_block(language: str, rows: list[Disagreement], examples: list[Disagreement]) -> tuple[str, list[Quote]]:
    """The proposed block for one language, and the quotes it uses."""
    by_category: dict[str, list[Quote]] = defaultdict(list)
    for d in rows:
        for q in d.quotes:
            by_category[q.category].append(q)
    counts = Counter(c for d in rows for c in d.categories or [UNCATEGORISED])
    lines = [
        f"## Reviewer corrections ({language})",
        f"Native reviewers corrected this judge on {len(rows)} turn{'s' if len(rows) != 1 else ''}. What they flagged:",
    ]
    used: list[Quote] = []
    for category, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        quotes = []
        for q in by_category.get(category, []):
            if q.text and q.text not in {u.text for u in quotes}:
                quotes.append(q)
            if len(quotes) >= QUOTES_PER_CATEGORY:
                break
        used.extend(quotes)
        said = "; ".join(f'"{_quote(q.text)}"' for q in quotes)
        lines.append(f"- {category} ({count}){': ' + said if said else ''}")
    if examples:
        lines.append("Examples (the right answer after the arrow):")
        for d in examples:
            lines.append(f'- "{_quote(d.text, 200)}" -> {d.gold} (not {d.judge_said})')
    return "\n".join(lines), used


def draft_from_corrections(*, version: JudgeVersion, examples_per_language: int = EXAMPLES_PER_LANGUAGE) -> Draft:
    """The draft of a new version of `version`'s judge from the corrections to it: a fixed number of
    queries (verdicts, gold, items, reviews, review categories, comments, adjudications, turns)."""
    judge = version.judge
    spec = judges.judge_version_spec(version)
    said = _latest_outcomes(judge, version)
    gold = {
        t: g for t, g in judge_gold(judge=judge).items() if g.source in CORRECTION_SOURCES and g.outcome is not None
    }
    wrong = {t for t, g in gold.items() if t in said and said[t][0] != g.outcome}
    items = {
        (i["conversation_id"], i["turn_id"]): i
        for i in ReviewItem.objects.filter(judge=judge, turn__isnull=False, turn_id__in=[t for _, t in wrong]).values(
            "id", "conversation_id", "turn_id", "language"
        )
    }
    item_ids = [i["id"] for i in items.values()]
    categories: dict[int, list[str]] = defaultdict(list)
    quotes: dict[int, list[Quote]] = defaultdict(list)
    reviews = Review.objects.filter(item_id__in=item_ids).select_related("reviewer").prefetch_related("categories")
    for r in reviews.order_by("item_id", "created_at", "pk"):
        slugs = [c.slug for c in r.categories.all()]
        categories[r.item_id].extend(s for s in slugs if s not in categories[r.item_id])
        if r.comment.strip():
            for slug in slugs or [UNCATEGORISED]:
                quotes[r.item_id].append(Quote(r.comment.strip(), r.reviewer.username, slug, None, r.item_id))
    turn_to_item = {t[1]: i["id"] for t, i in items.items()}
    comment_rows = (
        Comment.objects.filter(Q(judge__isnull=True) | Q(judge=judge), turn_id__in=list(turn_to_item))
        .select_related("author")
        .prefetch_related("categories")
        .order_by("created_at", "pk")
    )
    for c in comment_rows:
        item_id = turn_to_item[c.turn_id]
        slugs = [x.slug for x in c.categories.all()]
        categories[item_id].extend(s for s in slugs if s not in categories[item_id])
        for slug in slugs or [UNCATEGORISED]:
            quotes[item_id].append(Quote(c.body.strip(), c.author.username, slug, c.pk, item_id))
    for a in Adjudication.objects.filter(item_id__in=item_ids).select_related("lead").prefetch_related("categories"):
        slugs = [x.slug for x in a.categories.all()]
        categories[a.item_id].extend(s for s in slugs if s not in categories[a.item_id])
        if a.rationale.strip():
            for slug in slugs or [UNCATEGORISED]:
                quotes[a.item_id].append(Quote(a.rationale.strip(), a.lead.username, slug, None, a.item_id))
    conversations = {t[0] for t in items}
    turns_by_conversation: dict[int, list[Turn]] = defaultdict(list)
    for turn in Turn.objects.filter(conversation_id__in=conversations).order_by("conversation_id", "position"):
        turns_by_conversation[turn.conversation_id].append(turn)

    by_language: dict[str, list[Disagreement]] = defaultdict(list)
    for target, item in sorted(items.items(), key=lambda kv: kv[1]["id"]):
        turns = turns_by_conversation[target[0]]
        index = next((i for i, t in enumerate(turns) if t.pk == target[1]), None)
        if index is None:
            continue
        turn = turns[index]
        context = [(t.role, t.text) for t in turns[max(0, index - CONTEXT_TURNS) : index]]
        slugs = categories.get(item["id"], []) or list(gold[target].categories)
        by_language[item["language"]].append(
            Disagreement(
                item_id=item["id"],
                target=target,
                language=item["language"],
                text=turn.text,
                context=context,
                gold=gold[target].outcome,
                gold_source=gold[target].source,
                judge_said=said[target][0],
                explanation=said[target][1],
                categories=slugs,
                quotes=quotes.get(item["id"], []),
            )
        )
    languages = []
    for language, rows in sorted(by_language.items()):
        examples = _pick_examples(rows, examples_per_language)
        block, used = guidance_block(language, rows, examples)
        _key, current = guidance_for(spec, language)
        proposed = (current + "\n\n" + block).strip() if current else block
        languages.append(
            LanguageDraft(
                language=language,
                disagreements=rows,
                examples=examples,
                categories=Counter(c for d in rows for c in d.categories).most_common(),
                quoted=used,
                current_guidance=current,
                proposed_guidance=proposed,
            )
        )
    return Draft(judge=judge, parent=version, languages=languages)


# --- versions and where they came from -----------------------------------------------------------------


@dataclass
class VersionRow:
    version: JudgeVersion
    provenance: VersionProvenance | None
    items: int = 0
    comments: int = 0

    @property
    def parent(self) -> JudgeVersion | None:
        return self.provenance.parent if self.provenance else None


def version_lineage(*, judge: Judge) -> list[VersionRow]:
    """Every version of `judge` with its parent and the evidence it came from: three queries."""
    versions = list(JudgeVersion.objects.filter(judge=judge).select_related("judge").order_by("created_at", "pk"))
    provenances = {
        p.version_id: p
        for p in VersionProvenance.objects.filter(version__judge=judge)
        .select_related("parent", "approved_by")
        .annotate(item_count=Count("items", distinct=True), comment_count=Count("comments", distinct=True))
    }
    rows = []
    for v in versions:
        p = provenances.get(v.pk)
        rows.append(
            VersionRow(
                version=v,
                provenance=p,
                items=getattr(p, "item_count", 0) if p else 0,
                comments=getattr(p, "comment_count", 0) if p else 0,
            )
        )
    return rows


@dataclass
class VersionDetail:
    version: JudgeVersion
    provenance: VersionProvenance | None
    items: list[ReviewItem]
    comments: list[Comment]
    diffs: list[tuple[str, list[tuple[str, str]]]]
    proofs: list[ProofRun]


def version_detail(*, version: JudgeVersion) -> VersionDetail:
    provenance = (
        VersionProvenance.objects.filter(version=version).select_related("parent__judge", "approved_by").first()
    )
    diffs = []
    items: list[ReviewItem] = []
    comments: list[Comment] = []
    if provenance is not None:
        before = judges.judge_version_spec(provenance.parent).language_guidance
        after = judges.judge_version_spec(version).language_guidance
        for language in sorted(set(before) | set(after)):
            if before.get(language, "").strip() != after.get(language, "").strip():
                diffs.append((language, guidance_diff(before.get(language, ""), after.get(language, ""), language)))
        items = list(provenance.items.select_related("turn").order_by("pk"))
        comments = list(provenance.comments.select_related("author").order_by("pk"))
    proofs = list(ProofRun.objects.filter(version=version).select_related("parent").order_by("-created_at", "-pk"))
    return VersionDetail(
        version=version, provenance=provenance, items=items, comments=comments, diffs=diffs, proofs=proofs
    )
