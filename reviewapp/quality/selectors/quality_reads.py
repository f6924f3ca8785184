"""The reads of the quality pages, as the arrays `quality_columns` computes on: a judge's winning gold, its
review items and its versions' verdicts on a slice, one query each.

Every row of these tables is read on each view, so no read makes a Python object per row where it can
help it. Rows come as tuples (values_list), transposed into columns; a label, answer or item is the code
of one of its few distinct kinds, each turned into what the figures need once.

On PostgreSQL the database hands each column over whole instead (`_columns`): numbers as one bytea of
fixed-width binary values, text as one string, so 100k rows cost a few array operations rather than a
million Python objects. The rows are the same (the slice's filters are the ORM's own query, wrapped),
put in the same order, and give the same figures: tests/reviewapp/quality/test_quality_columns.py reads
both ways on PostgreSQL and compares.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from django.db import connection
from django.db.models import BooleanField, ExpressionWrapper, Q, QuerySet, TextField
from django.db.models.functions import Cast

from reviewapp.models import GoldLabel, Judge, ReviewItem, Verdict
from reviewapp.models.review import GOLD_SOURCE_ORDER
from reviewapp.quality.selectors import quality_columns as columns
from reviewapp.quality.selectors.gold import winning_gold_values
from reviewapp.quality.selectors.outcomes import Outcomes
from reviewapp.quality.selectors.quality_slice import (
    DISPUTE_REASONS,
    RATED,
    Gold,
    Slice,
    gold_fields,
    gold_kinds,
)
from scoring.lazy import lazy_import

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_import("numpy")

SEPARATOR = "\x1f"  # between the texts of one column; a text holding it is read row by row instead


# --- PostgreSQL: whole columns --------------------------------------------------------------------------


def _postgres() -> bool:
    return connection.vendor == "postgresql"


def _columns(queryset: QuerySet, width: int, kinds: Sequence[tuple[str, str]]) -> list | None:
    """The rows of `queryset` (a values_list of `width` columns, named c0, c1, ... here) as whole columns,
    in one statement: `kinds` gives each column to return as (SQL over those names, "int" | "float" | "text").

    Ints come back as int64 arrays, floats as the bits of their float64 (so -0.0 and each NaN stay apart),
    texts as lists. Every column aggregates the same rows in one pass, so row i of one is row i of all.
    None (read the rows instead) when a text holds the separator."""
    sql, params = queryset.query.sql_with_params()
    parts = ["count(*)"]
    for expression, kind in kinds:
        if kind == "int":
            parts.append(f"string_agg(int8send(({expression})::int8), ''::bytea)")
        elif kind == "float":
            parts.append(f"string_agg(float8send(({expression})::float8), ''::bytea)")
        else:
            parts.append(f"string_agg(coalesce(({expression})::text, ''), E'\\x1f')")
    names = ", ".join(f"c{i}" for i in range(width))
    with connection.cursor() as cursor:
        # Only this module's expressions go into the statement; the slice's values stay parameters.
        cursor.execute(f"SELECT {', '.join(parts)} FROM ({sql}) AS q ({names})", params)  # noqa: S608
        count, *values = cursor.fetchone()
    out: list = []
    for (_, kind), value in zip(kinds, values, strict=True):
        if kind == "text":
            texts = value.split(SEPARATOR) if count else []
            if len(texts) != count:
                return None
            out.append(texts)
        else:
            data = bytes(value) if count else b""
            out.append(
                np.frombuffer(data, dtype=">i8" if kind == "int" else ">u8").astype(
                    np.int64 if kind == "int" else np.uint64
                )
            )
    return out


def _coded(texts: list[str]) -> tuple[np.ndarray, list[str]]:
    """Each text's code, and the distinct texts in code order."""
    if texts and not any(texts):  # labels, failure modes: mostly every one empty
        return np.zeros(len(texts), dtype=np.intp), [""]
    distinct = list(dict.fromkeys(texts))
    code = {text: i for i, text in enumerate(distinct)}
    return np.fromiter(map(code.__getitem__, texts), dtype=np.intp, count=len(texts)), distinct


def _factorized(key: np.ndarray) -> tuple[int, np.ndarray]:
    """How many distinct values a column holds, and each row's number among them (in value order)."""
    if key.dtype.kind == "i" and key.min() >= 0 and key.max() < 2**22:  # small codes: no sort needed
        present = np.zeros(int(key.max()) + 1, dtype=bool)
        present[key] = True
        return int(present.sum()), (np.cumsum(present) - 1)[key]
    values, inverse = np.unique(key, return_inverse=True)
    return len(values), inverse.ravel()


def _distinct(*keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A row of each distinct combination of these key columns, and each row's combination.

    Column by column, as one number per row: np.unique over whole rows sorts structured values, an order
    of magnitude slower on 100k rows."""
    if not len(keys[0]):
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    code = np.zeros(len(keys[0]), dtype=np.int64)
    for key in keys:
        size, inverse = _factorized(key)
        if (int(code.max()) + 1) * size >= 2**62:  # renumbered, the codes stay below the row count
            code = _factorized(code)[1].astype(np.int64)
        code = code * size + inverse
    size, inverse = _factorized(code)
    row_of = np.empty(size, dtype=np.intp)
    row_of[inverse] = np.arange(len(code))  # one row of each: they are all alike
    return row_of, inverse


def _float(bits: int) -> float:
    return struct.unpack(">d", int(bits).to_bytes(8, "big"))[0]


def _passed(code: int) -> bool | None:
    return None if code == 0 else code == 2


PASSED = "CASE WHEN {0} IS NULL THEN 0 WHEN {0} THEN 2 ELSE 1 END"


# --- gold -------------------------------------------------------------------------------------------------


def read_gold(
    judges: Sequence[Judge], slice: Slice, labels: dict[int, columns.Labels]
) -> dict[int, columns.GoldColumns]:
    """The winning gold of `judges` on the slice (of every judge when it names several), one query."""
    one = judges[0] if len(judges) == 1 else None
    weighted = any(j.scale == Judge.Scale.WEIGHTED for j in judges)
    if _postgres() and not weighted:
        found = _gold_columns(one, slice, judges, labels)
        if found is not None:
            return found
    rows = winning_gold_values(
        judge=one, fields=gold_fields(weighted=weighted), language=slice.language, dataset_ids=slice.dataset_ids
    )
    out = {}
    for judge in judges:
        targets = rows.get(judge.pk, {})
        kinds = gold_kinds(judge, targets)
        conversation, turn = columns.pairs_of(targets)
        out[judge.pk] = columns.GoldColumns.of(conversation, turn, kinds.kind, kinds.kinds, labels[judge.pk])
    return out


def _gold_columns(
    one: Judge | None, slice: Slice, judges: Sequence[Judge], labels: dict[int, columns.Labels]
) -> dict[int, columns.GoldColumns] | None:
    if max((j.pk for j in judges), default=0) >= 2**50:
        return None
    qs = GoldLabel.objects.filter(slice.target_q(), excluded=False, source__in=list(GOLD_SOURCE_ORDER))
    if one is not None:
        qs = qs.filter(judge=one)
    qs = qs.values_list(
        "judge_id", "conversation_id", "turn_id", "source", "rating", "passed", "label", "failure_modes"
    )
    rank = " ".join(f"WHEN '{source}' THEN {i}" for i, source in enumerate(GOLD_SOURCE_ORDER))
    read = _columns(
        qs,
        8,
        [
            # judge, source's rank, passed and whether there is a rating, as one number
            (f"c0 * 32 + CASE c3 {rank} END + 4 * {PASSED.format('c5')} + 16 * (c4 IS NULL)::int", "int"),
            ("c1", "int"),
            ("coalesce(c2, -1)", "int"),
            ("coalesce(c4, 0)", "float"),
            ("c6", "text"),
            ("CASE WHEN c7 = '[]' THEN '' ELSE c7::text END", "text"),  # most labels name no failure mode
        ],
    )
    if read is None:
        return None
    packed, conversation, turn, rating, label_texts, mode_texts = read
    judge, flags = packed >> 5, packed & 31
    label, label_names = _coded(label_texts)
    modes, mode_names = _coded(mode_texts)
    # The winner of each target: the first source of GOLD_SOURCE_ORDER (a target has one label per source).
    order = np.lexsort((flags & 3, turn, conversation, judge))
    first = np.ones(len(order), dtype=bool)
    first[1:] = (
        (judge[order][1:] != judge[order][:-1])
        | (conversation[order][1:] != conversation[order][:-1])
        | (turn[order][1:] != turn[order][:-1])
    )
    won = order[first]
    distinct, kind = _distinct(packed[won], rating[won], label[won], modes[won])
    readers = {j.pk: Outcomes(j, "gold") for j in judges}
    kinds: list[Gold] = []
    categories: dict[int, tuple[str, ...]] = {}
    for row in won[distinct].tolist():
        code = int(flags[row])
        said = readers[int(judge[row])](
            None if code >> 4 & 1 else _float(rating[row]), _passed(code >> 2 & 3), label_names[label[row]]
        )
        mode = int(modes[row])
        if mode not in categories:
            categories[mode] = tuple(json.loads(mode_names[mode] or "[]") or ())
        kinds.append(Gold(said.value, GOLD_SOURCE_ORDER[code & 3], categories[mode], said.refused, said.conversion, {}))
    out = {}
    for j in judges:
        mine = np.flatnonzero(judge[won] == j.pk)
        # Each judge's own kinds: its labels are numbered in its own label set.
        local, local_kind = np.unique(kind[mine], return_inverse=True)
        out[j.pk] = columns.GoldColumns.of(
            conversation[won][mine],
            turn[won][mine],
            local_kind.ravel().tolist(),
            [kinds[k] for k in local.tolist()],
            labels[j.pk],
        )
    return out


# --- items ------------------------------------------------------------------------------------------------


def _item_facts(reasons_text: str, weight: float, adjudicated: bool) -> tuple[float, float, bool, bool]:
    """(pair weight, inclusion probability, QA-sampled, disputed) of an item, as `version_quality` reads it."""
    reasons = set(json.loads(reasons_text)) if reasons_text else set()
    return (
        float(weight),
        min(1.0, 1.0 / float(weight)) if weight else 1.0,
        ReviewItem.Reason.QA_SAMPLE in reasons,
        bool(reasons & DISPUTE_REASONS) or bool(adjudicated),
    )


def _items(conversation: np.ndarray, turn: np.ndarray, kind: np.ndarray, facts: list[tuple]) -> columns.Items:
    facts = [*facts, (1.0, 1.0, False, False)]
    rows = np.append(kind, len(facts) - 1)
    weight, probability, qa, disputed = (np.array(column)[rows] for column in zip(*facts, strict=True))
    return columns.Items(
        index=columns.KeyIndex(conversation, turn),
        weight=weight.astype(float),
        probability=probability.astype(float),
        qa=qa.astype(bool),
        disputed=disputed.astype(bool),
    )


def _item_columns(judge: Judge, slice: Slice) -> columns.Items | None:
    qs = ReviewItem.objects.filter(slice.target_q(), judge=judge).values_list(
        "conversation_id", "turn_id", "reasons", "sample_weight", "adjudication__id"
    )
    read = _columns(
        qs,
        5,
        [
            ("c0", "int"),
            ("coalesce(c1, -1)", "int"),
            ("c2", "text"),
            ("c3", "float"),
            ("(c4 IS NOT NULL)::int", "int"),
        ],
    )
    if read is None:
        return None
    conversation, turn, reason_texts, weight, adjudicated = read
    reasons, reason_names = _coded(reason_texts)
    distinct, kind = _distinct(reasons, weight, adjudicated)
    facts = [
        _item_facts(reason_names[reasons[row]], _float(weight[row]), bool(adjudicated[row]))
        for row in distinct.tolist()
    ]
    return _items(conversation, turn, kind, facts)


def read_items(judge: Judge, slice: Slice) -> columns.Items:
    """The judge's review items on the slice's targets, one query."""
    qs = (
        ReviewItem.objects.filter(slice.target_q(), judge=judge)
        .annotate(
            reasons_text=Cast("reasons", output_field=TextField()),
            adjudicated=ExpressionWrapper(Q(adjudication__isnull=False), output_field=BooleanField()),
        )
        .values_list("conversation_id", "turn_id", "reasons_text", "sample_weight", "adjudicated")
    )
    if _postgres():
        found = _item_columns(judge, slice)
        if found is not None:
            return found
    rows = list(qs)
    if not rows:
        return _items(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.intp), [])
    conversation, turn, reasons_text, weight, adjudicated = zip(*rows, strict=True)
    keys = list(zip(reasons_text, weight, adjudicated, strict=True))
    known: dict[tuple, int] = {}
    facts = []
    for key in dict.fromkeys(keys):
        known[key] = len(facts)
        facts.append(_item_facts(*key))
    kind = np.fromiter(map(known.__getitem__, keys), dtype=np.intp, count=len(keys))
    return _items(*columns.pairs_of(zip(conversation, turn, strict=True)), kind, facts)


# --- verdicts ---------------------------------------------------------------------------------------------


def read_verdicts(
    verdicts_q: Q,
    version_ids: Sequence[int],
    answers_of: Callable[[int], columns.Answers],
    *,
    runs_of: int | None = None,
    sub_scores: bool = False,
    rated_only: bool = True,
    languages: bool = True,
) -> dict[int, columns.VersionVerdicts]:
    """Every rated verdict (with `rated_only`, else every verdict) of the versions on the slice, one query:
    per version its targets, each with its reference verdict, and for the version `runs_of` every verdict
    (its runs are shown). Without `languages` every target's language is "" (and no conversation is read)."""
    fields = ["judge_version_id", "conversation_id", "turn_id", "sweep_id", "run_index"]
    fields += ["status", "rating", "passed", "label"] + (["conversation__language"] if languages else [])
    qs = Verdict.objects.filter(verdicts_q, judge_version_id__in=list(version_ids))
    if rated_only:
        qs = qs.filter(status__in=RATED)
    if _postgres() and not sub_scores:
        found = _verdict_columns(qs.values_list(*fields), version_ids, answers_of, runs_of, languages=languages)
        if found is not None:
            return found
    if sub_scores:
        fields.append("sub_scores")
    rows = list(
        qs.order_by("judge_version_id", "conversation_id", "turn_id", "-sweep_id", "run_index").values_list(*fields)
    )
    if not rows:
        return columns.version_verdicts(*_no_rows(), version_ids=version_ids, runs_of=runs_of)
    version, conversation, turn, sweep, run, status, rating, passed, label = list(zip(*rows, strict=True))[:9]
    version_array = np.array(version, dtype=np.int64)
    bounds = np.flatnonzero(np.concatenate(([True], version_array[1:] != version_array[:-1]))).tolist()
    answer = np.zeros(len(rows), dtype=np.intp)
    for lo, hi in zip(bounds, [*bounds[1:], len(rows)], strict=True):
        keys = list(zip(status[lo:hi], rating[lo:hi], passed[lo:hi], label[lo:hi], strict=True))
        answer[lo:hi] = answers_of(version[lo]).codes(keys)
    language_code, names = _coded([row[9] for row in rows]) if languages else _coded([""] * len(rows))
    return columns.version_verdicts(
        version_array,
        np.array(conversation, dtype=np.int64),
        np.array([columns.NO_TURN if t is None else t for t in turn], dtype=np.int64),
        np.array(sweep, dtype=np.int64),
        np.array(run, dtype=np.int64),
        answer,
        language_code,
        names,
        version_ids=version_ids,
        runs_of=runs_of,
        sub_scores=[row[len(fields) - 1] for row in rows] if sub_scores else None,
    )


def _no_rows() -> tuple:
    nothing = np.zeros(0, dtype=np.int64)
    return nothing, nothing, nothing, nothing, nothing, np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp), []


def _verdict_columns(
    qs: QuerySet,
    version_ids: Sequence[int],
    answers_of: Callable[[int], columns.Answers],
    runs_of: int | None,
    *,
    languages: bool,
) -> dict[int, columns.VersionVerdicts] | None:
    if max(version_ids, default=0) >= 2**43:
        return None
    status = " ".join(f"WHEN '{name}' THEN {code}" for name, code in columns.STATUS_CODE.items())
    status = f"{status} ELSE {columns.OTHER}"
    read = _columns(
        qs,
        10 if languages else 9,
        [
            # version, run, status, passed and whether there is a rating, as one number
            (
                f"c0 * 1048576 + c4 * 32 + CASE c5 {status} END + 4 * {PASSED.format('c7')} + 16 * (c6 IS NULL)::int",
                "int",
            ),
            ("c1", "int"),
            ("coalesce(c2, -1)", "int"),
            ("c3", "int"),
            ("coalesce(c6, 0)", "float"),
            ("c8", "text"),
            *([("c9", "text")] if languages else []),
        ],
    )
    if read is None:
        return None
    packed, conversation, turn, sweep, rating, label_texts, *language_texts = read
    version, run, flags = packed >> 20, (packed >> 5) & (2**15 - 1), packed & 31
    # The ORM's order (version, conversation, turn, latest sweep first, run), with PostgreSQL's NULLS LAST.
    order = np.lexsort((run, -sweep, np.where(turn < 0, np.iinfo(np.int64).max, turn), conversation, version))
    label, label_names = _coded(label_texts)
    language, names_of_languages = _coded(language_texts[0] if languages else [""] * len(version))
    # Any status but the rated three only needs to be told apart from them.
    names = {code: str(name) for name, code in columns.STATUS_CODE.items()} | {columns.OTHER: "other"}
    distinct, kind = _distinct(np.searchsorted(np.sort(np.unique(version)), version), flags, rating, label)
    coded = []
    for row in distinct.tolist():
        code = int(flags[row])
        coded.append(
            answers_of(int(version[row])).add(
                names[code & 3],
                None if code >> 4 & 1 else _float(rating[row]),
                _passed(code >> 2 & 3),
                label_names[label[row]],
            )
        )
    answer = np.array(coded, dtype=np.intp)[kind]
    return columns.version_verdicts(
        version[order],
        conversation[order],
        turn[order],
        sweep[order],
        run[order],
        answer[order],
        language[order],
        names_of_languages,
        version_ids=version_ids,
        runs_of=runs_of,
    )
