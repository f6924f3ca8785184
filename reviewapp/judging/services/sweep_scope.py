"""Which targets a sweep re-scores: all of them, or only what people looked at.

A scope is plain data kept in ``Sweep.params["scope"]`` so planning and every chunk see the same
targets:

* ``commented``: turns reviewers commented on (optionally only comments with one category); a
  conversation-level judge re-scores the conversations holding such a turn.
* ``gold``: targets with a gold label for the swept judge (adjudicated, unanimous or imported).
* ``moved:A,B``: targets whose outcome differs between versions A and B of the swept judge (the
  moved turns of the comparison page).

``scope_parse`` reads the CLI/API text (``commented``, ``gold``, ``moved:A,B``) and raises
ScopeError naming what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reviewapp.models import Category, Comment, Judge, JudgeVersion
from scoring.errors import TribunalError

KINDS = ("all", "commented", "gold", "moved")


class ScopeError(TribunalError, ValueError):
    """A scope that cannot be read or applied."""


@dataclass(frozen=True)
class Scope:
    kind: str = "all"
    category: str = ""
    versions: tuple[str, str] | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind}
        if self.category:
            data["category"] = self.category
        if self.versions:
            data["versions"] = list(self.versions)
        return data

    @property
    def label(self) -> str:
        if self.kind == "moved" and self.versions:
            return f"moved:{self.versions[0]},{self.versions[1]}"
        if self.kind == "commented" and self.category:
            return f"commented ({self.category})"
        return self.kind


ALL = Scope()


def scope_parse(text: str | None, *, category: str = "") -> Scope:
    """`commented`, `gold`, `moved:A,B` or empty (every target); `category` only with commented."""
    text = (text or "").strip()
    category = (category or "").strip()
    if not text or text == "all":
        if category:
            raise ScopeError("a category narrows the commented scope: use --scope commented with --category")
        return ALL
    kind, _, rest = text.partition(":")
    if kind == "moved":
        a, sep, b = rest.partition(",")
        if not sep or not a.strip() or not b.strip():
            raise ScopeError(f"scope {text!r}: write moved:A,B with two version labels")
        if category:
            raise ScopeError("a category narrows the commented scope only")
        return Scope(kind="moved", versions=(a.strip(), b.strip()))
    if rest:
        raise ScopeError(f"scope {text!r}: only moved takes a value (moved:A,B)")
    if kind not in KINDS:
        raise ScopeError(f"unknown scope {text!r}: expected commented, gold or moved:A,B")
    if category and kind != "commented":
        raise ScopeError("a category narrows the commented scope only")
    if category and not Category.objects.filter(slug=category).exists():
        raise ScopeError(f"no category {category!r}")
    return Scope(kind=kind, category=category)


def scope_from_params(data: dict[str, Any] | None) -> Scope:
    if not data:
        return ALL
    versions = data.get("versions")
    return Scope(
        kind=str(data.get("kind") or "all"),
        category=str(data.get("category") or ""),
        versions=(str(versions[0]), str(versions[1])) if versions else None,
    )


def scope_targets(*, scope: Scope, judge: Judge, level: str, target_ids: list[int]) -> list[int]:
    """`target_ids` (turns or conversations, in order) narrowed to `scope` for `judge`."""
    if scope.kind == "all":
        return target_ids
    conversation_level = level == Judge.Level.CONVERSATION
    if scope.kind == "commented":
        comments = Comment.objects.all()
        if scope.category:
            comments = comments.filter(categories__slug=scope.category)
        field = "turn__conversation_id" if conversation_level else "turn_id"
        keep = set(comments.values_list(field, flat=True))
    elif scope.kind == "gold":
        from reviewapp.quality.selectors.quality_slice import judge_gold

        keep = {conv if conversation_level else turn for conv, turn in judge_gold(judge=judge)}
        keep.discard(None)
    elif scope.kind == "moved":
        keep = _moved(judge, scope, conversation_level)
    else:
        raise ScopeError(f"unknown scope {scope.kind!r}")
    return [pk for pk in target_ids if pk in keep]


def _moved(judge: Judge, scope: Scope, conversation_level: bool) -> set[int]:
    """The targets the comparison page lists as moved from version A to version B."""
    from reviewapp.quality.selectors.comparisons import version_comparison

    assert scope.versions is not None
    found = {v.version: v for v in JudgeVersion.objects.filter(judge=judge, version__in=scope.versions)}
    missing = [label for label in scope.versions if label not in found]
    if missing:
        known = ", ".join(JudgeVersion.objects.filter(judge=judge).values_list("version", flat=True)) or "none"
        raise ScopeError(f"judge {judge.slug} has no version {', '.join(missing)} (known: {known})")
    a, b = (found[label] for label in scope.versions)
    moved: set[int] = set()
    for target in version_comparison(a=a, b=b, n_boot=0).moved:
        conversation_id, turn_id = target.target
        if conversation_level and turn_id is None:
            moved.add(conversation_id)
        elif not conversation_level and turn_id is not None:
            moved.add(turn_id)
    return moved
