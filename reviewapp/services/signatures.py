"""Tier-1 signatures: creating, changing and checking them against gold labels.

Every signature is justified by evidence turns. A change that can make it match more (a new
pattern or kind, fewer negation guards, reactivation) is a loosening and needs at least one new
evidence turn, so nobody widens a rule on a hunch.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from django.db import transaction

from scoring.signatures import SignatureError, SignatureRule, evaluate, validate_rule

from ..access import language_match_q
from ..models import GoldLabel, Judge, Signature, Turn
from ..models.review import GOLD_SOURCE_ORDER
from .judges import signature_rule

__all__ = [
    "SignatureCheck",
    "SignatureError",
    "signature_check_all",
    "signature_create",
    "signature_update",
]


def _check_evidence(turns: Sequence[Turn], language: str) -> None:
    base = language.split("-", 1)[0].lower()
    for turn in turns:
        turn_language = turn.conversation.language.lower()
        if turn_language != language.lower() and turn_language.split("-", 1)[0] != base:
            raise SignatureError(
                f"evidence turn {turn.pk} is in {turn.conversation.language}, not in the signature's language {language}"
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
    """Create an active signature. Raises SignatureError (bad rule, no or foreign evidence)."""
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
    _check_evidence(evidence, rule.language)
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
    return signature


_UNSET = object()


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
) -> Signature:
    """Change a signature. A loosening change needs at least one evidence turn not already linked."""
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
    _check_evidence(fresh, rule.language)
    with transaction.atomic():
        signature.pattern = rule.pattern
        signature.kind = rule.kind
        signature.negation_guards = list(rule.negation_guards)
        signature.label = rule.label
        signature.rating = rule.rating
        signature.passed = rule.passed
        if active is not None:
            signature.active = active
        signature.save()
        if fresh:
            signature.evidence.add(*fresh)
    return signature


# --- checking against gold ------------------------------------------------------------------------


@dataclass
class SignatureCheck:
    signature: Signature
    matches: int = 0
    agreeing: int = 0
    not_comparable: int = 0
    contradicting_turns: list[int] = field(default_factory=list)

    @property
    def compared(self) -> int:
        return self.agreeing + len(self.contradicting_turns)

    @property
    def precision(self) -> float | None:
        return None if not self.compared else self.agreeing / self.compared


def agrees_with_gold(rule: SignatureRule, gold: GoldLabel) -> bool | None:
    """True/False when the signature's outcome can be compared with the gold label, else None."""
    verdicts = []
    if rule.passed is not None and gold.passed is not None:
        verdicts.append(rule.passed == gold.passed)
    if rule.rating is not None and gold.rating is not None:
        verdicts.append(abs(rule.rating - gold.rating) < 1e-9)
    if rule.label and (gold.label or gold.failure_modes):
        verdicts.append(rule.label == gold.label or rule.label in (gold.failure_modes or []))
    return all(verdicts) if verdicts else None


# When a turn has several gold labels, the most deliberate one wins.
_SOURCE_PRIORITY = {source: rank for rank, source in enumerate(GOLD_SOURCE_ORDER)}


def _gold_for(judge_id: int, language: str) -> list[GoldLabel]:
    """One gold label per turn of ``judge`` in ``language`` (and its regional variants)."""
    language_filter = language_match_q(language, "conversation__language")
    labels = (
        GoldLabel.objects.filter(judge_id=judge_id, excluded=False, turn__isnull=False)
        .filter(language_filter)
        .select_related("turn", "conversation")
    )
    best: dict[int, GoldLabel] = {}
    for gold in labels:
        current = best.get(gold.turn_id)
        if current is None or _SOURCE_PRIORITY.get(gold.source, 9) < _SOURCE_PRIORITY.get(current.source, 9):
            best[gold.turn_id] = gold
    return [best[turn_id] for turn_id in sorted(best)]


def signature_check_all(signatures: Iterable[Signature]) -> list[SignatureCheck]:
    """Run each signature over the gold-labelled turns of its judge and language."""
    gold_cache: dict[tuple[int, str], list[GoldLabel]] = defaultdict(list)
    checks = []
    for signature in signatures:
        key = (signature.judge_id, signature.language.lower())
        if key not in gold_cache:
            gold_cache[key] = _gold_for(*key)
        rule = signature_rule(signature)
        check = SignatureCheck(signature=signature)
        for gold in gold_cache[key]:
            turn = gold.turn
            if turn is None or evaluate([rule], turn.text, gold.conversation.language) is None:
                continue
            check.matches += 1
            agreement = agrees_with_gold(rule, gold)
            if agreement is None:
                check.not_comparable += 1
            elif agreement:
                check.agreeing += 1
            else:
                check.contradicting_turns.append(turn.pk)
        checks.append(check)
    return checks
