"""EVA's judges as EVA runs them: one profile per judge key of EVA's ``configs/prompts/judge.yaml``.

Everything Tribunal knows about EVA's judges lives here, read from EVA's metric code
(``src/eva/metrics/``): which grain a judge rates and how it answers, its rating scale, its
failure-mode and flag fields, and how each template variable is built from an EVA record.

* **Grain.** EVA sends one call per conversation. Per-turn judges (conciseness, speakability, the
  speech-fidelity judges, transcription_accuracy_key_entities) answer a JSON array with one entry
  per ``turn_id`` (the speech judges wrap it in ``{"turns": [...]}``); each rated turn becomes a
  turn-level verdict. Conversation judges (faithfulness, conversation_progression,
  user_behavioral_fidelity) answer one object with a rating and nested dimensions.
* **Turn ids.** EVA numbers turns per exchange: turn 0 is what the assistant says before the user
  speaks, user utterance k opens turn k, and the assistant's answer (tool calls included) belongs
  to that same turn k. A turn id therefore names a user part and an assistant part; which one a
  judge rates is its ``rated_role``. Records imported from an EVA run keep EVA's own ids
  (``eva_turn_id``); validation-set records get them by the same rule, except entity-transcription
  records, whose labels count user turns from 0.
* **Variables.** ``build_variables`` reproduces ``get_prompt_variables`` and
  ``format_transcript_with_tools`` of each metric from an ``EvaRecord``; a variable the record
  cannot provide (a validation record has no agent instructions, for instance) is listed by
  ``missing_variables`` so a sweep can name it before any call.

This module is plain Python (no Django): the app turns its rows into ``EvaRecord``/``EvaEntry``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

PER_TURN = "per_turn"  # a JSON array of turn entries
TURNS_OBJECT = "turns_object"  # {"turns": [turn entries]}
OBJECT = "object"  # one object with a rating (and dimensions)

AGENT = "agent"
USER = "user"

NOT_RATED = "not_rated"


@dataclass(frozen=True)
class EvaProfile:
    key: str
    shape: str
    scale: str  # "ordinal" or "binary"
    scale_min: int
    scale_max: int
    rated_role: str = AGENT
    failure_modes: tuple[str, ...] = ()
    failure_mode_field: str = ""
    dimension_field: str = ""
    dimensions: tuple[str, ...] = ()
    flag_field: str = ""
    audio: bool = False
    entity_scored: bool = False  # rating = all non-skipped entities correct (transcription accuracy)
    description: str = ""

    @property
    def per_turn(self) -> bool:
        return self.shape in (PER_TURN, TURNS_OBJECT)

    @property
    def level(self) -> str:
        """The verdicts' level, from the answer shape: a per-turn answer makes turn-level verdicts."""
        return "turn" if self.per_turn else "conversation"


# EVA's two rating scales: name, lowest, highest.
BINARY = ("binary", 0, 1)
ORDINAL = ("ordinal", 1, 3)


def _judge(key: str, shape: str, scale: tuple[str, int, int], **rest: Any) -> EvaProfile:
    """A profile on one of EVA's two rating scales."""
    name, low, high = scale
    return EvaProfile(key=key, shape=shape, scale=name, scale_min=low, scale_max=high, **rest)


PROFILES: dict[str, EvaProfile] = {
    p.key: p
    for p in (
        _judge(
            "conciseness",
            PER_TURN,
            ORDINAL,
            failure_modes=(
                "verbosity_or_filler",
                "excess_information_density",
                "over_enumeration_or_list_exhaustion",
                "contextually_disproportionate_detail",
            ),
            failure_mode_field="failure_modes",
            description="EVA conciseness: every assistant turn rated 1-3 in one call per conversation.",
        ),
        _judge(
            "speakability",
            PER_TURN,
            BINARY,
            description="EVA speakability: each intended assistant turn 0 or 1, one call per conversation.",
        ),
        _judge(
            "tts_fidelity",
            TURNS_OBJECT,
            BINARY,
            failure_modes=(
                "entity_error",
                "truncation",
                "garbled_hallucination",
                "insertion_hallucination",
                "wrong_language",
            ),
            failure_mode_field="failure_modes",
            audio=True,
            description="EVA tts_fidelity: the assistant audio against its intended turns, 0 or 1 per turn.",
        ),
        _judge(
            "agent_speech_fidelity",
            TURNS_OBJECT,
            BINARY,
            audio=True,
            description="EVA agent_speech_fidelity: entities in the assistant audio, 0 or 1 per turn.",
        ),
        _judge(
            "user_speech_fidelity",
            TURNS_OBJECT,
            ORDINAL,
            rated_role=USER,
            audio=True,
            description="EVA user_speech_fidelity: the user simulator's audio against its intended turns, 1-3.",
        ),
        _judge(
            "transcription_accuracy_key_entities",
            PER_TURN,
            BINARY,
            rated_role=USER,
            entity_scored=True,
            description=(
                "EVA transcription_accuracy_key_entities: each user turn's key entities, expected against"
                " transcribed; passed when every entity the judge did not skip is correct."
            ),
        ),
        _judge(
            "faithfulness",
            OBJECT,
            ORDINAL,
            dimension_field="dimensions",
            dimensions=(
                "fabricating_tool_parameters",
                "misrepresenting_tool_result",
                "violating_policies",
                "failing_to_disambiguate",
                "hallucination",
            ),
            flag_field="flagged",
            description="EVA faithfulness: the whole conversation 1-3, with five flagged dimensions.",
        ),
        _judge(
            "conversation_progression",
            OBJECT,
            ORDINAL,
            dimension_field="dimensions",
            dimensions=("unnecessary_tool_calls", "information_loss", "redundant_statements", "question_quality"),
            flag_field="flagged",
            description="EVA conversation_progression: the whole conversation 1-3, with four flagged dimensions.",
        ),
        _judge(
            "user_behavioral_fidelity",
            OBJECT,
            BINARY,
            dimension_field="corruption_analysis",
            dimensions=(
                "extra_modifications",
                "premature_ending",
                "missing_information",
                "duplicate_modifications",
                "decision_tree_violation",
                "wrong_language",
            ),
            flag_field="detected",
            description="EVA user_behavioral_fidelity: 1 clean, 0 corrupted, with the corruption types detected.",
        ),
    )
}

# EVA's validation sets name some judges differently from judge.yaml.
VALIDATION_SET_JUDGES = {"key_entity_transcription": "transcription_accuracy_key_entities"}


# Prompt variants that answer in another grain: the audio-native key-entity prompt rates tool calls
# ("tool_call_id"), not turns, so it has no profile and cannot be swept until one is written.
UNPROFILED_VARIANTS = frozenset({"transcription_accuracy_key_entities__audio_native"})


def profile_for(judge_key: str) -> EvaProfile | None:
    """The profile of an EVA judge key; ``name__variant`` keys (s2s prompts) share their judge's."""
    if judge_key in UNPROFILED_VARIANTS:
        return None
    return PROFILES.get(judge_key) or PROFILES.get(judge_key.split("__", 1)[0])


# --- records ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvaEntry:
    """One entry of an EVA conversation trace, tied to the Tribunal turn it came from."""

    turn_id: int
    kind: str  # "user", "assistant", "tool_call", "tool_response"
    content: str = ""  # what the trace shows for speech (EVA: intended assistant, transcribed user)
    intended: str = ""
    transcribed: str = ""
    tool_name: str = ""
    payload: Any = None  # tool call parameters or tool response
    source_id: Any = None  # the Tribunal turn's id (or position)
    end_ms: int | None = None  # when the speech ended, for "who spoke last"


@dataclass(frozen=True)
class EvaRecord:
    record_id: str
    entries: tuple[EvaEntry, ...]
    language_display_name: str = "English"
    metadata: Mapping[str, Any] = field(default_factory=dict)
    audio_native: bool = False
    s2s: bool = False

    def turn_ids(self, role: str | None = None) -> list[int]:
        kinds = None if role is None else ({"assistant"} if role == AGENT else {"user"})
        return list(dict.fromkeys(e.turn_id for e in self.entries if kinds is None or e.kind in kinds))

    def speech(self, role: str, which: str) -> dict[int, str]:
        """{turn id: text} of one role's speech, ``which`` = intended or transcribed; parts joined by a space."""
        kind = "assistant" if role == AGENT else "user"
        texts: dict[int, list[str]] = {}
        for entry in self.entries:
            if entry.kind != kind:
                continue
            text = entry.intended if which == "intended" else entry.transcribed
            parts = texts.setdefault(entry.turn_id, [])
            if text and text not in parts:
                parts.append(text)
        return {turn_id: " ".join(parts) for turn_id, parts in texts.items()}

    def sources(self, role: str) -> dict[int, list[Any]]:
        """{turn id: [source ids]} of the Tribunal turns that make up one role's part of each turn."""
        kind = "assistant" if role == AGENT else "user"
        out: dict[int, list[Any]] = {}
        for entry in self.entries:
            if entry.kind == kind:
                out.setdefault(entry.turn_id, []).append(entry.source_id)
        return out


def exchange_turn_ids(roles: Sequence[str]) -> list[int]:
    """EVA's turn ids for a sequence of roles with no ids of their own: user utterance k opens turn k."""
    ids: list[int] = []
    current = 0
    for role in roles:
        if role == USER:
            current += 1
        ids.append(current)
    return ids
