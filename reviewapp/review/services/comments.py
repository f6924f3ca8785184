"""Comments on turns (threads one level deep) and the failure-category taxonomy."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from django.db import transaction

from reviewapp.audit import AuditChange, audit_record, audit_records, model_state
from reviewapp.models import Category, Comment, Judge, Turn
from reviewapp.triage.services.claims import ReviewError


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _active_categories(categories: Iterable[Category]) -> list[Category]:
    categories = list(categories)
    retired = [c.slug for c in categories if not c.active]
    if retired:
        raise ReviewError(f"Retired categories cannot be used: {', '.join(retired)}.")
    return categories


def _check_span(turn: Turn | None, quoted_span: str) -> str:
    quoted_span = quoted_span.strip()
    if not quoted_span:
        return ""
    if turn is None or not any(_norm(quoted_span) in _norm(text) for text in (turn.text, turn.intended_text) if text):
        raise ReviewError("The quoted span must be copied from the turn's text.")
    return quoted_span


# --- comments -----------------------------------------------------------------------------------


def comment_create(
    *,
    author,
    turn: Turn,
    body: str,
    categories: Sequence[Category] = (),
    parent: Comment | None = None,
    judge: Judge | None = None,
    quoted_span: str = "",
    flagged_for_lead: bool = False,
) -> Comment:
    """A comment on a turn (a reply when `parent` is given), with failure categories from the taxonomy."""
    body = body.strip()
    if not body:
        raise ReviewError("A comment needs some text.")
    if parent is not None:
        if parent.turn_id != turn.pk:
            raise ReviewError("A reply belongs to the same turn as the comment it answers.")
        # Threads stay one level deep: a reply to a reply joins the same thread.
        parent = parent.parent if parent.parent_id else parent
    categories = _active_categories(categories)
    quoted_span = _check_span(turn, quoted_span)
    with transaction.atomic():
        comment, change = comment_row(
            author=author,
            turn=turn,
            body=body,
            categories=categories,
            parent=parent,
            judge=judge,
            quoted_span=quoted_span,
            flagged_for_lead=flagged_for_lead,
        )
        audit_records(actor=author, events=[change])
    return comment


def comment_row(
    *,
    author,
    turn: Turn,
    body: str,
    categories: Sequence[Category],
    parent: Comment | None = None,
    judge: Judge | None = None,
    quoted_span: str = "",
    flagged_for_lead: bool = False,
) -> tuple[Comment, AuditChange]:
    """Write a new comment whose text, categories and span are already checked, inside the caller's
    transaction; returns it with its audit change for the caller to write (with its own, in one INSERT)."""
    comment, change = comment_unsaved(
        author=author,
        turn=turn,
        body=body,
        categories=categories,
        parent=parent,
        judge=judge,
        quoted_span=quoted_span,
        flagged_for_lead=flagged_for_lead,
    )
    comment.save(force_insert=True)
    if categories:  # a new comment has none: nothing to read or clear
        comment.categories.add(*categories)
    return comment, change


def comment_unsaved(
    *,
    author,
    turn: Turn,
    body: str,
    categories: Sequence[Category],
    parent: Comment | None = None,
    judge: Judge | None = None,
    quoted_span: str = "",
    flagged_for_lead: bool = False,
) -> tuple[Comment, AuditChange]:
    """`comment_row`'s comment before it is written (with `categories`, by the caller), and its audit change."""
    comment = Comment(
        turn=turn,
        author=author,
        parent=parent,
        judge=judge,
        body=body.strip(),
        quoted_span=quoted_span,
        flagged_for_lead=flagged_for_lead,
    )
    after = {
        "turn": turn.pk,
        "parent": parent.pk if parent else None,
        "categories": [c.slug for c in categories],
        "flagged_for_lead": flagged_for_lead,
    }
    return comment, ("comment.create", comment, None, after)


def comment_flag(*, comment: Comment, user, flagged: bool) -> Comment:
    """Flag a comment for a lead's attention, or clear the flag."""
    with transaction.atomic():
        before = {"flagged_for_lead": comment.flagged_for_lead}
        Comment.objects.filter(pk=comment.pk).update(flagged_for_lead=flagged)
        comment.flagged_for_lead = flagged
        audit_record(actor=user, action="comment.flag", obj=comment, before=before, after={"flagged_for_lead": flagged})
    return comment


# --- the taxonomy -------------------------------------------------------------------------------


# What the audit trail keeps of a category.
CATEGORY_AUDITED = ("slug", "name", "description", "active")


@transaction.atomic
def category_create(*, actor, slug: str, name: str, description: str = "") -> Category:
    slug, name = slug.strip(), name.strip()
    if not slug or not name:
        raise ReviewError("A category needs a slug and a name.")
    if Category.objects.filter(slug=slug).exists():
        raise ReviewError(f"A category with the slug {slug!r} exists already.")
    category = Category.objects.create(slug=slug, name=name, description=description.strip())
    after = model_state(category, *CATEGORY_AUDITED)
    audit_record(actor=actor, action="category.create", obj=category, before=None, after=after)
    return category


@transaction.atomic
def category_update(*, actor, category: Category, name: str, description: str, active: bool) -> Category:
    """Rename, describe or retire a category. The slug never changes: labels already given keep meaning."""
    name = name.strip()
    if not name:
        raise ReviewError("A category needs a name.")
    before = model_state(category, *CATEGORY_AUDITED)
    category.name, category.description, category.active = name, description.strip(), active
    category.save(update_fields=["name", "description", "active"])
    after = model_state(category, *CATEGORY_AUDITED)
    audit_record(actor=actor, action="category.update", obj=category, before=before, after=after)
    return category
