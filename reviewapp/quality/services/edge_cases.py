"""Edge cases tagged on conversations: by a case's pattern (a rule) or by hand."""

from __future__ import annotations

import re

from django.db import transaction

from reviewapp.models import Conversation, EdgeCase, EdgeCaseTag, Turn
from scoring.errors import TribunalError


class EdgeCaseError(TribunalError, ValueError):
    """A tagging rule or a tag that cannot be applied as asked."""


@transaction.atomic
def edge_case_rule_apply(*, edge_case: EdgeCase, pattern: str) -> int:
    """Store `pattern` (a regular expression, case-insensitive) as the case's rule and tag every conversation
    with a turn that matches it. Tags by hand are kept; rule tags that no longer match are removed.
    Returns the number of conversations tagged by the rule."""
    pattern = pattern.strip()
    if not pattern:
        raise EdgeCaseError("A rule needs a pattern.")
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise EdgeCaseError(f"pattern {pattern!r} is not a regular expression: {exc}") from exc
    matching: set[int] = set()
    turns = Turn.objects.filter(conversation__dataset__isnull=False).values_list("conversation_id", "text")
    for conversation_id, text in turns.iterator(chunk_size=5000):
        if conversation_id not in matching and compiled.search(text or ""):
            matching.add(conversation_id)
    edge_case.pattern = pattern
    edge_case.save(update_fields=["pattern"])
    EdgeCaseTag.objects.filter(edge_case=edge_case, source=EdgeCaseTag.Source.RULE).exclude(
        conversation_id__in=matching
    ).delete()
    hand = set(
        EdgeCaseTag.objects.filter(edge_case=edge_case, source=EdgeCaseTag.Source.HAND).values_list(
            "conversation_id", flat=True
        )
    )
    EdgeCaseTag.objects.bulk_create(
        [
            EdgeCaseTag(edge_case=edge_case, conversation_id=pk, source=EdgeCaseTag.Source.RULE)
            for pk in sorted(matching - hand)
        ],
        ignore_conflicts=True,
    )
    return len(matching)


@transaction.atomic
def edge_case_tag(*, edge_case: EdgeCase, conversation: Conversation, user) -> EdgeCaseTag:
    """Tag `conversation` with `edge_case` by hand (a rule tag becomes a hand tag)."""
    tag, created = EdgeCaseTag.objects.get_or_create(
        edge_case=edge_case,
        conversation=conversation,
        defaults={"source": EdgeCaseTag.Source.HAND, "added_by": user},
    )
    if not created and tag.source != EdgeCaseTag.Source.HAND:
        tag.source, tag.added_by = EdgeCaseTag.Source.HAND, user
        tag.save(update_fields=["source", "added_by"])
    return tag


@transaction.atomic
def edge_case_untag(*, edge_case: EdgeCase, conversation: Conversation) -> bool:
    deleted, _ = EdgeCaseTag.objects.filter(edge_case=edge_case, conversation=conversation).delete()
    return bool(deleted)
