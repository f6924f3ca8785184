"""Signatures checked against gold: precision per rule, versions as they were when a sweep used them, rechecks after new gold (a signature that contradicts gold is suspended), and the rules a sweep may use."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Count, Max, Q
from django.utils import timezone

from reviewapp.access import language_match_q
from reviewapp.audit import audit_record
from reviewapp.judging.services.judges import signature_rule
from reviewapp.models import GoldLabel, Judge, Signature, SignatureVersion, Sweep
from reviewapp.quality.selectors.gold import winning_label
from scoring.signatures import (
    GoldPrecision,
    SignatureError,
    SignatureRule,
    applies_to,
    evaluate,
    gold_precision,
)


def precision_floor() -> float:
    return float(settings.TRIBUNAL_SIGNATURE_PRECISION_FLOOR)


def min_gold() -> int:
    return int(settings.TRIBUNAL_SIGNATURE_MIN_GOLD)


# --- checking against gold ------------------------------------------------------------------------


@dataclass
class SignatureCheck:
    signature: Signature | None
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

    @property
    def gold(self) -> GoldPrecision:
        return gold_precision(agreeing=self.agreeing, compared=self.compared)

    @property
    def below_floor(self) -> bool:
        return self.gold.below_floor(floor=precision_floor(), min_compared=min_gold())

    @property
    def insufficient(self) -> bool:
        """Too few compared matches to call it either way."""
        return self.compared < min_gold()

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.gold.as_dict(),
            "matches": self.matches,
            "not_comparable": self.not_comparable,
            "contradicting_turns": list(self.contradicting_turns),
            "floor": precision_floor(),
            "min_gold": min_gold(),
        }

    def describe(self) -> str:
        gold = self.gold
        if gold.precision is None:
            return "no gold-labelled turn to compare with yet"
        return (
            f"precision {gold.precision:.3f} on {gold.compared} gold match(es) "
            f"(95% Wilson {gold.low:.3f}-{gold.high:.3f})"
        )


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


def _gold_for(judge_id: int, language: str) -> list[GoldLabel]:
    """One gold label per turn of ``judge`` in ``language`` (and its regional variants)."""
    language_filter = language_match_q(language, "conversation__language")
    labels = (
        GoldLabel.objects.filter(judge_id=judge_id, excluded=False, turn__isnull=False)
        .filter(language_filter)
        .select_related("turn", "conversation")
    )
    by_turn: dict[int, list[GoldLabel]] = defaultdict(list)
    for gold in labels:
        by_turn[gold.turn_id].append(gold)
    # The gold that wins (adjudicated > unanimous > imported), as on every other screen.
    best = {turn_id: winning_label(group) for turn_id, group in by_turn.items()}
    return [label for turn_id in sorted(best) if (label := best[turn_id]) is not None]


def _measure(rule: SignatureRule, gold_labels: Iterable[GoldLabel], signature: Signature | None) -> SignatureCheck:
    check = SignatureCheck(signature=signature)
    for gold in gold_labels:
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
    return check


def signature_measure(*, judge: Judge, rule: SignatureRule) -> SignatureCheck:
    """A rule (saved or not) against the gold of its judge and language."""
    return _measure(rule, _gold_for(judge.pk, rule.language.lower()), None)


def signature_check_all(signatures: Iterable[Signature]) -> list[SignatureCheck]:
    """Run each signature over the gold-labelled turns of its judge and language."""
    gold_cache: dict[tuple[int, str], list[GoldLabel]] = defaultdict(list)
    checks = []
    for signature in signatures:
        key = (signature.judge_id, signature.language.lower())
        if key not in gold_cache:
            gold_cache[key] = _gold_for(*key)
        checks.append(_measure(signature_rule(signature), gold_cache[key], signature))
    return checks


def refuse_if_contradicting(check: SignatureCheck, what: str) -> None:
    if check.below_floor:
        turns = ", ".join(str(t) for t in check.contradicting_turns[:20])
        more = "" if len(check.contradicting_turns) <= 20 else f" and {len(check.contradicting_turns) - 20} more"
        raise SignatureError(
            f"{what} contradicts gold: {check.describe()}, below the floor of {precision_floor():.2f} "
            f"(TRIBUNAL_SIGNATURE_PRECISION_FLOOR); gold disagrees on turn(s) {turns}{more}"
        )


# --- versions ---------------------------------------------------------------------------------------


def signature_snapshot(signature: Signature, evidence_ids: Iterable[int] | None = None) -> dict[str, Any]:
    if evidence_ids is None:
        evidence_ids = signature.evidence.values_list("pk", flat=True)
    return {
        "language": signature.language,
        "criterion": signature.criterion,
        "intent": signature.intent,
        "kind": signature.kind,
        "pattern": signature.pattern,
        "negation_guards": list(signature.negation_guards or []),
        "label": signature.label,
        "rating": signature.rating,
        "passed": signature.passed,
        "active": signature.active,
        "suspended": signature.suspended_at is not None,
        "evidence": sorted(evidence_ids),
    }


def record_version(
    signature: Signature, *, change: str, actor, check: SignatureCheck | None, note: str = ""
) -> SignatureVersion:
    return SignatureVersion.objects.create(
        signature=signature,
        version=signature.version,
        change=change,
        rule=signature_snapshot(signature),
        gold_check=check.as_dict() if check is not None else {},
        note=note,
        changed_by=actor if actor is not None and getattr(actor, "is_authenticated", False) else None,
    )


def signature_current_version(*, signature: Signature) -> SignatureVersion:
    """The SignatureVersion row of the signature as it is now (made for rows written outside the service)."""
    version = SignatureVersion.objects.filter(signature=signature, version=signature.version).first()
    if version is None:
        version = record_version(
            signature, change=SignatureVersion.Change.CREATED, actor=None, check=None, note="recorded on first use"
        )
    return version


def rule_of_version(version: SignatureVersion, judge_slug: str) -> SignatureRule:
    rule = version.rule
    return SignatureRule(
        id=version.signature_id,
        judge=judge_slug,
        language=rule["language"],
        criterion=rule.get("criterion", ""),
        intent=rule["intent"],
        kind=rule["kind"],
        pattern=rule["pattern"],
        negation_guards=tuple(str(g) for g in rule.get("negation_guards") or ()),
        label=rule.get("label", ""),
        rating=rule.get("rating"),
        passed=rule.get("passed"),
    )


def signature_suspend(*, signature: Signature, check: SignatureCheck, actor=None) -> Signature:
    """Suspend a signature whose matches contradict gold; sweeps skip it until an edit fixes it."""
    with transaction.atomic():
        signature = Signature.objects.select_for_update().get(pk=signature.pk)
        if signature.suspended_at is not None:
            return signature
        before = signature_snapshot(signature)
        signature.suspended_at = timezone.now()
        signature.suspended_reason = (
            f"Contradicts gold: {check.describe()}, below the floor of {precision_floor():.2f}; "
            f"gold disagrees on turn(s) {', '.join(str(t) for t in check.contradicting_turns[:50])}."
        )
        signature.version += 1
        signature.save(update_fields=["suspended_at", "suspended_reason", "version", "updated_at"])
        record_version(signature, change=SignatureVersion.Change.SUSPENDED, actor=actor, check=check)
        audit_record(
            actor=actor, action="signature.suspend", obj=signature, before=before, after=signature_snapshot(signature)
        )
    return signature


@dataclass
class RecheckSummary:
    checked: int = 0
    suspended: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"checked": self.checked, "suspended": list(self.suspended)}


def signatures_recheck(
    *, signatures: Iterable[Signature] | None = None, judge_id: int | None = None, actor=None
) -> RecheckSummary:
    """Measure active, unsuspended signatures (of one judge, if given) on today's gold; suspend those below the floor."""
    if signatures is None:
        signatures = Signature.objects.filter(active=True, suspended_at__isnull=True).select_related("judge")
        if judge_id is not None:
            signatures = signatures.filter(judge_id=judge_id)
    summary = RecheckSummary()
    for check in signature_check_all(signatures):
        signature = check.signature
        assert signature is not None
        summary.checked += 1
        if signature.active and signature.suspended_at is None and check.below_floor:
            signature_suspend(signature=signature, check=check, actor=actor)
            summary.suspended.append(signature.pk)
    return summary


def signatures_after_gold(*, judge_id: int, dispatch: Callable[[int], object] | None) -> None:
    """New gold for a judge: once it is committed, hand the judge to `dispatch` to recheck its signatures
    (`tasks.signatures.signatures_recheck_queue` from a view). Without one, the recheck waits for the next
    sweep start (which rechecks when gold changed) or the periodic recheck."""
    if dispatch is None:
        return
    if not Signature.objects.filter(judge_id=judge_id, active=True, suspended_at__isnull=True).exists():
        return
    transaction.on_commit(lambda: dispatch(judge_id))


def _usable(judges: Sequence[Judge], language: str):
    qs = Signature.objects.filter(judge__in=judges, active=True, suspended_at__isnull=True).select_related("judge")
    if language:
        base = language.split("-", 1)[0]
        # The sweep's own language, its base language (a "fr" rule covers "fr-CA"), and its variants.
        qs = qs.filter(Q(language__iexact=base) | language_match_q(language, "language"))
    return qs.order_by("id")


def _gold_fingerprint(judge_ids: Iterable[int], signatures: Sequence[Signature]) -> str:
    """Changes whenever gold of these judges is added or removed, or one of the signatures changes."""
    gold = GoldLabel.objects.filter(judge_id__in=set(judge_ids)).aggregate(
        n=Count("id"), last=Max("id"), at=Max("created_at")
    )
    rules = [(s.pk, s.version, s.updated_at.isoformat() if s.updated_at else "") for s in signatures]
    return repr((sorted(set(judge_ids)), gold["n"], gold["last"], str(gold["at"]), rules))


def signatures_for_sweep(*, sweep: Sweep, judges: Sequence[Judge]) -> list[SignatureVersion]:
    """Recheck the sweep's candidate signatures on gold, then record the versions it will use.

    The recheck runs over every gold turn of the judges, so it is skipped when neither the gold nor
    the signatures changed since this process last did it (the beat task rechecks everything anyway).
    """
    candidates = list(_usable(judges, sweep.language))
    if candidates:
        key = (
            "tier1-recheck:"
            + hashlib.sha256(_gold_fingerprint([j.pk for j in judges], candidates).encode()).hexdigest()
        )
        if cache.get(key) is None:
            signatures_recheck(signatures=candidates)
            cache.set(key, True, timeout=settings.TRIBUNAL_SIGNATURE_RECHECK_SECONDS)
    versions = [signature_current_version(signature=s) for s in _usable(judges, sweep.language)]
    for version in versions:
        version.sweeps.add(sweep)
    sweep.params = {**sweep.params, "signature_versions": [v.pk for v in versions]}
    return versions


def rules_for_sweep(*, sweep: Sweep, judge: Judge, language: str) -> list[SignatureRule]:
    """The rules a sweep's chunk applies: the versions recorded at its start, minus any suspended since."""
    recorded = sweep.params.get("signature_versions")
    if recorded is None:
        # A sweep planned before versions were recorded: the live rules, never a suspended one.
        from reviewapp.judging.services.judges import signature_rules

        return signature_rules(judge, language)
    versions = (
        SignatureVersion.objects.filter(
            pk__in=recorded, signature__judge=judge, signature__active=True, signature__suspended_at__isnull=True
        )
        .select_related("signature")
        .order_by("signature_id")
    )
    rules = [rule_of_version(v, judge.slug) for v in versions]
    return [rule for rule in rules if applies_to(rule, language)]
