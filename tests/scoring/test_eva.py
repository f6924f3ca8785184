"""EVA profiles: per-turn and nested answers read without guessing, and EVA's variables built as EVA builds them."""

import json
from pathlib import Path

import pytest

from scoring import eva, eva_answers, eva_variables
from scoring.specs import load_specs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "eva"
CONCISENESS = eva.PROFILES["conciseness"]


def entry(turn_id, rating, **extra):
    return {"turn_id": turn_id, "rating": rating, "explanation": f"turn {turn_id}", "failure_modes": [], **extra}


def test_a_per_turn_array_gives_one_answer_per_rated_turn_and_leaves_the_rest():
    raw = json.dumps([entry(0, None), entry(1, 3), entry(2, 1, failure_modes=["verbosity_or_filler"])])

    answers = eva_answers.parse_per_turn(CONCISENESS, raw, turn_ids=[0, 1, 2], rated=[1, 2])

    assert set(answers) == {1, 2}
    assert (answers[1].result.status, answers[1].result.rating, answers[1].result.flags) == ("resolved", 3.0, ())
    assert (answers[2].result.rating, answers[2].result.flags) == (1.0, ("verbosity_or_filler",))
    assert answers[2].result.explanation == "turn 2"


def test_a_null_rating_on_a_rated_turn_is_not_rated_never_a_value():
    answers = eva_answers.parse_per_turn(CONCISENESS, json.dumps([entry(1, None)]), turn_ids=[1], rated=[1])

    assert answers[1].not_rated
    assert answers[1].result.rating is None and answers[1].result.status == "unresolved"


@pytest.mark.parametrize(
    ("entries", "problem"),
    [
        ([entry(1, 3)], "no entry for it"),  # turn 2 missing
        ([entry(1, 3), entry(2, 2), entry(2, 3)], "2 entries for it"),  # duplicate
        ([entry(1, 3), entry(2, 42)], "outside the scale 1..3"),
        ([entry(1, 3), entry(2, 2.5)], "not a whole scale point"),
        ([entry(1, 3), entry(2, "2")], "not a whole scale point"),
        ([entry(1, 3), entry(2, True)], "not a whole scale point"),
    ],
)
def test_a_bad_entry_makes_its_own_turn_unresolved_and_keeps_the_others(entries, problem):
    answers = eva_answers.parse_per_turn(CONCISENESS, json.dumps(entries), turn_ids=[1, 2], rated=[1, 2])

    assert answers[1].result.status == "resolved" and answers[1].result.rating == 3.0
    assert answers[2].result.status == "unresolved" and answers[2].result.rating is None
    assert problem in answers[2].result.problem


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (json.dumps([entry(1, 3), entry(2, 2), entry(7, 1)]), "rates turn 7, which the conversation does not have"),
        (json.dumps([entry(1, 3), {"rating": 2}]), "no integer turn_id"),
        (json.dumps([entry(1, 3), "turn 2 is fine"]), "entry 1 is not an object"),
        (json.dumps({"rating": 2}), "expected a JSON array"),
        ("[{'turn_id': 1, 'rating': 3}]", "not valid JSON"),
        ("Here you go: " + json.dumps([entry(1, 3), entry(2, 2)]), "not valid JSON"),
        ("", "empty answer"),
    ],
)
def test_an_answer_whose_turns_cannot_be_trusted_leaves_every_turn_unresolved(raw, problem):
    answers = eva_answers.parse_per_turn(CONCISENESS, raw, turn_ids=[1, 2], rated=[1, 2])

    assert {a.result.status for a in answers.values()} == {"unresolved"}
    assert all(problem in a.result.problem for a in answers.values())


def test_unknown_failure_modes_and_modes_on_a_top_rating_are_flagged_not_dropped():
    raw = json.dumps([entry(1, 3, failure_modes=["verbosity_or_filler", "rambling"])])

    flags = eva_answers.parse_per_turn(CONCISENESS, raw, turn_ids=[1], rated=[1])[1].result.flags

    assert flags == ("verbosity_or_filler", "unknown_failure_mode:rambling", "failure_modes_on_top_rating")


def test_speech_judges_answer_inside_a_turns_object_on_a_binary_scale():
    profile = eva.PROFILES["tts_fidelity"]
    raw = json.dumps({"turns": [entry(0, 1), entry(1, 0, failure_modes=["truncation"])]})

    answers = eva_answers.parse_per_turn(profile, raw, turn_ids=[0, 1], rated=[0, 1])

    assert (answers[0].result.rating, answers[0].result.passed, answers[0].result.label) == (1.0, True, "pass")
    assert (answers[1].result.passed, answers[1].result.flags) == (False, ("truncation",))


def test_key_entities_pass_when_every_checked_entity_is_correct_and_skip_turns_without_any():
    profile = eva.PROFILES["transcription_accuracy_key_entities"]
    raw = json.dumps(
        [
            {"turn_id": 1, "entities": [{"type": "name", "correct": True}, {"type": "code", "correct": False}]},
            {"turn_id": 2, "entities": [{"type": "name", "correct": True}, {"type": "date", "skipped": True}]},
            {"turn_id": 3, "entities": []},
        ]
    )

    answers = eva_answers.parse_per_turn(profile, raw, turn_ids=[1, 2, 3], rated=[1, 2, 3])

    assert (answers[1].result.passed, answers[1].result.flags) == (False, ("entity_error:code",))
    assert answers[1].result.sub_scores == {"entity_accuracy": 0.5}
    assert (answers[2].result.passed, answers[2].result.rating) == (True, 1.0)
    assert answers[3].not_rated


def faithfulness_answer(rating, flagged=(), **overrides):
    dims = {
        name: {"evidence": f"{name} evidence", "flagged": name in flagged, "rating": 1 if name in flagged else 3}
        for name in eva.PROFILES["faithfulness"].dimensions
    }
    return json.dumps({"dimensions": dims, "rating": rating, **overrides})


def test_faithfulness_reads_its_nested_dimensions_as_flags_and_sub_scores():
    result = eva_answers.parse_conversation(
        eva.PROFILES["faithfulness"], faithfulness_answer(1, flagged=["hallucination"])
    )

    assert (result.status, result.rating, result.flags) == ("resolved", 1.0, ("hallucination",))
    assert result.sub_scores["hallucination"] == 1.0 and result.sub_scores["violating_policies"] == 3.0
    assert "hallucination evidence" in result.explanation


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (faithfulness_answer(42), "outside the scale 1..3"),
        (faithfulness_answer(None), "no rating"),
        (json.dumps({"rating": 2}), "'dimensions' must be an object"),
        (json.dumps({"dimensions": {"hallucination": {"flagged": False}}, "rating": 3}), "missing dimension(s)"),
        (json.dumps([{"rating": 2}]), "expected a JSON object"),
    ],
)
def test_a_conversation_answer_outside_its_shape_or_scale_is_unresolved(raw, problem):
    result = eva_answers.parse_conversation(eva.PROFILES["faithfulness"], raw)

    assert result.status == "unresolved" and result.rating is None
    assert problem in result.problem


def test_exchange_turn_ids_follow_eva_user_k_opens_turn_k():
    roles = ["agent", "user", "tool_call", "tool_response", "agent", "user", "agent", "agent"]

    assert eva.exchange_turn_ids(roles) == [0, 1, 1, 1, 1, 2, 2, 2]


def record(entries, **metadata):
    return eva.EvaRecord(record_id="r1", entries=tuple(entries), metadata=metadata)


TRACE = [
    eva.EvaEntry(0, "assistant", content="Hello!", intended="Hello!", transcribed="Hello", source_id=10),
    eva.EvaEntry(1, "user", content="Change my flight.", intended="Change my flight", transcribed="Change my flight."),
    eva.EvaEntry(1, "tool_call", tool_name="get_reservation", payload={"code": "ZK3"}),
    eva.EvaEntry(1, "tool_response", tool_name="get_reservation", payload={"status": "success"}),
    eva.EvaEntry(1, "assistant", content="Found it.", intended="Found it.", transcribed="Found it", source_id=11),
]


def test_the_conversation_is_formatted_exactly_as_eva_format_transcript_with_tools_does():
    values, missing = eva_variables.build_variables("conciseness", ["conversation_turns"], record(TRACE))

    assert missing == []
    assert values["conversation_turns"] == (
        "Turn 0:\n  assistant: Hello!\n\n"
        "Turn 1:\n  user: Change my flight.\n"
        "  tool_call: get_reservation({'code': 'ZK3'})\n"
        "  tool_response: get_reservation: {'status': 'success'}\n"
        "  assistant: Found it."
    )


def test_speech_variables_follow_each_metric_and_key_entities_send_expected_transcribed_pairs():
    values, _ = eva_variables.build_variables(
        "transcription_accuracy_key_entities",
        ["user_turns", "conversation_trace_formatted"],
        record(TRACE),
    )
    speak, _ = eva_variables.build_variables("speakability", ["assistant_turns_formatted"], record(TRACE))
    tts, _ = eva_variables.build_variables("tts_fidelity", ["intended_turns_formatted"], record(TRACE))

    assert values["user_turns"] == 'Turn 1:\nExpected: "Change my flight"\nTranscribed: "Change my flight."'
    assert values["conversation_trace_formatted"] == (
        "Turn 0 - [Assistant speaks]\nTurn 1 - User: Change my flight.\n"
        'Turn 1 - Tool Response (get_reservation): {"status": "success"}\n'
        "Turn 1 - [Assistant speaks]"
    )
    assert speak["assistant_turns_formatted"] == "[Turn 0]\nHello!\n\n[Turn 1]\nFound it."
    assert tts["intended_turns_formatted"] == "Turn 0: Hello!\nTurn 1: Found it."


def test_variables_a_record_cannot_have_are_named_and_metadata_or_agent_config_provides_them():
    names = ["agent_instructions", "agent_role", "available_tools", "current_date_time", "disambiguation_context"]

    _, missing = eva_variables.build_variables("faithfulness", names, record(TRACE))
    values, still_missing = eva_variables.build_variables(
        "faithfulness",
        names,
        record(
            TRACE,
            current_date_time="2026-03-17 10:45 CST",
            **eva_variables.agent_variables(
                {"role": "You are an agent.", "instructions": "Be kind.", "tools": [{"name": "x"}]}
            ),
        ),
    )

    assert missing == ["agent_instructions", "agent_role", "available_tools", "current_date_time"]
    assert still_missing == []
    assert values["current_date_time"] == "2026-03-17 10:45 CST"
    assert json.loads(values["available_tools"]) == [{"name": "x"}]
    assert values["disambiguation_context"].startswith("Since the assistant is working from a speech-to-text")


def test_judge_yaml_loads_every_judge_with_its_real_level_and_scale():
    specs = {s.slug: s for s in load_specs(FIXTURES / "judge.yaml")}

    found = {slug: (s.level, s.scale, s.scale_min, s.scale_max) for slug, s in specs.items()}
    assert found["conciseness"] == ("turn", "ordinal", 1.0, 3.0)
    assert found["speakability"] == ("turn", "binary", 0.0, 1.0)
    assert found["faithfulness"] == ("conversation", "ordinal", 1.0, 3.0)
    assert found["user_behavioral_fidelity"] == ("conversation", "binary", 0.0, 1.0)
    assert found["user_speech_fidelity"] == ("turn", "ordinal", 1.0, 3.0)
    assert found["transcription_accuracy_key_entities"] == ("turn", "binary", 0.0, 1.0)
    # The audio-native key-entity prompt rates tool calls: no profile, no scale, so it cannot be swept.
    assert found["transcription_accuracy_key_entities__audio_native"][2:] == (None, None)
    assert specs["conciseness"].failure_modes == CONCISENESS.failure_modes


@pytest.mark.parametrize(
    ("metadata", "last_speaker", "expected"),
    [
        ({"conversation_ended_reason": "goodbye"}, None, "the user calling the end_call tool."),
        ({"context": {"conversation_ended_reason": "time_limit_exceeded"}}, None, "a system timeout - "),
        ({"conversation_ended_reason": "inactivity_timeout"}, "user", "the agent's failure to respond"),
        ({"conversation_ended_reason": "inactivity_timeout"}, "assistant", "an inactivity timeout - "),
        ({"conversation_ended_reason": "inactivity_timeout"}, None, None),  # no timestamps: cannot tell
        ({}, None, None),
    ],
)
def test_user_behavioral_fidelity_says_how_the_call_ended_as_eva_does_or_names_it_missing(
    metadata, last_speaker, expected
):
    entries = [
        eva.EvaEntry(
            1, "user", content="Bye.", end_ms=None if last_speaker is None else (9 if last_speaker == "user" else 5)
        ),
        eva.EvaEntry(1, "assistant", content="Goodbye!", end_ms=None if last_speaker is None else 7),
    ]

    values, missing = eva_variables.build_variables(
        "user_behavioral_fidelity", ["conversation_end"], record(entries, **metadata)
    )

    if expected is None:
        assert missing == ["conversation_end"]
    else:
        assert values["conversation_end"].startswith(expected)


def test_user_behavioral_fidelity_evidence_and_modification_tools():
    values, missing = eva_variables.build_variables(
        "user_behavioral_fidelity",
        ["conversation_evidence", "modification_tools", "user_simulator_instructions"],
        record(
            TRACE,
            **eva_variables.agent_variables(
                {"tools": [{"name": "get_reservation", "tool_type": "read"}, {"name": "rebook", "tool_type": "write"}]}
            ),
        ),
    )

    assert missing == ["user_simulator_instructions"]  # EVA renders it from the scenario's user goal
    assert json.loads(values["modification_tools"]) == [{"name": "rebook", "tool_type": "write"}]
    evidence = values["conversation_evidence"]
    assert evidence.startswith("You are provided with two views of the conversation.")
    assert "Turn 1:\n  user: Change my flight." in evidence
    assert "{1: 'Change my flight'}" in evidence
