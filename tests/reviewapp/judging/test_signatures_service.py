import pytest
from django.core.management import call_command, execute_from_command_line
from django.core.management.base import CommandError

from reviewapp.judging.forms.signatures import SignatureAdminForm
from reviewapp.judging.services.signature_checks import signature_check_all
from reviewapp.judging.services.signatures import SignatureError, signature_create, signature_update
from reviewapp.models import Conversation, Dataset, GoldLabel, Signature, Turn

pytestmark = pytest.mark.django_db

GUARDS = ["would not say no", "not say no to"]


@pytest.fixture
def turns():
    dataset = Dataset.objects.create(name="gold-en")
    conv = Conversation.objects.create(dataset=dataset, external_id="c1", language="en")
    texts = [
        "No, I can't do that for you.",
        "I would not say no to that upgrade.",
        "Sure, I've rebooked you on the 8:05.",
        "No. That fare cannot be changed.",
    ]
    return [
        Turn.objects.create(conversation=conv, position=i, role="agent", text=text) for i, text in enumerate(texts, 1)
    ]


def make_decline(judge, turns, **overrides):
    values = {
        "judge": judge,
        "language": "en",
        "intent": "decline",
        "kind": "stem",
        "pattern": "no",
        "negation_guards": GUARDS,
        "label": "refusal",
        "passed": False,
        "evidence": [turns[0]],
    }
    values.update(overrides)
    return signature_create(**values)


def test_create_links_evidence(judge, turns):
    signature = make_decline(judge, turns)
    assert list(signature.evidence.all()) == [turns[0]]
    assert signature.negation_guards == GUARDS


def test_decline_without_guards_is_refused_by_the_service(judge, turns):
    with pytest.raises(SignatureError, match="negation guards"):
        make_decline(judge, turns, negation_guards=[])
    assert not Signature.objects.exists()


def test_create_needs_evidence_in_its_language(judge, turns):
    with pytest.raises(SignatureError, match="evidence turn"):
        make_decline(judge, turns, evidence=[])
    other = Conversation.objects.create(dataset=turns[0].conversation.dataset, external_id="c2", language="fr")
    french = Turn.objects.create(conversation=other, position=1, role="agent", text="Non.")
    with pytest.raises(SignatureError, match="is in fr"):
        make_decline(judge, turns, evidence=[french])


def test_pattern_change_needs_new_evidence(judge, turns):
    signature = make_decline(judge, turns)
    with pytest.raises(SignatureError, match="new evidence turn"):
        signature_update(signature=signature, pattern="cannot")
    with pytest.raises(SignatureError, match="new evidence turn"):
        signature_update(signature=signature, pattern="cannot", new_evidence=[turns[0]])
    signature_update(signature=signature, pattern="cannot", new_evidence=[turns[3]])
    signature.refresh_from_db()
    assert signature.pattern == "cannot"
    # turns[0] ("No, I can't ...") justified the old pattern, not "cannot": it stays in version 1 only.
    assert set(signature.evidence.all()) == {turns[3]}
    first, second = signature.versions.order_by("version")
    assert (first.rule["pattern"], first.rule["evidence"]) == ("no", [turns[0].pk])
    assert (second.version, second.change, second.rule["evidence"]) == (2, "edited", [turns[3].pk])


def test_removing_a_guard_is_loosening(judge, turns):
    signature = make_decline(judge, turns)
    with pytest.raises(SignatureError, match="negation guards removed"):
        signature_update(signature=signature, negation_guards=GUARDS[:1])
    signature_update(signature=signature, negation_guards=[*GUARDS, "no problem"])
    signature.refresh_from_db()
    assert signature.negation_guards == [*GUARDS, "no problem"]


def test_update_cannot_drop_the_last_guard_of_a_decline(judge, turns):
    signature = make_decline(judge, turns)
    with pytest.raises(SignatureError, match="negation guards"):
        signature_update(signature=signature, negation_guards=[], new_evidence=[turns[3]])


def test_admin_form_refuses_decline_without_guards_and_loosening_without_evidence(judge, turns):
    data = {
        "judge": judge.pk,
        "language": "en",
        "criterion": "",
        "intent": "refusal",
        "kind": "stem",
        "pattern": "no",
        "negation_guards": "[]",
        "label": "refusal",
        "passed": "false",
        "active": "on",
        "evidence": [turns[0].pk],
    }
    form = SignatureAdminForm(data=data)
    assert not form.is_valid()
    assert "negation guards" in str(form.errors["negation_guards"])
    signature = make_decline(judge, turns)
    loosened = {**data, "negation_guards": '["would not say no", "not say no to"]', "pattern": "nope"}
    form = SignatureAdminForm(data=loosened, instance=signature)
    assert not form.is_valid()
    assert "new evidence" in str(form.errors["evidence"])
    form = SignatureAdminForm(data={**loosened, "evidence": [turns[0].pk, turns[3].pk]}, instance=signature)
    assert form.is_valid(), form.errors


def gold(judge, turn, *, passed, source=GoldLabel.Source.IMPORTED, excluded=False):
    return GoldLabel.objects.create(
        judge=judge, conversation=turn.conversation, turn=turn, source=source, passed=passed, excluded=excluded
    )


def test_precision_counts_matches_against_gold(judge, turns):
    make_decline(judge, turns)
    gold(judge, turns[0], passed=False)
    gold(judge, turns[1], passed=True)  # guarded: no match
    gold(judge, turns[2], passed=True)  # no match
    gold(judge, turns[3], passed=False)
    (check,) = signature_check_all(Signature.objects.select_related("judge"))
    assert (check.matches, check.agreeing, check.contradicting_turns) == (2, 2, [])
    assert check.precision == 1.0


def test_adjudicated_gold_wins_and_excluded_gold_is_ignored(judge, turns):
    make_decline(judge, turns)
    gold(judge, turns[0], passed=True)
    gold(judge, turns[0], passed=False, source=GoldLabel.Source.ADJUDICATED)
    gold(judge, turns[3], passed=True, excluded=True)
    (check,) = signature_check_all(Signature.objects.select_related("judge"))
    assert (check.matches, check.agreeing) == (1, 1)


def test_check_signatures_command_passes_then_fails_on_contradiction(judge, turns, capsys):
    signature = make_decline(judge, turns)
    gold(judge, turns[0], passed=False)
    call_command("check_signatures")
    out = capsys.readouterr().out
    assert "1.000" in out
    assert "agree with gold" in out
    gold(judge, turns[3], passed=True)
    with pytest.raises(CommandError) as caught:
        call_command("check_signatures")
    assert f"signature {signature.pk}" in str(caught.value)
    assert f"turn(s) {turns[3].pk}" in str(caught.value)
    assert "0.500" in capsys.readouterr().out


def test_check_signatures_exits_non_zero_on_contradiction(judge, turns, capsys, monkeypatch):
    # The real command line path (exit code included) closes every connection when it ends; inside
    # the test's transaction that would drop PostgreSQL's connection, so keep it open.
    from django.db import connections

    monkeypatch.setattr(connections, "close_all", lambda: None)
    make_decline(judge, turns)
    gold(judge, turns[0], passed=False)
    execute_from_command_line(["manage.py", "check_signatures"])  # agreement: returns normally
    gold(judge, turns[3], passed=True)
    with pytest.raises(SystemExit) as caught:
        execute_from_command_line(["manage.py", "check_signatures"])
    assert caught.value.code == 1
    assert "contradicts gold" in capsys.readouterr().err
