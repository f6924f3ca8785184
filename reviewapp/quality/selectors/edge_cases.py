"""Reads for edge-case tags on one conversation."""

from __future__ import annotations

from reviewapp.models import Conversation, EdgeCase, EdgeCaseTag


def conversation_tags(*, conversation: Conversation) -> list[EdgeCaseTag]:
    return list(
        EdgeCaseTag.objects.filter(conversation=conversation)
        .select_related("edge_case__judge", "added_by")
        .order_by("edge_case__judge__slug", "edge_case__position")
    )


def taggable_cases() -> list[EdgeCase]:
    return list(EdgeCase.objects.select_related("judge").order_by("judge__slug", "position"))
