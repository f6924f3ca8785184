"""Export rows as objects, streamed in chunks (the EVA shapes read these): each labelled target's
conversation, turns and winning gold label, and what the datasheet counts of what was said about it.

`export_rows` never loads the whole export: the gold labels, the turns and each count (reviews,
comments, judge versions with a verdict) are one query each, read through server-side cursors
(`.iterator(chunk_size=...)`) in conversation order and merged as they stream. The number of queries
does not grow with the rows, and memory follows one conversation, not the row count. The flat formats
read their rows another way (`selectors.export_flat`), with everything said in full.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from typing import Any

import orjson
from django.db.models import Count, Q, QuerySet, TextField
from django.db.models.functions import Cast

from reviewapp.exports.selectors.export_filters import (
    CHUNK_SIZE,
    GOLD_COLUMNS,
    ExportFilters,
    gold_labels_for,
)
from reviewapp.models import Comment, GoldLabel, Judge, Review, Turn, Verdict
from reviewapp.quality.selectors.gold import winning_label


@dataclass
class ExportRow:
    """One labelled target: its conversation, every turn, the winning gold label, and how many reviews,
    comments and judge versions' verdicts it has (for the datasheet; the EVA shapes write none of them)."""

    conversation: ExportConversation
    turn: ExportTurn | None
    turns: list[ExportTurn]  # every turn of the conversation, by position
    gold: ExportGold
    reviews: int = 0  # reviews of the target's review item
    comments: int = 0  # on the target's turn; every comment of the conversation for a conversation-level row
    versions: tuple[str, ...] = ()  # the judge versions with a verdict on the target, oldest first

    @property
    def language(self) -> str:
        return self.conversation.language


def _best(labels: Sequence[Any]) -> Any:
    best = winning_label(labels)
    assert best is not None  # the queryset holds included labels only
    return best


@dataclass(slots=True)
class ExportDataset:
    name: str


@dataclass(slots=True)
class ExportConversation:
    """The fields of a conversation an export writes (read as plain values, not model instances)."""

    pk: int
    external_id: str
    language: str
    metadata: dict[str, Any]
    dataset: ExportDataset


@dataclass(slots=True)
class ExportTurn:
    pk: int
    conversation_id: int
    position: int
    role: str
    text: str
    intended_text: str
    entities: list[Any]
    metadata: dict[str, Any]


@dataclass(slots=True)
class ExportGold:
    """A gold label as the export reads it; `winning_label` ranks these like GoldLabel instances."""

    pk: int
    conversation_id: int
    turn_id: int | None
    source: str
    rating: float | None
    label: str
    passed: bool | None
    failure_modes: list[Any]
    excluded: bool
    metadata: dict[str, Any]
    created_at: datetime
    conversation: ExportConversation | None = None
    turn: ExportTurn | None = None


def json_text(name: str) -> Cast:
    """A JSON column read as its text, decoded by orjson (much faster than a model's JSON field)."""
    return Cast(name, output_field=TextField())


_EMPTY = {"{}": dict, "[]": list}  # most turns' metadata and entities: no parse for them


def _decoded(text: str | None, default: Any) -> Any:
    if text is None:
        return default
    empty = _EMPTY.get(text)
    return empty() if empty is not None else orjson.loads(text)


class _Stream:
    """One query's rows, ordered by conversation id, read through a server-side cursor and handed out
    one conversation at a time. Every stream of an export walks the same conversations in the same
    order, so they advance together and none holds more than one conversation's rows."""

    def __init__(self, rows: Iterable, conversation_of) -> None:
        self.rows = rows
        self.iterator: Iterator | None = None
        self.conversation_of = conversation_of
        self.head: Any = None
        self.done = False

    def take(self, conversation_id: int) -> list:
        if self.iterator is None:  # the query runs when the first row is asked for
            self.iterator = iter(self.rows)
            self.head = next(self.iterator, None)
        out = []
        head, conversation_of, iterator = self.head, self.conversation_of, self.iterator
        while head is not None and conversation_of(head) < conversation_id:
            head = next(iterator, None)  # rows of conversations the export skips (cannot happen: same filter)
        while head is not None and conversation_of(head) == conversation_id:
            out.append(head)
            head = next(iterator, None)
        self.head = head
        return out


def _streams(judge: Judge, golds: QuerySet[GoldLabel], chunk_size: int) -> dict[str, _Stream]:
    """The export's queries, each one statement over every row, each ordered by conversation id: the
    gold labels, the turns, and per target (conversation, turn id) the counts the datasheet gives."""
    conversations = golds.values("conversation_id")

    def tuples(qs) -> _Stream:  # rows as tuples (.values_list()), the conversation id first
        return _Stream(qs.iterator(chunk_size=chunk_size), itemgetter(0))

    in_export = {"conversation_id__in": conversations}
    return {
        "gold": _Stream(
            golds.annotate(
                failure_modes_text=json_text("failure_modes"),
                metadata_text=json_text("metadata"),
                conversation_metadata_text=json_text("conversation__metadata"),
            )
            .values_list(*GOLD_FIELDS)
            .order_by("conversation_id", "turn_id", "id")
            .iterator(chunk_size=chunk_size),
            itemgetter(1),
        ),
        "turns": _Stream(
            Turn.objects.filter(**in_export)
            .annotate(entities_text=json_text("entities"), metadata_text=json_text("metadata"))
            .values_list(
                "id", "conversation_id", "position", "role", "text", "intended_text", "entities_text", "metadata_text"
            )
            .order_by("conversation_id", "position")
            .iterator(chunk_size=chunk_size),
            itemgetter(1),
        ),
        # (conversation, target turn id, reviews): a review counts for its item's target.
        "reviews": tuples(
            Review.objects.filter(item__judge=judge, item__conversation_id__in=conversations)
            .values_list("item__conversation_id", "item__turn_id")
            .annotate(count=Count("id"))
            .order_by("item__conversation_id", "item__turn_id")
        ),
        # (conversation, turn id, comments): the judge's comments and those about no judge.
        "comments": tuples(
            Comment.objects.filter(Q(judge=judge) | Q(judge__isnull=True), turn__conversation_id__in=conversations)
            .values_list("turn__conversation_id", "turn_id")
            .annotate(count=Count("id"))
            .order_by("turn__conversation_id", "turn_id")
        ),
        # (conversation, target turn id, version): each judge version with a verdict on the target.
        "versions": tuples(
            Verdict.objects.filter(judge_version__judge=judge, **in_export)
            .values_list("conversation_id", "turn_id", "judge_version_id", "judge_version__version")
            .distinct()
            .order_by("conversation_id", "turn_id", "judge_version_id")
        ),
    }


GOLD_FIELDS = (
    *GOLD_COLUMNS,
    "failure_modes_text",
    "excluded",
    "metadata_text",
    "created_at",
    "conversation__external_id",
    "conversation__language",
    "conversation_metadata_text",
    "conversation__dataset__name",
)


def _conversation_rows(streams: dict[str, _Stream], labels: list[tuple]) -> list[ExportRow]:
    """One conversation's rows: its winning gold per target, with the counts of what was said about each."""
    first = labels[0]
    conversation_id = first[1]
    conversation = ExportConversation(
        pk=conversation_id,
        external_id=first[11],
        language=first[12],
        metadata=_decoded(first[13], {}),
        dataset=ExportDataset(name=first[14]),
    )
    turns = [  # the columns of the turns query are ExportTurn's fields, in order
        ExportTurn(*plain, entities=_decoded(entities, []), metadata=_decoded(metadata, {}))
        for *plain, entities, metadata in streams["turns"].take(conversation_id)
    ]
    turn_by_id = {turn.pk: turn for turn in turns}

    by_target: dict[int | None, list[ExportGold]] = {}
    shared = len(GOLD_COLUMNS)
    for row in labels:  # GOLD_FIELDS: GOLD_COLUMNS are ExportGold's first fields, in order
        failure_modes, excluded, metadata, created_at = row[shared : shared + 4]
        label = ExportGold(
            *row[:shared],
            failure_modes=_decoded(failure_modes, []),
            excluded=excluded,
            metadata=_decoded(metadata, {}),
            created_at=created_at,
            conversation=conversation,
        )
        by_target.setdefault(label.turn_id, []).append(label)

    reviews = {target: count for _, target, count in streams["reviews"].take(conversation_id)}
    comments = {turn_id: count for _, turn_id, count in streams["comments"].take(conversation_id)}
    comments_in_all = sum(comments.values())  # a conversation-level row counts every comment of it
    versions: dict[int | None, list[str]] = {}
    for _, target, _version_id, version in streams["versions"].take(conversation_id):
        versions.setdefault(target, []).append(version)

    rows = []
    for turn_id, target_labels in by_target.items():
        gold = _best(target_labels)
        turn = turn_by_id.get(turn_id) if turn_id is not None else None
        gold.turn = turn
        rows.append(
            ExportRow(
                conversation=conversation,
                turn=turn,
                turns=turns,
                gold=gold,
                reviews=reviews.get(turn_id, 0),
                comments=comments.get(turn_id, 0) if turn_id is not None else comments_in_all,
                versions=tuple(versions.get(turn_id, ())),
            )
        )
    return rows


def export_rows(*, judge: Judge, filters: ExportFilters, chunk_size: int = CHUNK_SIZE) -> Iterator[list[ExportRow]]:
    """The export's rows in chunks of about `chunk_size`, ordered by conversation then turn (a
    conversation's rows are consecutive and never split across chunks).

    A fixed number of queries at any size: the gold labels joined with their conversation and dataset,
    and one query each for the turns and the counts of reviews, comments and judge versions. Each is
    read through a server-side cursor (`.iterator(chunk_size=...)`) in conversation
    order and merged as it streams, so memory follows one conversation, not the export. The winning
    gold of each target is picked from its labels by the shared rule (`selectors.gold.winning_label`).
    """
    streams = _streams(judge, gold_labels_for(judge=judge, filters=filters), chunk_size)
    gold = streams["gold"]
    chunk: list[ExportRow] = []
    current: list[tuple] = []
    for label in gold.rows:  # one server-side cursor over every label, in conversation order
        if current and label[1] != current[0][1]:
            chunk.extend(_conversation_rows(streams, current))
            current = []
            if len(chunk) >= chunk_size:
                yield chunk
                chunk = []
        current.append(label)
    if current:
        chunk.extend(_conversation_rows(streams, current))
    if chunk:
        yield chunk
