"""The gold that wins for a target, asked by every screen and report that needs the truth.

A target (a turn, or a whole conversation for a conversation-level judge) may carry several gold labels
for one judge, one per source. The one that wins is, in order: a lead's adjudication, the reviewers'
unanimous label, the label the data was imported with (`GOLD_SOURCE_ORDER`). Excluded labels are kept
for the record and never win. Ties inside one source cannot happen (a unique constraint per source);
the lowest id decides if they ever did.

`winning_label` applies the rule to labels already loaded (a prefetch, an export chunk);
`winning_gold` loads them for one judge in one query. The judge quality figures, the version
comparison, the conversation page's "agrees with gold" marks and the exports all go through here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date

from django.db.models import Case, Expression, F, IntegerField, Q, QuerySet, Value, When

from reviewapp.access import language_match_q
from reviewapp.models import GoldLabel, Judge
from reviewapp.models.review import GOLD_SOURCE_ORDER

TargetKey = tuple[int, int | None]  # (conversation id, turn id or None)

# The columns that picking the winning label and reading it as gold use: the gold reads load no others.
GOLD_FIELDS = (
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
)
_RANK = {str(source): rank for rank, source in enumerate(GOLD_SOURCE_ORDER)}


def gold_rank(label: GoldLabel) -> tuple[int, int]:
    """Sort key: the winning label first."""
    return (_RANK.get(label.source, len(_RANK)), label.pk or 0)


def gold_rank_ordering() -> list:
    """`gold_rank` as ORM ordering, for the database to rank a target's labels itself (a window in an export
    query): source in GOLD_SOURCE_ORDER, then the lowest id."""
    source_rank = Case(
        *(When(source=source, then=Value(rank)) for rank, source in enumerate(GOLD_SOURCE_ORDER)),
        default=Value(len(GOLD_SOURCE_ORDER)),
        output_field=IntegerField(),
    )
    return [source_rank.asc(), F("id").asc()]


def winning_label(labels: Iterable[GoldLabel]) -> GoldLabel | None:
    """The label that wins among one target's labels for one judge (None when every label is excluded)."""
    included = [label for label in labels if not label.excluded and label.source in _RANK]
    return min(included, key=gold_rank) if included else None


def winners[K](groups: Mapping[K, Iterable[GoldLabel]]) -> dict[K, GoldLabel]:
    """Each group's winning label, leaving out the groups whose every label is excluded."""
    out = {}
    for key, labels in groups.items():
        best = winning_label(labels)
        if best is not None:
            out[key] = best
    return out


def winning_by_judge(labels: Iterable[GoldLabel]) -> dict[int, GoldLabel]:
    """One target's labels of several judges -> judge id -> the winning label."""
    by_judge: dict[int, list[GoldLabel]] = {}
    for label in labels:
        by_judge.setdefault(label.judge_id, []).append(label)
    return winners(by_judge)


def _gold_labels(
    *,
    judge: Judge | None,
    language: str = "",
    dataset_ids: Iterable[int] = (),
    conversation_ids: Iterable[int] | QuerySet | None = None,
    created_from: date | None = None,
    created_to: date | None = None,
) -> QuerySet:
    qs = GoldLabel.objects.filter(excluded=False)
    if judge is not None:
        qs = qs.filter(judge=judge)
    if language:
        qs = qs.filter(language_match_q(language, "conversation__language"))
    dataset_ids = list(dataset_ids)
    if dataset_ids:
        qs = qs.filter(conversation__dataset_id__in=dataset_ids)
    if conversation_ids is not None:
        qs = qs.filter(
            conversation_id__in=conversation_ids if isinstance(conversation_ids, QuerySet) else list(conversation_ids)
        )
    if created_from is not None:
        qs = qs.filter(Q(created_at__date__gte=created_from))
    if created_to is not None:
        qs = qs.filter(Q(created_at__date__lte=created_to))
    return qs


def winning_gold(
    *,
    judge: Judge,
    language: str = "",
    dataset_ids: Iterable[int] = (),
    conversation_ids: Iterable[int] | None = None,
    created_from: date | None = None,
    created_to: date | None = None,
) -> dict[TargetKey, GoldLabel]:
    """Target -> the winning gold label of `judge`, within the filters: one query.

    `language` matches regional variants ("fr" covers "fr-CA"). The source filter is never applied
    before the pick: a target whose adjudication wins is never reported with its imported label.
    """
    qs = _gold_labels(
        judge=judge,
        language=language,
        dataset_ids=dataset_ids,
        conversation_ids=conversation_ids,
        created_from=created_from,
        created_to=created_to,
    )
    grouped: dict[TargetKey, list[GoldLabel]] = {}
    for label in qs.only(*GOLD_FIELDS):
        grouped.setdefault((label.conversation_id, label.turn_id), []).append(label)
    return winners(grouped)


# Where a row of `winning_gold_values` has the label's source; its own fields follow.
SOURCE_AT = 4


def winning_gold_values(
    *,
    judge: Judge | None,
    fields: Sequence[str | Expression],
    language: str = "",
    dataset_ids: Iterable[int] = (),
    conversation_ids: Iterable[int] | QuerySet | None = None,
) -> dict[int, dict[TargetKey, tuple]]:
    """`winning_gold` as tuples, in one query: judge id -> target -> the winning label's row (judge id,
    conversation id, turn id, id, source, *fields), for `judge` or, with None, every judge.

    The same rule as `winning_label`, for the pages that read every gold label of a judge on each view,
    where a model instance per label costs more than the figures themselves."""
    qs = _gold_labels(judge=judge, language=language, dataset_ids=dataset_ids, conversation_ids=conversation_ids)
    named = {f"gold_{i}": f for i, f in enumerate(fields) if not isinstance(f, str)}
    if named:
        qs = qs.annotate(**named)
    columns = [f if isinstance(f, str) else f"gold_{i}" for i, f in enumerate(fields)]
    rows = qs.filter(source__in=list(_RANK)).values_list(
        "judge_id", "conversation_id", "turn_id", "id", "source", *columns
    )
    best: dict[int, dict[TargetKey, tuple]] = {} if judge is None else {judge.pk: {}}
    last, targets = None, {}
    for row in rows:
        if row[0] != last:
            last = row[0]
            targets = best.setdefault(last, {})
        held = targets.setdefault(row[1:3], row)
        if held is not row and (_RANK[row[4]], row[3]) < (_RANK[held[4]], held[3]):
            targets[row[1:3]] = row
    return best
