"""The review screen's reads, and submitting a label's, as SQL written once: the screen is the page
reviewers open most, and the ORM spent most of its time building the same few statements on every
request (joins, subqueries and annotations compiled anew each time; the SQL itself runs in well under a
millisecond).

Each statement is built once per database vendor (the access rules it needs, compiled from the ORM's own
conditions: `verdict_shapes.NOT_IMPORTED`, `access._qa_blind_q`), then run with bound parameters; rows
become the same model instances as from a queryset (`reviewapp.rows`).
"""

# ruff: noqa: S608 - fixed fragments, column and table names only; values go as query parameters

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import connection

from reviewapp import access
from reviewapp.models import (
    Category,
    Comment,
    Conversation,
    Dataset,
    Judge,
    JudgeVersion,
    Review,
    ReviewItem,
    Signature,
    Sweep,
    Turn,
    Verdict,
)
from reviewapp.review.selectors import verdict_shapes
from reviewapp.rows import Columns, Rows, run_sql, where_sql

# --- the item -----------------------------------------------------------------------------------

User = get_user_model()
_ITEM = Rows(
    Columns(ReviewItem, "ri"),
    Columns(Judge, "j"),
    Columns(Dataset, "d"),
    Columns(Conversation, "c"),
    Columns(Dataset, "cd"),
    Columns(Turn, "t"),
    Columns(User, "u"),
    Columns(JudgeVersion, "gv"),
)
_built: dict[str, tuple[str, list]] = {}


def _item_sql(*, lock: bool) -> tuple[str, list]:
    """SELECT the item with its judge, dataset, conversation (and its dataset), turn and holder; whether
    the reviewer labelled its target (`access.target_labelled`); the grain version
    (`verdict_shapes.grain_annotations`); and whether a QA-sample item keeps its turn blind (`access._qa_blind_q`).
    With `lock`, also whether its judge has a usable signature (`_usable_signature`), and the item's row
    locked (PostgreSQL; SQLite serialises writers anyway)."""
    key = f"item:{connection.vendor}:{lock}"
    if key not in _built:
        quote = connection.ops.quote_name
        items, reviews, versions = (quote(m._meta.db_table) for m in (ReviewItem, Review, JudgeVersion))
        not_imported, not_imported_params = where_sql(JudgeVersion.objects.filter(verdict_shapes.NOT_IMPORTED))
        qa_blind, qa_params = where_sql(ReviewItem.objects.filter(access._qa_blind_q()))
        signed, signed_params = _usable_signature() if lock else ("", [])
        item, judge, dataset, conversation, conversation_dataset, turn, holder, version = _ITEM.parts
        columns = f"""{_ITEM.select()},
  EXISTS (SELECT 1 FROM {reviews} r INNER JOIN {items} ri2 ON r.item_id = ri2.id
          WHERE r.reviewer_id = %s AND ri2.conversation_id = ri.conversation_id
            AND (ri2.turn_id = ri.turn_id OR (ri.turn_id IS NULL AND ri2.turn_id IS NULL))),
  EXISTS (SELECT 1 FROM {items} WHERE {items}.turn_id = ri.turn_id AND {qa_blind}){signed and f", {signed}"}"""
        if lock and not connection.features.has_select_for_update:
            # SQLite: the transaction holds the write lock from its BEGIN, so the item's reviews and its
            # target's verdicts are read in the same statement, after the item's own row.
            columns = f"0, {columns}, {', '.join(['NULL'] * sum(_widths()))}"
        sql = f"""
SELECT {columns}
FROM {item.table()}
INNER JOIN {judge.table()} ON j.id = ri.judge_id
INNER JOIN {dataset.table()} ON d.id = ri.dataset_id
INNER JOIN {conversation.table()} ON c.id = ri.conversation_id
INNER JOIN {conversation_dataset.table()} ON cd.id = c.dataset_id
LEFT OUTER JOIN {turn.table()} ON t.id = ri.turn_id
LEFT OUTER JOIN {holder.table()} ON u.id = ri.claimed_by_id
LEFT OUTER JOIN {version.table()} ON gv.id = (
  SELECT {versions}.id FROM {versions} WHERE {versions}.judge_id = ri.judge_id AND {not_imported}
  ORDER BY {versions}.created_at DESC, {versions}.id DESC LIMIT 1)
WHERE ri.id = %s"""
        if lock and connection.features.has_select_for_update:
            sql += " FOR UPDATE OF ri"
        elif lock:
            item_width = sum(len(part.fields) for part in _ITEM.parts) + 3  # labelled, QA-blind, signed
            sql += " UNION ALL " + _reads_sql(item_width=item_width, item=f"(SELECT * FROM {items} WHERE id = %s)")
        _built[key] = (sql, [*qa_params, *signed_params, *not_imported_params])
    return _built[key]


def _usable_signature() -> tuple[str, list]:
    """Whether the item's judge has an active, unsuspended signature, whose checks new gold must set off
    (`signature_checks.signatures_after_gold`), as an EXISTS on `ri`."""
    signatures = connection.ops.quote_name(Signature._meta.db_table)
    usable, usable_params = where_sql(Signature.objects.filter(active=True, suspended_at__isnull=True))
    return f"EXISTS (SELECT 1 FROM {signatures} WHERE {signatures}.judge_id = ri.judge_id AND {usable})", usable_params


def item_row(*, item_id: int, user, lock: bool = False) -> ReviewItem:
    """The review item as `item_for_review` describes it, in one statement. Raises ReviewItem.DoesNotExist.
    With `lock` (inside a transaction, for submitting a label): its row locked, and `signed`, whether its
    judge has a usable signature (`locked_item`'s second answer), as `judge_signed`."""
    sql, constants = _item_sql(lock=lock)
    reads = lock and not connection.features.has_select_for_update  # SQLite: with the reviews and verdicts
    # In the order of their placeholders: the reviewer, the QA rule's (the signature rule's) and the grain
    # rule's constants, the item (and again for its reviews and for its verdicts).
    rows = run_sql(sql, [user.pk, *constants, item_id, *((item_id, item_id) if reads else ())])
    if reads:
        rows, read = [row[1:] for row in rows if row[0] == 0], [row for row in rows if row[0] != 0]
    if not rows:
        raise ReviewItem.DoesNotExist("ReviewItem matching query does not exist.")
    item, judge, dataset, conversation, conversation_dataset, turn, holder, version, labelled, qa, *signed = (
        _ITEM.instances(rows[0])
    )
    if lock:
        item.judge_signed = bool(signed[0])
    conversation.dataset = conversation_dataset
    item.judge, item.dataset, item.conversation, item.turn, item.claimed_by = (
        judge,
        dataset,
        conversation,
        turn,
        holder,
    )
    item.labelled = bool(labelled)
    item.labelled_by = {user.pk: item.labelled}
    item.grain_version_id = version.pk if version else None
    item.grain_version_spec = version.spec if version else None
    item.turn_qa_blind = bool(qa)
    if reads:
        # Taken once by `reviews_and_verdicts`, in the same transaction.
        item.reads_under_lock = _reads(read, item=item, skip=sum(len(part.fields) for part in _ITEM.parts) + 4)
    return item


# --- what the screen lists -----------------------------------------------------------------------

_REVIEWS = Rows(Columns(Review, "r"), Columns(User, "u"))
_TURNS = Rows(Columns(Turn, "t"))
_VERDICTS = Rows(Columns(Verdict, "v"), Columns(JudgeVersion, "jv"), Columns(Sweep, "s"), Columns(Signature, "sg"))
_COMMENTS = Rows(Columns(Comment, "cm"), Columns(User, "u"), Columns(Judge, "j"))


def item_reviews(*, item: ReviewItem) -> list[Review]:
    """The item's reviews with their reviewers, in order (their categories are read by the caller)."""
    sql = (
        f"SELECT {_REVIEWS.select()} FROM {_REVIEWS.parts[0].table()}"
        f" INNER JOIN {_REVIEWS.parts[1].table()} ON u.id = r.reviewer_id"
        " WHERE r.item_id = %s ORDER BY r.created_at, r.id"
    )
    return [_review_of(row, item) for row in run_sql(sql, [item.pk])]


def _review_of(columns, item: ReviewItem) -> Review:
    """A review of `item` from `_REVIEWS`' columns, with its reviewer."""
    review, reviewer = _REVIEWS.instances(columns)
    review.reviewer, review.item = reviewer, item
    return review


def window_turns(*, conversation_id: int, position: int | None, around: int) -> list[Turn]:
    """The turns at most `around` before `position` and `around` from it on, in order (all of them
    when `position` is None): the index on (conversation, position) is walked in both directions."""
    table = _TURNS.parts[0].table()
    if position is None:
        sql = f"SELECT {_TURNS.select()} FROM {table} WHERE t.conversation_id = %s ORDER BY t.position"
        params = [conversation_id]
    else:
        inner = connection.ops.quote_name(Turn._meta.db_table)
        walk = f"SELECT {inner}.id FROM {inner} WHERE {inner}.conversation_id = %s AND {inner}.position"
        sql = (
            f"SELECT {_TURNS.select()} FROM {table} WHERE t.conversation_id = %s"
            f" AND (t.id IN ({walk} < %s ORDER BY {inner}.position DESC LIMIT %s)"
            f" OR t.id IN ({walk} >= %s ORDER BY {inner}.position LIMIT %s)) ORDER BY t.position"
        )
        params = [conversation_id, conversation_id, position, around, conversation_id, position, around + 1]
    return [row[0] for row in map(_TURNS.instances, run_sql(sql, params))]


def target_verdicts(*, item: ReviewItem) -> list[Verdict]:
    """Every verdict of the item's judge on its target, newest version first, runs in order; each with
    its version (whose judge is the item's), sweep and signature."""
    v, jv, s, sg = _VERDICTS.parts
    target = "v.turn_id = %s" if item.turn_id else "v.turn_id IS NULL"
    sql = (
        f"SELECT {_VERDICTS.select()} FROM {v.table()}"
        f" INNER JOIN {jv.table()} ON jv.id = v.judge_version_id"
        f" INNER JOIN {s.table()} ON s.id = v.sweep_id"
        f" LEFT OUTER JOIN {sg.table()} ON sg.id = v.signature_id"
        f" WHERE jv.judge_id = %s AND v.conversation_id = %s AND {target}"
        " ORDER BY jv.created_at DESC, v.sweep_id, v.run_index, v.id"
    )
    params = [item.judge_id, item.conversation_id] + ([item.turn_id] if item.turn_id else [])
    return [_verdict_of(row, item) for row in run_sql(sql, params)]


def _verdict_of(columns, item: ReviewItem) -> Verdict:
    """A verdict on `item`'s target from `_VERDICTS`' columns, with its version (whose judge is the
    item's), sweep and signature."""
    verdict, version, sweep, signature = _VERDICTS.instances(columns)
    version.judge = item.judge
    verdict.judge_version, verdict.sweep, verdict.signature = version, sweep, signature
    return verdict


def _widths() -> tuple[int, int]:
    return tuple(sum(len(part.fields) for part in rows.parts) for rows in (_REVIEWS, _VERDICTS))


def _reads_sql(*, item_width: int, item: str) -> str:
    """The reviews and the target's verdicts of the review item `item` (SQL giving its row, `ri`), side by
    side (UNION ALL) after `item_width` columns of NULL: each row tagged 1 (a review) or 2 (a verdict)
    and NULL in the other kind's columns. A conversation's item (no turn) has the verdicts without one."""
    width_r, width_v = _widths()
    pad_i, pad_r, pad_v = (", ".join(["NULL"] * n) for n in (item_width, width_r, width_v))
    pad_i = f"{pad_i}, " if item_width else ""
    r, u = _REVIEWS.parts
    v, jv, s, sg = _VERDICTS.parts
    return (
        f"SELECT 1, {pad_i}{_REVIEWS.select()}, {pad_v} FROM {r.table()} INNER JOIN {u.table()} ON u.id = r.reviewer_id"
        f" WHERE r.item_id = (SELECT ri.id FROM {item} ri)"
        f" UNION ALL SELECT 2, {pad_i}{pad_r}, {_VERDICTS.select()} FROM {item} ri"
        f" INNER JOIN {jv.table()} ON jv.judge_id = ri.judge_id"
        f" INNER JOIN {v.table()} ON v.judge_version_id = jv.id AND v.conversation_id = ri.conversation_id"
        " AND (v.turn_id = ri.turn_id OR v.turn_id IS NULL AND ri.turn_id IS NULL)"
        f" INNER JOIN {s.table()} ON s.id = v.sweep_id LEFT OUTER JOIN {sg.table()} ON sg.id = v.signature_id"
    )


def _reads(rows, *, item: ReviewItem, skip: int) -> tuple[list[Review], list[Verdict]]:
    """The reviews and verdicts of `_reads_sql`'s rows (their own columns from `skip` on), each list in
    the order `item_reviews` and `target_verdicts` give."""
    width_r, _ = _widths()
    reviews, verdicts = [], []
    for row in rows:
        if row[0] == 1:
            reviews.append(_review_of(row[skip : skip + width_r], item))
        else:
            verdicts.append(_verdict_of(row[skip + width_r :], item))
    reviews.sort(key=lambda review: (review.created_at, review.pk))
    # Newest version first (by when it was made), then sweep, run and id, as `target_verdicts`.
    verdicts.sort(key=lambda verdict: (verdict.sweep_id, verdict.run_index, verdict.pk))
    verdicts.sort(key=lambda verdict: verdict.judge_version.created_at, reverse=True)
    return reviews, verdicts


def reviews_and_verdicts(*, item: ReviewItem) -> tuple[list[Review], list[Verdict]]:
    """`item_reviews` and `target_verdicts` in one statement, for submitting a label under the item's
    lock (read after it: on PostgreSQL a statement that waited for the lock would see the other tables
    as of its own start). On SQLite, whose transaction holds the write lock from its BEGIN, the item's
    locked read (`item_row(lock=True)`) gave them already: they are taken from it, once."""
    if "reads_under_lock" in item.__dict__:
        return item.__dict__.pop("reads_under_lock")
    key = f"reviews_and_verdicts:{connection.vendor}"
    if key not in _built:
        items = connection.ops.quote_name(ReviewItem._meta.db_table)
        _built[key] = (_reads_sql(item_width=0, item=f"(SELECT * FROM {items} WHERE id = %s)"), [])
    sql, _ = _built[key]
    return _reads(run_sql(sql, [item.pk, item.pk]), item=item, skip=1)


def turn_comments(*, turn_id: int, author_id: int | None = None) -> list[Comment]:
    """The comments on a turn (only `author_id`'s when given) with author and judge, oldest first."""
    cm, u, j = _COMMENTS.parts
    mine = " AND cm.author_id = %s" if author_id is not None else ""
    sql = (
        f"SELECT {_COMMENTS.select()} FROM {cm.table()}"
        f" INNER JOIN {u.table()} ON u.id = cm.author_id"
        f" LEFT OUTER JOIN {j.table()} ON j.id = cm.judge_id"
        f" WHERE cm.turn_id = %s{mine} ORDER BY cm.created_at, cm.id"
    )
    comments = []
    for row in run_sql(sql, [turn_id] + ([author_id] if author_id is not None else [])):
        comment, author, judge = _COMMENTS.instances(row)
        comment.author, comment.judge = author, judge
        comments.append(comment)
    return comments


_CATEGORIES = Rows(Columns(Category, "cat"))


def active_categories() -> list[Category]:
    """The categories in use now, by name (`selectors.comments.active_categories`' read)."""
    sql = f"SELECT {_CATEGORIES.select()} FROM {_CATEGORIES.parts[0].table()} WHERE cat.active ORDER BY cat.name"
    return [row[0] for row in map(_CATEGORIES.instances, run_sql(sql, []))]


# --- submitting a label -------------------------------------------------------------------------

_LOCKED = Rows(Columns(ReviewItem, "ri"))


def locked_item(*, item: ReviewItem) -> tuple[ReviewItem, bool]:
    """`item`'s row read again under a row lock (PostgreSQL; SQLite serialises writers anyway), with the
    judge, dataset and turn `item` already holds (they do not change), and whether its judge has an active,
    unsuspended signature (whose checks new gold must set off: `signature_checks.signatures_after_gold`)."""
    key = f"locked:{connection.vendor}"
    if key not in _built:
        signed, signed_params = _usable_signature()
        lock = " FOR UPDATE" if connection.features.has_select_for_update else ""
        _built[key] = (
            f"SELECT {_LOCKED.select()}, {signed} FROM {_LOCKED.parts[0].table()} WHERE ri.id = %s{lock}",
            signed_params,
        )
    sql, constants = _built[key]
    rows = run_sql(sql, [*constants, item.pk])
    if not rows:
        raise ReviewItem.DoesNotExist("ReviewItem matching query does not exist.")
    locked, signed = _LOCKED.instances(rows[0])
    for name in ("judge", "dataset", "turn"):
        field = ReviewItem._meta.get_field(name)
        if field.is_cached(item) and getattr(locked, field.attname) == getattr(item, field.attname):
            field.set_cached_value(locked, field.get_cached_value(item))
    return locked, bool(signed)
