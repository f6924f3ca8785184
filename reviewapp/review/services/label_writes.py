"""What submitting a label writes, once `reviews.review_submit` has decided it under the item's lock: the
review and its categories, the comment and its categories, the unanimous gold, the item's state and the
audit events, in the order they happened.

On PostgreSQL a new review is written in one statement: INSERTs and the item's UPDATE as data-modifying
CTEs, the review's and the comment's ids taken from their INSERTs' RETURNING for the rows that name them
(the categories, the gold's metadata, the audit events). Elsewhere, and for a revised review, each row is
written by its own statement. The rows are the same either way; so are the queue counts, which the
item's triggers keep in either statement.
"""

# ruff: noqa: S608 - table and column names only; every value goes as a query parameter

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection
from django.db.models import Model

from reviewapp.audit import AuditChange, _event, audit_records
from reviewapp.models import AuditEvent, Category, Comment, GoldLabel, Review, ReviewItem
from reviewapp.rows import prepared_cursor

# A field's SQL expression in an INSERT, with its parameters.
Overrides = dict[str, tuple[str, list]]
ITEM_FIELDS = ("status", "claimed_by", "lease_expires_at", "updated_at")
GOLD_CHANGED = ("rating", "passed", "label", "failure_modes", "excluded", "metadata")


def label_write(
    *,
    actor,
    review: Review,
    categories: Sequence[Category],
    comment: Comment | None,
    gold: GoldLabel | None,
    item: ReviewItem,
    events: Sequence[AuditChange],
) -> None:
    """Write `review` (new when it has no id yet, else revised) with `categories`, the new `comment` (with
    the same categories), `gold` (upserted on its target; a None in its metadata's "reviews" stands for
    the new review's id), `item`'s state, and `events` as `actor`'s, in the order given."""
    if review.pk is None and connection.vendor == "postgresql":
        _write_at_once(
            actor=actor, review=review, categories=categories, comment=comment, gold=gold, item=item, events=events
        )
        return
    if review.pk is None:
        review.save(force_insert=True)
        if categories:  # a new review has none yet: nothing to read or clear
            review.categories.add(*categories)
    else:
        review.save()
        review.categories.set(categories)
    if comment is not None:
        comment.save(force_insert=True)
        if categories:
            comment.categories.add(*categories)
    if gold is not None:
        reviews = [review.pk if pk is None else pk for pk in gold.metadata["reviews"]]
        gold.metadata = {**gold.metadata, "reviews": reviews}
        gold_upsert(gold, changed=GOLD_CHANGED)
    item.save(update_fields=list(ITEM_FIELDS))
    # One INSERT for the comment's, the review's and the item's events, in the order they happened.
    audit_records(actor=actor, events=events)


def gold_upsert(gold: GoldLabel, *, changed: Sequence[str]) -> None:
    """INSERT `gold`, or when its target already has gold of its source, UPDATE that row's `changed` fields:
    one statement on the unique index of the target (per turn, or per conversation for a conversation's
    label). The item's row lock serialises its closings; update_or_create would add four statements."""
    sql, params = _gold_sql(gold, changed=changed)
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)


def _gold_sql(gold: GoldLabel, *, changed: Sequence[str], overrides=None) -> tuple[str, list]:
    quote = connection.ops.quote_name
    names, values, params = _insert_values(gold, overrides=overrides)
    target, where = ("turn_id", "turn_id IS NOT NULL") if gold.turn_id else ("conversation_id", "turn_id IS NULL")
    columns = [quote(GoldLabel._meta.get_field(name).column) for name in changed]
    updates = ", ".join(f"{column} = excluded.{column}" for column in columns)
    sql = f"INSERT INTO {quote(GoldLabel._meta.db_table)} ({names}) VALUES ({values})"
    sql += f" ON CONFLICT (judge_id, {target}, source) WHERE {where} DO UPDATE SET {updates}"
    return sql, params


def _insert_values(obj: Model, *, overrides: Overrides | None = None) -> tuple[str, str, list]:
    """The column list, the VALUES and their parameters that INSERT `obj` as `save()` would (its
    automatic times set). `overrides` gives a field an SQL expression with its own parameters instead."""
    overrides = overrides or {}
    quote = connection.ops.quote_name
    names, values, params = [], [], []
    for field in obj._meta.concrete_fields:
        if field.primary_key:
            continue
        names.append(quote(field.column))
        value = field.pre_save(obj, add=True)  # sets the automatic times on `obj`, as save() does
        if field.name in overrides:
            expression, own = overrides[field.name]
            values.append(expression)
            params.extend(own)
        else:
            values.append("%s")
            params.append(field.get_db_prep_save(value, connection))
    return ", ".join(names), ", ".join(values), params


def _m2m_insert(manager_field, owner: str, category_ids: list[int]) -> tuple[str, list]:
    through = manager_field.remote_field.through
    quote = connection.ops.quote_name
    own = quote(through._meta.get_field(manager_field.m2m_field_name()).column)
    other = quote(through._meta.get_field(manager_field.m2m_reverse_field_name()).column)
    sql = (
        f"INSERT INTO {quote(through._meta.db_table)} ({own}, {other})"
        f" SELECT {owner}.id, c FROM {owner}, unnest(%s::bigint[]) AS c"
    )
    return sql, [category_ids]


def _write_at_once(
    *,
    actor,
    review: Review,
    categories: Sequence[Category],
    comment: Comment | None,
    gold: GoldLabel | None,
    item: ReviewItem,
    events: Sequence[AuditChange],
) -> None:
    """`label_write` for a new review on PostgreSQL: one statement of data-modifying CTEs."""
    quote = connection.ops.quote_name
    parts: list[tuple[str, str, list]] = []
    category_ids = [c.pk for c in categories]

    names, values, params = _insert_values(review)
    parts.append(("rv", f"INSERT INTO {quote(Review._meta.db_table)} ({names}) VALUES ({values}) RETURNING id", params))
    if category_ids:
        parts.append(("rc", *_m2m_insert(Review._meta.get_field("categories"), "rv", category_ids)))
    if comment is not None:
        names, values, params = _insert_values(comment)
        table = quote(Comment._meta.db_table)
        parts.append(("cm", f"INSERT INTO {table} ({names}) VALUES ({values}) RETURNING id", params))
        if category_ids:
            parts.append(("cc", *_m2m_insert(Comment._meta.get_field("categories"), "cm", category_ids)))
    if gold is not None:
        reviews = gold.metadata["reviews"]
        if reviews[-1] is not None or None in reviews[:-1]:
            raise ValueError("The new review is the last of the gold's reviews.")
        field = GoldLabel._meta.get_field("metadata")
        rest = {key: value for key, value in gold.metadata.items() if key != "reviews"}
        # The new review's id last in the metadata's list: jsonb || appends to an array, merges objects.
        expression = "(%s::jsonb || jsonb_build_object('reviews', %s::jsonb || to_jsonb((SELECT id FROM rv))))"
        own = [field.get_db_prep_save(rest, connection), field.get_db_prep_save(reviews[:-1], connection)]
        parts.append(("gd", *_gold_sql(gold, changed=GOLD_CHANGED, overrides={"metadata": (expression, own)})))

    sets, params = [], []
    for name in ITEM_FIELDS:
        field = ReviewItem._meta.get_field(name)
        sets.append(f"{quote(field.column)} = %s")
        params.append(field.get_db_prep_save(field.pre_save(item, add=False), connection))
    table = quote(ReviewItem._meta.db_table)
    parts.append(("it", f"UPDATE {table} SET {', '.join(sets)} WHERE id = %s", [*params, item.pk]))

    rows, params = [], []
    for action, obj, before, after in events:
        event = _event(actor=actor, action=action, obj=obj, before=before, after=after)
        owner = "rv" if obj is review else "cm" if obj is comment else None
        overrides = {"object_id": (f"(SELECT id::text FROM {owner})", [])} if owner else None
        names, values, row_params = _insert_values(event, overrides=overrides)
        rows.append(f"({values})")
        params.extend(row_params)
    table = quote(AuditEvent._meta.db_table)
    parts.append(("au", f"INSERT INTO {table} ({names}) VALUES {', '.join(rows)}", params))

    ctes = ", ".join(f"{name} AS ({sql})" for name, sql, _ in parts)
    ids = "(SELECT id FROM cm)" if comment is not None else "NULL"
    with prepared_cursor() as cursor:
        cursor.execute(f"WITH {ctes} SELECT (SELECT id FROM rv), {ids}", [p for _, _, ps in parts for p in ps])
        review_id, comment_id = cursor.fetchone()
    for obj, pk in ((review, review_id), (comment, comment_id)):
        if obj is not None:
            obj.pk = pk
            obj._state.adding, obj._state.db = False, connection.alias
