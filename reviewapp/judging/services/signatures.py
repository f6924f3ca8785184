"""Tier-1 signatures: creating, changing, switching off and checking them against gold labels.

Tier 1 never guesses:

* every signature is justified by evidence turns in its language that its own pattern matches;
* a change that can make it match more (a new pattern or kind, fewer negation guards, switching it
  back on) is a loosening and needs at least one new evidence turn;
* it is measured against the gold that wins (adjudicated > unanimous > imported) whenever it is
  created or changed: precision of its matches with n and a 95% Wilson interval. Below
  TRIBUNAL_SIGNATURE_PRECISION_FLOOR on at least TRIBUNAL_SIGNATURE_MIN_GOLD compared matches, the
  change is refused;
* gold that arrives later is checked by `signatures_recheck` (Celery beat, `check_signatures`, and
  every `sweep_start`): a signature that now contradicts gold is suspended, and sweeps skip it until
  an edit makes it agree again;
* every change is a new `SignatureVersion` (the rule as it was, its measure on gold, who and why)
  plus an audit event, and a sweep records the versions it used.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import transaction

from reviewapp.audit import audit_record
from reviewapp.judging.services.signature_checks import (
    record_version,
    refuse_if_contradicting,
    signature_measure,
    signature_snapshot,
)
from reviewapp.models import Judge, Signature, SignatureVersion, Turn
from scoring.signatures import (
    SignatureError,
    SignatureRule,
    find_match,
    validate_rule,
)

__all__ = ["SignatureError", "signature_create", "signature_update"]


# --- evidence ---------------------------------------------------------------------------------------


def _check_evidence(turns: Sequence[Turn], rule: SignatureRule) -> None:
    """Each evidence turn is in the rule's language and is matched by the rule it justifies."""
    base = rule.language.split("-", 1)[0].lower()
    for turn in turns:
        language = turn.conversation.language
        if language.lower() != rule.language.lower() and language.split("-", 1)[0].lower() != base:
            raise SignatureError(
                f"evidence turn {turn.pk} is in {language}, not in the signature's language {rule.language}"
            )
        if find_match(rule, turn.text, language) is None:
            raise SignatureError(
                f"evidence turn {turn.pk} does not match the pattern {rule.pattern!r} it is meant to justify "
                f"(its text: {turn.text[:120]!r})"
            )


def _rule(
    *,
    judge: Judge,
    language: str,
    criterion: str,
    intent: str,
    kind: str,
    pattern: str,
    negation_guards: Iterable[str],
    label: str,
    rating: float | None,
    passed: bool | None,
    pk: int | None = None,
) -> SignatureRule:
    return SignatureRule(
        id=pk,
        judge=judge.slug,
        language=language.strip(),
        criterion=criterion.strip(),
        intent=intent.strip(),
        kind=kind,
        pattern=pattern,
        negation_guards=tuple(g.strip() for g in negation_guards),
        label=label.strip(),
        rating=rating,
        passed=passed,
    )


# --- writes -----------------------------------------------------------------------------------------


def signature_create(
    *,
    judge: Judge,
    language: str,
    intent: str,
    kind: str,
    pattern: str,
    evidence: Sequence[Turn],
    negation_guards: Sequence[str] = (),
    label: str = "",
    rating: float | None = None,
    passed: bool | None = None,
    criterion: str = "",
    created_by=None,
) -> Signature:
    """Create an active signature, measured on gold first.

    Raises SignatureError for a bad rule, missing, foreign or non-matching evidence, or matches that
    contradict gold (below the precision floor on enough gold).
    """
    rule = _rule(
        judge=judge,
        language=language,
        criterion=criterion,
        intent=intent,
        kind=kind,
        pattern=pattern,
        negation_guards=negation_guards,
        label=label,
        rating=rating,
        passed=passed,
    )
    validate_rule(rule)
    if not evidence:
        raise SignatureError("a signature needs at least one evidence turn that justifies it")
    _check_evidence(evidence, rule)
    check = signature_measure(judge=judge, rule=rule)
    refuse_if_contradicting(check, "this signature")
    with transaction.atomic():
        signature = Signature.objects.create(
            judge=judge,
            language=rule.language,
            criterion=rule.criterion,
            intent=rule.intent,
            kind=rule.kind,
            pattern=rule.pattern,
            negation_guards=list(rule.negation_guards),
            label=rule.label,
            rating=rule.rating,
            passed=rule.passed,
            created_by=created_by,
        )
        signature.evidence.add(*evidence)
        check.signature = signature
        record_version(signature, change=SignatureVersion.Change.CREATED, actor=created_by, check=check)
        audit_record(
            actor=created_by, action="signature.create", obj=signature, before=None, after=signature_snapshot(signature)
        )
    return signature


_UNSET: Any = object()


def signature_update(
    *,
    signature: Signature,
    pattern: str | None = None,
    kind: str | None = None,
    negation_guards: Sequence[str] | None = None,
    label: str | None = None,
    rating=_UNSET,
    passed=_UNSET,
    active: bool | None = None,
    new_evidence: Sequence[Turn] = (),
    actor=None,
    note: str = "",
) -> Signature:
    """Change a signature: a new version, measured on gold, with an audit event.

    A loosening change needs at least one evidence turn not already linked; a version whose matches
    contradict gold is refused. An edit that agrees with gold lifts a suspension.
    """
    with transaction.atomic():
        signature = Signature.objects.select_for_update().select_related("judge").get(pk=signature.pk)
        guards = tuple(signature.negation_guards or ()) if negation_guards is None else tuple(negation_guards)
        rule = _rule(
            judge=signature.judge,
            language=signature.language,
            criterion=signature.criterion,
            intent=signature.intent,
            kind=signature.kind if kind is None else kind,
            pattern=signature.pattern if pattern is None else pattern,
            negation_guards=guards,
            label=signature.label if label is None else label,
            rating=signature.rating if rating is _UNSET else rating,
            passed=signature.passed if passed is _UNSET else passed,
            pk=signature.pk,
        )
        validate_rule(rule)
        loosening = []
        if rule.pattern != signature.pattern:
            loosening.append("pattern")
        if rule.kind != signature.kind:
            loosening.append("kind")
        removed = set(signature.negation_guards or ()) - set(rule.negation_guards)
        if removed:
            loosening.append("negation guards removed")
        if active is True and not signature.active:
            loosening.append("reactivation")
        known = set(signature.evidence.values_list("pk", flat=True))
        fresh = [t for t in new_evidence if t.pk not in known]
        if loosening and not fresh:
            raise SignatureError(
                f"changing the {', '.join(loosening)} of signature {signature.pk} can make it match more; "
                "give at least one new evidence turn that justifies the change"
            )
        _check_evidence(fresh, rule)
        # Evidence that justified the old rule but is not matched by the new one stops backing it
        # (the earlier version keeps it in its history).
        dropped = [
            t.pk
            for t in Turn.objects.filter(pk__in=known).select_related("conversation")
            if find_match(rule, t.text, t.conversation.language) is None
        ]
        if dropped and not (known - set(dropped)) and not fresh:
            raise SignatureError(f"no evidence turn of signature {signature.pk} matches the changed pattern")

        before = signature_snapshot(signature, known)
        rule_changed = (
            rule.pattern != signature.pattern
            or rule.kind != signature.kind
            or list(rule.negation_guards) != list(signature.negation_guards or [])
            or rule.label != signature.label
            or rule.rating != signature.rating
            or rule.passed != signature.passed
            or bool(fresh)
            or bool(dropped)
        )
        will_be_active = signature.active if active is None else active
        check = signature_measure(judge=signature.judge, rule=rule)
        check.signature = signature
        if will_be_active:
            refuse_if_contradicting(check, f"signature {signature.pk} as changed")
        suspended = signature.suspended_at is not None
        if not rule_changed and will_be_active == signature.active and not (suspended and will_be_active):
            return signature

        if will_be_active != signature.active and not (loosening and set(loosening) - {"reactivation"}):
            change = SignatureVersion.Change.SWITCHED_ON if will_be_active else SignatureVersion.Change.SWITCHED_OFF
        elif rule_changed:
            change = SignatureVersion.Change.EDITED
        else:
            # Unchanged, but the gold it contradicted was corrected: it agrees again.
            change = SignatureVersion.Change.REINSTATED
        lifted = suspended and will_be_active
        signature.pattern = rule.pattern
        signature.kind = rule.kind
        signature.negation_guards = list(rule.negation_guards)
        signature.label = rule.label
        signature.rating = rule.rating
        signature.passed = rule.passed
        signature.active = will_be_active
        if lifted:
            signature.suspended_at = None
            signature.suspended_reason = ""
            note = (note + " " if note else "") + "Agrees with gold again: suspension lifted."
        signature.version += 1
        signature.save()
        if fresh:
            signature.evidence.add(*fresh)
        if dropped:
            signature.evidence.remove(*dropped)
            note = (note + " " if note else "") + (
                f"Evidence turn(s) {', '.join(map(str, dropped))} no longer match the pattern and were unlinked."
            )
        record_version(signature, change=change, actor=actor, check=check, note=note)
        audit_record(
            actor=actor, action=f"signature.{change}", obj=signature, before=before, after=signature_snapshot(signature)
        )
    return signature
