import shutil
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from reviewapp.judging.services.judge_inputs import variables_for_conversation, variables_for_turn
from reviewapp.judging.services.judges import (
    JudgeSpecConflict,
    judge_version_spec,
    judge_version_store,
    signature_rules,
)
from reviewapp.models import Conversation, Dataset, Judge, JudgeVersion, Signature, Turn
from scoring.specs import MissingVariable, load_specs, render, spec_hash
from tests.shipped import EVA_FIXTURE, JUDGES, SHIPPED_SLUGS

pytestmark = pytest.mark.django_db


def load(path) -> str:
    out = StringIO()
    call_command("load_judges", str(path), stdout=out)
    return out.getvalue()


def test_load_judges_creates_each_judge_once(tmp_path):
    first = load(JUDGES)
    assert JudgeVersion.objects.count() == 6
    assert set(Judge.objects.values_list("slug", flat=True)) == SHIPPED_SLUGS
    assert first.count("created") == 6
    second = load(JUDGES)
    assert second.count("unchanged") == 6
    assert "created" not in second
    assert JudgeVersion.objects.count() == 6


def test_changed_text_under_the_same_version_is_refused(tmp_path):
    load(JUDGES)
    stored = JudgeVersion.objects.get(judge__slug="conciseness")
    copy = tmp_path / "judges"
    shutil.copytree(JUDGES, copy)
    path = copy / "conciseness.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("cannot scroll back", "cannot rewind"), encoding="utf-8")
    (new_spec,) = load_specs(path)
    with pytest.raises(CommandError) as caught:
        load(copy)
    message = str(caught.value)
    assert "judge conciseness version 1.0" in message
    assert stored.spec_hash in message
    assert spec_hash(new_spec) in message
    assert JudgeVersion.objects.count() == 6
    assert JudgeVersion.objects.get(judge__slug="conciseness").spec_hash == stored.spec_hash


def test_a_new_version_label_is_stored_beside_the_old(tmp_path):
    load(JUDGES)
    path = tmp_path / "conciseness.yaml"
    text = (JUDGES / "conciseness.yaml").read_text(encoding="utf-8")
    path.write_text(text.replace('version: "1.0"', 'version: "1.1"').replace("cannot scroll back", "cannot rewind"))
    output = load(path)
    assert "conciseness@1.1" in output and "created" in output
    assert list(
        JudgeVersion.objects.filter(judge__slug="conciseness").order_by("version").values_list("version", flat=True)
    ) == ["1.0", "1.1"]


def test_store_service_refuses_and_round_trips():
    spec = next(s for s in load_specs(JUDGES) if s.slug == "speakability")
    version = judge_version_store(spec=spec)
    assert judge_version_store(spec=spec).pk == version.pk
    again = judge_version_spec(version)
    assert spec_hash(again) == version.spec_hash == spec_hash(spec)
    assert again.source.endswith("speakability.yaml")
    from dataclasses import replace

    with pytest.raises(JudgeSpecConflict) as caught:
        judge_version_store(spec=replace(spec, user_template=spec.user_template + "\nExtra."))
    assert caught.value.stored_hash == version.spec_hash


def test_eva_style_file_loads():
    output = load(EVA_FIXTURE)
    assert "language_check@eva-" in output
    assert JudgeVersion.objects.filter(judge__slug="agent_speech_fidelity__s2s_user").exists()
    assert "unchanged" in load(EVA_FIXTURE)


@pytest.fixture
def conversation():
    dataset = Dataset.objects.create(name="run-1")
    conv = Conversation.objects.create(dataset=dataset, external_id="c1", language="fr-CA")
    Turn.objects.create(conversation=conv, position=1, role="user", text="Allô, mon vol est annulé.")
    Turn.objects.create(conversation=conv, position=2, role="tool_call", text='get_reservation(code="XXF6OH")')
    Turn.objects.create(
        conversation=conv,
        position=3,
        role="agent",
        text="Je vous envoie un courriel (e-mail).",
        intended_text="Je vous envoie un courriel.",
        entities=[{"type": "email", "value": "ana@example.com"}],
    )
    return conv


def test_turn_variables_come_from_the_models(conversation):
    turns = list(conversation.turns.order_by("position"))
    variables = variables_for_turn(turns[2], context_turns=turns)
    assert variables["expected_language"] == "fr-CA"
    assert variables["language_display_name"] == "French (Canada)"
    assert variables["turn_text"] == "Je vous envoie un courriel (e-mail)."
    assert variables["intended_text"] == "Je vous envoie un courriel."
    assert "[turn 1] user: Allô" in variables["conversation_turns"]
    assert "[turn 2] tool_call:" in variables["conversation_turns"]
    assert "courriel (e-mail)" not in variables["conversation_turns"]
    assert "email: ana@example.com" in variables["entities_formatted"]


def test_every_shipped_judge_renders_from_a_stored_turn(conversation):
    turns = list(conversation.turns.order_by("position"))
    variables = variables_for_turn(turns[2], context_turns=turns)
    for spec in load_specs(JUDGES):
        prompt = render(spec, variables, language=conversation.language)
        assert "courriel" in prompt.user


def test_eva_templates_render_from_models_and_name_what_is_missing(conversation):
    turns = list(conversation.turns.order_by("position"))
    variables = variables_for_conversation(conversation, turns)
    specs = {s.slug: s for s in load_specs(EVA_FIXTURE)}
    prompt = render(specs["language_check"], variables, language="fr-CA")
    assert "The caller speaks French (Canada) (code fr-CA)." in prompt.user
    assert "[turn 3] assistant: Je vous envoie un courriel (e-mail)." in prompt.user
    fidelity = render(specs["agent_speech_fidelity"], variables, language="fr-CA")
    assert "intended: Je vous envoie un courriel." in fidelity.user
    with pytest.raises(MissingVariable) as caught:
        render(specs["agent_speech_fidelity__s2s_user"], variables, language="fr-CA")
    assert caught.value.name == "conversation_trace_formatted"
    assert "'conversation_trace_formatted'" in str(caught.value)
    assert "agent_speech_fidelity__s2s_user" in str(caught.value)


def test_rules_for_takes_active_rules_of_the_language_and_its_base(conversation):
    judge = Judge.objects.create(slug="speakability")
    common = {"judge": judge, "intent": "gloss", "kind": "substring", "label": "gloss"}
    fr = Signature.objects.create(language="fr", pattern="(e-mail)", **common)
    fr_ca = Signature.objects.create(language="fr-CA", pattern="(email)", **common)
    Signature.objects.create(language="fr-CA", pattern="(courriel)", active=False, **common)
    Signature.objects.create(language="en", pattern="(mail)", **common)
    assert [r.id for r in signature_rules(judge, "fr-CA")] == [fr.pk, fr_ca.pk]
    assert [r.id for r in signature_rules(judge, "fr")] == [fr.pk]
