"""Reads for the corpus screens (datasets, conversations, turns), each at a fixed number of queries."""

from __future__ import annotations

import contextlib
import difflib
import json
import re
from dataclasses import dataclass

from django.db.models import Count, IntegerField, OuterRef, Prefetch, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from reviewapp.access import OPEN_EYES, Blindfold, language_allowed, language_q, sees_all_languages
from reviewapp.corpus.selectors.languages import conversation_languages
from reviewapp.models import Conversation, Dataset, DatasetCount, GoldLabel, Turn, Verdict
from reviewapp.quality.selectors import outcomes
from reviewapp.quality.selectors.gold import winning_by_judge

# Han, kana and their punctuation are compared character by character (no spaces between words);
# every other script is compared word by word.
_TOKEN = re.compile(
    r"\s+|[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]|[^\s\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]+"
)


@dataclass(frozen=True)
class TextDiff:
    """Intended and said text as (op, text) segments: op is "equal", "delete" (intended only) or "insert"."""

    intended: list[tuple[str, str]]
    said: list[tuple[str, str]]


def _append(segments: list[tuple[str, str]], op: str, text: str) -> None:
    if not text:
        return
    if segments and segments[-1][0] == op:
        segments[-1] = (op, segments[-1][1] + text)
    else:
        segments.append((op, text))


def word_diff(intended: str, said: str) -> TextDiff:
    """Word-level difference between what TTS was asked to say and what was said."""
    a, b = _TOKEN.findall(intended), _TOKEN.findall(said)
    left: list[tuple[str, str]] = []
    right: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            _append(left, "equal", "".join(a[i1:i2]))
            _append(right, "equal", "".join(b[j1:j2]))
        else:
            _append(left, "delete", "".join(a[i1:i2]))
            _append(right, "insert", "".join(b[j1:j2]))
    return TextDiff(intended=_join_changes(left), said=_join_changes(right))


def _join_changes(segments: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Fold a lone space between two changed words into the change, so "zulu kilo" reads as one mark."""
    joined: list[tuple[str, str]] = []
    for index, (op, text) in enumerate(segments):
        between_changes = (
            op == "equal"
            and not text.strip()
            and 0 < index < len(segments) - 1
            and segments[index - 1][0] != "equal"
            and segments[index + 1][0] != "equal"
        )
        _append(joined, joined[-1][0] if between_changes else op, text)
    return joined


def _visible(user, language: str, field: str) -> Q:
    q = language_q(user, field)
    if language:
        q &= Q(**{f"{field}__iexact": language})
    return q


def visible_languages(*, user, dataset: Dataset | None = None) -> list[str]:
    """The conversation languages `user` may see (in one dataset, or everywhere), sorted: a loose index
    scan of the distinct languages (corpus.selectors.languages), kept by `language_allowed`,
    the rule `language_q` spells in SQL, instead of reading every conversation."""
    codes = conversation_languages(dataset_id=None if dataset is None else dataset.pk)
    return sorted({code for code in codes if language_allowed(user, code)}, key=str.lower)


def _kept_counts(user, language: str) -> QuerySet[DatasetCount]:
    """The kept counts (per dataset and language) of the languages `user` may see, or of `language`."""
    return DatasetCount.objects.filter(_visible(user, language, "language"))


def dataset_rows(*, user, language: str = "", search: str = "") -> list[Dataset]:
    """Datasets with counts limited to what `user` may see: two queries whatever the size of the corpus.

    Each dataset gets conversation_count, turn_count, gold_count, verdict_count and `languages`, summed
    from the counts the database keeps per dataset and language (DatasetCount), never from the rows.
    Datasets with no visible conversation are left out for reviewers and whenever a language is chosen.
    """
    datasets = Dataset.objects.order_by("name")
    if search:
        datasets = datasets.filter(Q(name__icontains=search) | Q(description__icontains=search))
    rows = list(datasets)
    groups = _kept_counts(user, language).filter(conversations__gt=0)
    if search:
        groups = groups.filter(dataset__in=[row.pk for row in rows])
    by_dataset: dict[int, list[DatasetCount]] = {}
    for group in groups.order_by():
        by_dataset.setdefault(group.dataset_id, []).append(group)
    for row in rows:
        kept = by_dataset.get(row.pk, [])
        row.conversation_count = sum(group.conversations for group in kept)
        row.turn_count = sum(group.turns for group in kept)
        row.gold_count = sum(group.gold_labels for group in kept)
        row.verdict_count = sum(group.verdicts for group in kept)
        row.languages = sorted({group.language for group in kept}, key=str.lower)
    if language or not sees_all_languages(user):
        rows = [row for row in rows if row.conversation_count > 0]
    return rows


def dataset_conversations(*, user, dataset: Dataset, language: str = "") -> QuerySet[Conversation]:
    """The conversations of `dataset` that `user` may see, with per-conversation counts."""
    turn_count = Turn.objects.filter(conversation=OuterRef("pk")).order_by().values("conversation")
    gold_count = GoldLabel.objects.filter(conversation=OuterRef("pk")).order_by().values("conversation")
    verdict_count = Verdict.objects.filter(conversation=OuterRef("pk")).order_by().values("conversation")

    def count(sub: QuerySet):
        return Coalesce(Subquery(sub.annotate(n=Count("pk")).values("n")[:1], output_field=IntegerField()), Value(0))

    return (
        dataset.conversations.filter(_visible(user, language, "language"))
        .annotate(turn_count=count(turn_count), gold_count=count(gold_count), verdict_count=count(verdict_count))
        .order_by("external_id")
    )


@dataclass
class ConversationPage:
    """One page of a dataset's conversations in external-id order, and where the pages around it start:
    `next_after` (the next page holds the ids after it) and `previous_before` (the previous page holds
    the ids before it), each None at that end; `previous_before` is "" for an empty page past the end,
    whose way back is the first page. `count` is every conversation the list holds."""

    object_list: list[Conversation]
    count: int
    next_after: str | None = None
    previous_before: str | None = None

    @property
    def has_other_pages(self) -> bool:
        return self.next_after is not None or self.previous_before is not None


def dataset_conversation_count(*, user, dataset: Dataset, language: str = "") -> int:
    """How many of `dataset`'s conversations `user` may see (in `language`, if given), summed from the
    kept counts per language (DatasetCount) rather than counted row by row."""
    return sum(_kept_counts(user, language).filter(dataset=dataset).values_list("conversations", flat=True))


def conversation_page(
    conversations: QuerySet[Conversation], *, after: str = "", before: str = "", size: int, count: int
) -> ConversationPage:
    """The page of `conversations` (dataset_conversations) after the external id `after`, or before
    `before`, or the first: a keyset on the dataset's unique (dataset, external_id) index, so a page
    deep in a dataset of a million conversations is read like the first, never with an OFFSET.
    `count` is how many the list holds (dataset_conversation_count: the kept counts, not a count of
    the rows)."""
    if before:
        rows = list(conversations.filter(external_id__lt=before).order_by("-external_id")[: size + 1])
        earlier, rows = len(rows) > size, rows[:size][::-1]
        return ConversationPage(
            rows,
            count,
            next_after=rows[-1].external_id if rows else None,  # `before` itself is after this page
            previous_before=rows[0].external_id if earlier else None,
        )
    shown = conversations.filter(external_id__gt=after) if after else conversations
    rows = list(shown[: size + 1])
    later, rows = len(rows) > size, rows[:size]
    return ConversationPage(
        rows,
        count,
        next_after=rows[-1].external_id if later else None,
        previous_before=(rows[0].external_id if rows else "") if after else None,
    )


def _turn_queryset() -> QuerySet[Turn]:
    return Turn.objects.order_by("position").prefetch_related(
        Prefetch(
            "gold_labels",
            queryset=GoldLabel.objects.select_related("judge").order_by("judge__slug", "source"),
            to_attr="gold",
        ),
        Prefetch(
            "verdicts",
            queryset=Verdict.objects.select_related("judge_version__judge", "sweep").order_by(
                "judge_version__judge__slug", "judge_version__created_at", "run_index", "pk"
            ),
            to_attr="judged",
        ),
    )


def _decorate(turn: Turn) -> Turn:
    """Attach what the template shows but should not compute: the diff, tidy tool JSON, gold agreement."""
    turn.diff = word_diff(turn.intended_text, turn.text) if turn.is_speech and turn.said_differs else None
    turn.display_text = turn.text
    if turn.role in (Turn.Role.TOOL_CALL, Turn.Role.TOOL_RESPONSE):
        with contextlib.suppress(ValueError):
            turn.display_text = json.dumps(json.loads(turn.text), indent=2, ensure_ascii=False)
    _mark_agreement(turn.gold, turn.judged)
    return turn


def _mark_agreement(gold: list[GoldLabel], verdicts: list[Verdict]) -> None:
    """Set verdict.agrees to True/False against the winning gold label of the same judge, else None
    (no included gold, an unresolved verdict, or gold on a field the judge is not scored on)."""
    winners = winning_by_judge(gold)
    for label in gold:
        label.wins = winners.get(label.judge_id) is label
    for verdict in verdicts:
        label = winners.get(verdict.judge_version.judge_id)
        verdict.agrees = None
        verdict.gold_source = label.source if label is not None else ""
        if label is None or verdict.status != Verdict.Status.RESOLVED:
            continue
        verdict.agrees = outcomes.agrees(verdict.judge_version.judge, judged=verdict, gold=label)


def conversation_with_dataset(*, conversation_id: int) -> Conversation:
    """Raises Conversation.DoesNotExist."""
    return Conversation.objects.select_related("dataset").get(pk=conversation_id)


def _blindfolded(target, shown: bool):
    """Blind review: a target the viewer may not see judged keeps its text and loses its labels."""
    target.blind = not shown
    if not shown:
        target.gold, target.judged = [], []
    return target


def conversation_detail(*, conversation: Conversation, blindfold: Blindfold = OPEN_EYES) -> Conversation:
    """Attach the turns, and every gold label and verdict the viewer may see (`blindfold`, from
    `access.blindfold`), to `conversation`: five queries."""
    conversation.turn_list = [
        _blindfolded(_decorate(turn), blindfold.shows(turn.pk))
        for turn in _turn_queryset().filter(conversation=conversation)
    ]
    conversation.gold = list(
        conversation.gold_labels.filter(turn__isnull=True).select_related("judge").order_by("judge__slug", "source")
    )
    conversation.judged = list(
        conversation.verdicts.filter(turn__isnull=True)
        .select_related("judge_version__judge", "sweep")
        .order_by("judge_version__judge__slug", "run_index", "pk")
    )
    _mark_agreement(conversation.gold, conversation.judged)
    _blindfolded(conversation, blindfold.shows(None))
    return conversation


def turn_detail(*, conversation: Conversation, turn_id: int, blindfold: Blindfold = OPEN_EYES) -> Turn:
    """One turn of `conversation` with the labels and verdicts the viewer may see (raises Turn.DoesNotExist)."""
    turn = _decorate(_turn_queryset().get(conversation=conversation, pk=turn_id))
    return _blindfolded(turn, blindfold.shows(turn.pk))
