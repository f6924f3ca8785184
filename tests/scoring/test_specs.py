import pytest

from scoring.specs import (
    JudgeSpec,
    MissingVariable,
    SpecError,
    guidance_for,
    load_specs,
    render,
    spec_from_dict,
    spec_hash,
    spec_to_dict,
    specs_from_yaml_text,
)
from tests.shipped import EVA_FIXTURE, JUDGES, SHIPPED_SLUGS

TURN_VARIABLES = {
    "conversation_turns": "[turn 1] user: Bonjour",
    "turn_text": "Bien sûr, je m'en occupe.",
    "intended_text": "Bien sûr, je m'en occupe.",
    "turn_id": 2,
    "expected_language": "fr",
    "language_display_name": "French",
    "entities_formatted": "(none listed)",
}


@pytest.fixture(scope="module")
def shipped():
    return {spec.slug: spec for spec in load_specs(JUDGES)}


def test_shipped_judges_cover_every_scale(shipped):
    assert set(shipped) == SHIPPED_SLUGS
    assert shipped["conciseness"].scale == "ordinal"
    assert (shipped["conciseness"].scale_min, shipped["conciseness"].scale_max) == (1.0, 3.0)
    assert shipped["speakability"].scale == "binary"
    assert "gloss" in shipped["speakability"].failure_modes
    assert {"wrong_language", "entity_error"} <= set(shipped["tts_fidelity"].failure_modes)
    clarity = shipped["language_clarity"]
    assert dict(clarity.sub_metrics) == {
        "language_match": 0.40,
        "clarity": 0.25,
        "terminology": 0.15,
        "structure": 0.15,
        "appropriateness": 0.05,
    }
    assert clarity.critical_sub_metrics == ("language_match",)
    rubric = shipped["turn_rubric"]
    assert any(c.required for c in rubric.criteria) and any(not c.required for c in rubric.criteria)


def test_round_trip_keeps_the_hash(shipped):
    for spec in shipped.values():
        again = spec_from_dict(spec_to_dict(spec))
        assert again == spec
        assert spec_hash(again) == spec_hash(spec)


def test_hash_ignores_source_but_not_text(shipped):
    spec = shipped["conciseness"]
    moved = spec_from_dict({**spec_to_dict(spec), "source": "elsewhere.yaml"})
    edited = spec_from_dict({**spec_to_dict(spec), "user_template": spec.user_template + "\nBe strict."})
    assert spec_hash(moved) == spec_hash(spec)
    assert spec_hash(edited) != spec_hash(spec)


def test_every_shipped_judge_renders_with_turn_variables(shipped):
    for spec in shipped.values():
        prompt = render(spec, TURN_VARIABLES, language="fr")
        assert "Bien sûr, je m'en occupe." in prompt.user
        assert "{" not in prompt.system
        assert "{language_guidance}" not in prompt.user


def test_french_gets_the_french_block(shipped):
    prompt = render(shipped["conciseness"], TURN_VARIABLES, language="fr")
    assert "Language notes (French)" in prompt.user
    assert "Canadian French" not in prompt.user


def test_canadian_french_gets_its_own_block_when_there_is_one(shipped):
    prompt = render(shipped["conciseness"], TURN_VARIABLES, language="fr-CA")
    assert "Language notes (Canadian French)" in prompt.user
    assert "Language notes (French)" not in prompt.user


def test_canadian_french_falls_back_to_french(shipped):
    faithfulness = shipped["faithfulness"]
    assert "fr-CA" not in faithfulness.language_guidance
    assert guidance_for(faithfulness, "fr-CA")[0] == "fr"
    prompt = render(faithfulness, TURN_VARIABLES, language="fr-CA")
    assert "Language notes (French)" in prompt.user


def test_a_language_without_a_block_gets_none(shipped):
    for spec in shipped.values():
        prompt = render(spec, TURN_VARIABLES, language="de")
        assert "Language notes" not in prompt.user
        assert guidance_for(spec, "de") == ("", "")


def test_literal_braces_survive_rendering(shipped):
    prompt = render(shipped["speakability"], TURN_VARIABLES, language="en")
    assert '{"rating": 0 | 1' in prompt.user


def test_missing_variable_is_named(shipped):
    variables = {k: v for k, v in TURN_VARIABLES.items() if k != "turn_text"}
    with pytest.raises(MissingVariable) as caught:
        render(shipped["conciseness"], variables, language="en")
    assert caught.value.name == "turn_text"
    assert "turn_text" in str(caught.value)
    assert "conciseness@1.0" in str(caught.value)


def test_eva_style_file_is_detected_and_loaded():
    specs = {spec.slug: spec for spec in load_specs(EVA_FIXTURE)}
    assert set(specs) == {
        "conciseness",
        "language_check",
        "agent_speech_fidelity",
        "agent_speech_fidelity__s2s_user",
        "user_behavioral_fidelity",
    }
    conciseness = specs["conciseness"]
    assert conciseness.system_template.startswith("You rate how easy")
    assert conciseness.version.startswith("eva-")
    assert "interruption_tags_reference" in conciseness.shared_variables
    prompt = render(conciseness, {"conversation_turns": "[turn 1] user: hi"}, language="en")
    assert "`[assistant interrupts]`" in prompt.user
    assert '{"turn_id": <int>' in prompt.user


def test_eva_style_missing_variable_names_it():
    specs = {spec.slug: spec for spec in load_specs(EVA_FIXTURE)}
    with pytest.raises(MissingVariable) as caught:
        render(specs["user_behavioral_fidelity"], {"conversation_turns": "..."}, language="en")
    assert caught.value.name == "user_goal"
    assert "user_goal" in str(caught.value)


def test_eva_version_follows_the_text():
    text = EVA_FIXTURE.read_text(encoding="utf-8")
    before = {s.slug: s.version for s in specs_from_yaml_text(text, source="a.yaml")}
    after = {
        s.slug: s.version
        for s in specs_from_yaml_text(text.replace("Did the simulated user", "Has the user"), source="a.yaml")
    }
    assert before["user_behavioral_fidelity"] != after["user_behavioral_fidelity"]
    assert before["conciseness"] == after["conciseness"]


@pytest.mark.parametrize(
    ("yaml_text", "problem"),
    [
        ("slug: x\nversion: '1'\nscale: {type: weird}\nprompts: {user: hi}\n", "scale must be one of"),
        ("slug: x\nversion: '1'\nscale: {type: binary, min: 1, max: 3}\nprompts: {user: hi}\n", "binary judge"),
        (
            "slug: x\nversion: '1'\nscale: {type: weighted}\nsub_metrics: {a: 0.5, b: 0.4}\nprompts: {user: hi}\n",
            "sum to 1",
        ),
        (
            "slug: x\nversion: '1'\nscale: {type: rubric}\ncriteria: [{name: a, threshold: 1, required: false}]\n"
            "prompts: {user: hi}\n",
            "required criterion",
        ),
        ("slug: x\nversion: '1'\nscale: {type: ordinal}\nprompts: {user: 'a {b'}\n", "not a valid format string"),
        ("slug: x\nscale: {type: ordinal}\nprompts: {user: hi}\n", "needs slug and version"),
    ],
)
def test_bad_specs_are_refused_with_a_reason(yaml_text, problem):
    with pytest.raises(SpecError, match=problem):
        specs_from_yaml_text(yaml_text, source="bad.yaml")


def test_judge_spec_is_frozen(shipped):
    spec: JudgeSpec = shipped["conciseness"]
    with pytest.raises(AttributeError):
        spec.version = "2.0"  # type: ignore[misc]
