"""Tier 1 never guesses: signatures measured on gold when created or changed, suspended when gold
arrives later, evidence that must match, versions recorded by each sweep."""

import math

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from reviewapp.judging.services.signature_checks import signatures_recheck
from reviewapp.judging.services.signatures import SignatureError, signature_create, signature_update
from reviewapp.judging.tasks.signatures import signatures_recheck_all, signatures_recheck_queue
from reviewapp.models import AuditEvent, GoldLabel, Signature, SignatureVersion, Verdict
from tests.factories import dataset_of_calls, store_judge

pytestmark = pytest.mark.django_db

GREETINGS = [f"Bonjour, Air Horizon, Camille {i} à l'appareil." for i in range(9)]


def wilson(successes: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval written out from its formula (independent of statsmodels)."""
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


@pytest.fixture
def speak():
    return store_judge("speakability")


@pytest.fixture
def french(speak):
    dataset = dataset_of_calls("calls-fr", {f"c{i}": ("fr", [text]) for i, text in enumerate(GREETINGS)})
    turns = list(dataset.conversations.order_by("id"))
    return dataset, [c.turns.get(role="agent") for c in turns]


def add_gold(judge, turns, *, passed, source=GoldLabel.Source.IMPORTED):
    for turn in turns:
        GoldLabel.objects.create(judge=judge, conversation=turn.conversation, turn=turn, source=source, passed=passed)


def greeting(speak, evidence, **overrides):
    values = {
        "judge": speak.judge,
        "language": "fr",
        "intent": "greeting",
        "kind": "substring",
        "pattern": "à l'appareil",
        "passed": False,
        "evidence": evidence,
    }
    values.update(overrides)
    return signature_create(**values)


def test_a_signature_contradicting_gold_on_9_of_9_is_refused_at_creation(speak, french):
    _, turns = french
    add_gold(speak.judge, turns, passed=True)
    with pytest.raises(SignatureError) as caught:
        greeting(speak, turns[:1])
    message = str(caught.value)
    low, high = wilson(0, 9)
    assert "precision 0.000 on 9 gold match(es)" in message
    assert f"95% Wilson {low:.3f}-{high:.3f}" in message
    assert f"turn(s) {turns[0].pk}, {turns[1].pk}" in message
    assert not Signature.objects.exists() and not SignatureVersion.objects.exists()


def test_too_little_gold_is_not_a_verdict_either_way(speak, french, settings):
    _, turns = french
    add_gold(speak.judge, turns[:4], passed=True)  # 4 contradictions < TRIBUNAL_SIGNATURE_MIN_GOLD (5)
    signature = greeting(speak, turns[:1])
    (version,) = signature.versions.all()
    assert version.gold_check["compared"] == 4 and version.gold_check["precision"] == 0.0
    settings.TRIBUNAL_SIGNATURE_MIN_GOLD = 4
    with pytest.raises(SignatureError, match="contradicts gold"):
        greeting(speak, turns[:1], pattern="Camille")


def test_gold_arriving_later_suspends_it_and_the_next_sweep_does_not_use_it(speak, french, llm_off, run_sweep):
    dataset, turns = french
    signature = greeting(speak, turns[:1])
    first = run_sweep(dataset=dataset, judge_versions=[speak], qa_sample=0)
    assert first.tier1_resolved == 9
    assert [v.signature_id for v in first.signature_versions.all()] == [signature.pk]

    add_gold(speak.judge, turns, passed=True)  # the gold says these greetings pass: 9 of 9 contradicted
    second = run_sweep(dataset=dataset, judge_versions=[speak], qa_sample=0)

    signature.refresh_from_db()
    assert signature.suspended_at is not None
    assert "precision 0.000 on 9 gold match(es)" in signature.suspended_reason
    assert second.tier1_resolved == 0
    assert not Verdict.objects.filter(sweep=second, tier=Verdict.Tier.SIGNATURE).exists()
    assert second.signature_versions.count() == 0
    assert second.params["signature_versions"] == []
    assert AuditEvent.objects.filter(action="signature.suspend", object_id=str(signature.pk)).count() == 1
    assert list(signature.versions.values_list("version", "change")) == [(1, "created"), (2, "suspended")]


def test_an_edit_that_agrees_with_gold_lifts_the_suspension(speak, french, llm_off, run_sweep):
    dataset, turns = french
    signature = greeting(speak, turns[:1])
    add_gold(speak.judge, turns, passed=True)
    assert signatures_recheck().suspended == [signature.pk]
    with pytest.raises(SignatureError, match="contradicts gold"):
        signature_update(signature=signature, label="greeting")  # still says fail
    signature_update(signature=signature, passed=True, note="greetings pass")
    signature.refresh_from_db()
    assert signature.suspended_at is None and signature.version == 3
    latest = signature.versions.get(version=3)
    assert latest.change == "edited" and latest.gold_check["precision"] == 1.0
    assert "suspension lifted" in latest.note
    sweep = run_sweep(dataset=dataset, judge_versions=[speak], qa_sample=0)
    assert sweep.tier1_resolved == 9
    assert list(sweep.signature_versions.values_list("version", flat=True)) == [3]


def test_evidence_must_match_the_pattern_it_justifies(speak, french):
    _, turns = french
    other = dataset_of_calls("other-fr", {"x": ("fr", ["Votre vol part à neuf heures."])})
    stray = other.conversations.get().turns.get(role="agent")
    with pytest.raises(SignatureError) as caught:
        greeting(speak, [turns[0], stray])
    assert f"evidence turn {stray.pk} does not match the pattern" in str(caught.value)
    signature = greeting(speak, [turns[0]])
    with pytest.raises(SignatureError, match=f"evidence turn {stray.pk} does not match"):
        signature_update(signature=signature, pattern="Air Horizon", new_evidence=[stray])


def test_switching_off_is_a_version_and_sweeps_skip_it(speak, french, llm_off, run_sweep):
    dataset, turns = french
    signature = greeting(speak, turns[:1], passed=True)
    signature_update(signature=signature, active=False)
    sweep = run_sweep(dataset=dataset, judge_versions=[speak], qa_sample=0)
    assert sweep.tier1_resolved == 0
    with pytest.raises(SignatureError, match="reactivation"):
        signature_update(signature=signature, active=True)
    signature_update(signature=signature, active=True, new_evidence=[turns[1]])
    assert list(signature.versions.values_list("change", flat=True)) == ["created", "switched_off", "switched_on"]


def test_a_sweep_keeps_the_version_it_started_with(speak, french, llm_off, eager_celery):
    from reviewapp.judging.services.sweeps import sweep_chunk_run, sweep_start

    dataset, turns = french
    signature = greeting(speak, turns[:1], passed=True)
    sweep = sweep_start(dataset=dataset, judge_versions=[speak], qa_sample=0, dispatch=False)
    signature_update(signature=signature, label="greeting")  # v2, after the sweep was planned
    target_ids = sorted(t.pk for t in turns)
    sweep_chunk_run(sweep_id=sweep.pk, judge_version_id=speak.pk, target_ids=target_ids)
    labels = set(Verdict.objects.filter(sweep=sweep, tier="signature").values_list("label", flat=True))
    assert labels == {""}  # v1 gave no label
    assert list(sweep.signature_versions.values_list("version", flat=True)) == [1]


def test_check_signatures_suspends_those_below_the_floor(speak, french, capsys):
    _, turns = french
    signature = greeting(speak, turns[:1])
    add_gold(speak.judge, turns, passed=True)
    with pytest.raises(CommandError, match=f"signature {signature.pk}"):
        call_command("check_signatures")
    out = capsys.readouterr().out
    low, high = wilson(0, 9)
    assert f"{low:.3f}-{high:.3f}" in out and "suspended now" in out
    signature.refresh_from_db()
    assert signature.suspended_at is not None


def test_the_periodic_recheck_suspends_and_is_scheduled(speak, french, settings):
    _, turns = french
    signature = greeting(speak, turns[:1])
    add_gold(speak.judge, turns[:6], passed=True)
    add_gold(speak.judge, turns[6:], passed=False)  # 3 of 9 agree: 0.333 < 0.9
    assert signatures_recheck_all() == {"checked": 1, "suspended": [signature.pk]}
    assert signatures_recheck_all() == {"checked": 0, "suspended": []}
    schedule = settings.CELERY_BEAT_SCHEDULE["signatures-recheck"]
    assert schedule["task"] == "reviewapp.judging.tasks.signatures.signatures_recheck_all"
    low, high = wilson(3, 9)
    check = signature.versions.get(change="suspended").gold_check
    assert (check["agreeing"], check["compared"]) == (3, 9)
    assert check["low"] == pytest.approx(low) and check["high"] == pytest.approx(high)


def test_a_sweep_start_rechecks_only_when_gold_or_signatures_changed(speak, french, monkeypatch):
    from reviewapp.judging.services import signature_checks
    from reviewapp.judging.services.sweeps import sweep_start

    dataset, turns = french
    greeting(speak, turns[:1], passed=True)
    calls = []
    real = signature_checks.signatures_recheck
    monkeypatch.setattr(signature_checks, "signatures_recheck", lambda **kw: calls.append(1) or real(**kw))

    def start():
        return sweep_start(dataset=dataset, judge_versions=[speak], qa_sample=0, dispatch=False)

    start()
    start()
    assert len(calls) == 1  # nothing changed in between
    add_gold(speak.judge, turns[:1], passed=True)
    start()
    assert len(calls) == 2


def test_a_suspended_signature_is_reinstated_unchanged_once_the_gold_is_corrected(speak, french):
    _, turns = french
    signature = greeting(speak, turns[:1], passed=True)
    add_gold(speak.judge, turns, passed=False)
    assert signatures_recheck().suspended == [signature.pk]
    with pytest.raises(SignatureError, match="contradicts gold"):
        signature_update(signature=signature)
    # The gold was wrong: adjudication says these greetings pass.
    add_gold(speak.judge, turns, passed=True, source=GoldLabel.Source.ADJUDICATED)
    signature_update(signature=signature, note="gold corrected")
    signature.refresh_from_db()
    assert signature.suspended_at is None
    assert signature.versions.order_by("-version").first().change == "reinstated"


@pytest.fixture
def contradicted(speak, french):
    """A greeting signature that says fail, eight gold labels that contradict it (not rechecked yet), and
    its evidence turn awaiting adjudication: (signature, item)."""
    from reviewapp.models import ReviewItem

    _, turns = french
    signature = greeting(speak, turns[:1])
    add_gold(speak.judge, turns[1:], passed=True)
    item = ReviewItem.objects.create(
        conversation=turns[0].conversation,
        turn=turns[0],
        judge=speak.judge,
        dataset=turns[0].conversation.dataset,
        language="fr",
        status=ReviewItem.Status.AWAITING_ADJUDICATION,
    )
    return signature, item


def test_new_gold_from_an_adjudication_queues_a_recheck_of_that_judge(
    contradicted, make_user, django_capture_on_commit_callbacks, eager_celery
):
    from reviewapp.adjudication.services.adjudication import adjudication_decide

    signature, item = contradicted
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        adjudication_decide(
            item=item,
            lead=make_user("lea", role="lead"),
            passed=True,
            rationale="greetings pass",
            after_gold=signatures_recheck_queue,
        )
    assert callbacks
    signature.refresh_from_db()
    assert signature.suspended_at is not None


def test_without_a_dispatch_new_gold_queues_nothing_and_the_next_sweep_rechecks(
    speak, contradicted, make_user, django_capture_on_commit_callbacks, eager_celery
):
    from reviewapp.adjudication.services.adjudication import adjudication_decide
    from reviewapp.judging.services.signature_checks import signatures_for_sweep
    from reviewapp.models import Sweep

    signature, item = contradicted
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        adjudication_decide(item=item, lead=make_user("lea", role="lead"), passed=True, rationale="greetings pass")
    assert callbacks == []
    signature.refresh_from_db()
    assert signature.suspended_at is None
    sweep = Sweep.objects.create(dataset=item.dataset, name="next")
    assert signatures_for_sweep(sweep=sweep, judges=[speak.judge]) == []
    signature.refresh_from_db()
    assert signature.suspended_at is not None
