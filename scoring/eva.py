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

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from .parsing import (
    RESOLVED,
    UNRESOLVED,
    JudgeResult,
    ProblemCode,
    _AnswerProblem,
    extract_json_object,
    extract_json_value,
    unresolved,
)

PER_TURN = "per_turn"  # a JSON array of turn entries
TURNS_OBJECT = "turns_object"  # {"turns": [turn entries]}
OBJECT = "object"  # one object with a rating (and dimensions)

AGENT = "agent"
USER = "user"

NOT_RATED = "not_rated"


@dataclass(frozen=True)
class EvaProfile:
    key: str
    level: str  # the verdicts' level: "turn" or "conversation"
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


PROFILES: dict[str, EvaProfile] = {
    p.key: p
    for p in (
        EvaProfile(
            key="conciseness",
            level="turn",
            shape=PER_TURN,
            scale="ordinal",
            scale_min=1,
            scale_max=3,
            failure_modes=(
                "verbosity_or_filler",
                "excess_information_density",
                "over_enumeration_or_list_exhaustion",
                "contextually_disproportionate_detail",
            ),
            failure_mode_field="failure_modes",
            description="EVA conciseness: every assistant turn rated 1-3 in one call per conversation.",
        ),
        EvaProfile(
            key="speakability",
            level="turn",
            shape=PER_TURN,
            scale="binary",
            scale_min=0,
            scale_max=1,
            description="EVA speakability: each intended assistant turn 0 or 1, one call per conversation.",
        ),
        EvaProfile(
            key="tts_fidelity",
            level="turn",
            shape=TURNS_OBJECT,
            scale="binary",
            scale_min=0,
            scale_max=1,
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
        EvaProfile(
            key="agent_speech_fidelity",
            level="turn",
            shape=TURNS_OBJECT,
            scale="binary",
            scale_min=0,
            scale_max=1,
            audio=True,
            description="EVA agent_speech_fidelity: entities in the assistant audio, 0 or 1 per turn.",
        ),
        EvaProfile(
            key="user_speech_fidelity",
            level="turn",
            shape=TURNS_OBJECT,
            scale="ordinal",
            scale_min=1,
            scale_max=3,
            rated_role=USER,
            audio=True,
            description="EVA user_speech_fidelity: the user simulator's audio against its intended turns, 1-3.",
        ),
        EvaProfile(
            key="transcription_accuracy_key_entities",
            level="turn",
            shape=PER_TURN,
            scale="binary",
            scale_min=0,
            scale_max=1,
            rated_role=USER,
            entity_scored=True,
            description=(
                "EVA transcription_accuracy_key_entities: each user turn's key entities, expected against"
                " transcribed; passed when every entity the judge did not skip is correct."
            ),
        ),
        EvaProfile(
            key="faithfulness",
            level="conversation",
            shape=OBJECT,
            scale="ordinal",
            scale_min=1,
            scale_max=3,
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
        EvaProfile(
            key="conversation_progression",
            level="conversation",
            shape=OBJECT,
            scale="ordinal",
            scale_min=1,
            scale_max=3,
            dimension_field="dimensions",
            dimensions=("unnecessary_tool_calls", "information_loss", "redundant_statements", "question_quality"),
            flag_field="flagged",
            description="EVA conversation_progression: the whole conversation 1-3, with four flagged dimensions.",
        ),
        EvaProfile(
            key="user_behavioral_fidelity",
            level="conversation",
            shape=OBJECT,
            scale="binary",
            scale_min=0,
            scale_max=1,
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


# --- the variables, as EVA's metrics build them ---------------------------------------------------


def _trace_dicts(record: EvaRecord) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for e in record.entries:
        if e.kind in ("user", "assistant"):
            out.append({"role": e.kind, "content": e.content, "turn_id": e.turn_id})
        elif e.kind == "tool_call":
            out.append({"type": "tool_call", "tool_name": e.tool_name, "parameters": e.payload, "turn_id": e.turn_id})
        elif e.kind == "tool_response":
            out.append(
                {"type": "tool_response", "tool_name": e.tool_name, "tool_response": e.payload, "turn_id": e.turn_id}
            )
    return out


def format_transcript_with_tools(turns: list[dict[str, Any]]) -> str:
    """EVA's ``eva.metrics.utils.format_transcript_with_tools``: blocks of "Turn N:" by turn id."""
    blocks = []
    for turn_id, group in groupby(turns, key=lambda e: e.get("turn_id", 0)):
        lines = [f"Turn {turn_id}:"]
        for entry in group:
            role = entry.get("role")
            if role in ("user", "assistant"):
                lines.append(f"  {role}: {entry.get('content', '')}")
            elif entry.get("type") == "tool_call":
                lines.append(f"  tool_call: {entry.get('tool_name', '')}({entry.get('parameters', {})})")
            elif entry.get("type") == "tool_response":
                lines.append(f"  tool_response: {entry.get('tool_name', '')}: {entry.get('tool_response', '')}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def _redacted_trace(record: EvaRecord) -> str:
    """agent_speech_fidelity's trace: user turns and tool responses, assistant turns redacted."""
    lines = []
    seen: set[int] = set()
    for e in record.entries:
        if e.kind == "assistant":
            if e.turn_id not in seen:
                seen.add(e.turn_id)
                lines.append(f"Turn {e.turn_id} - [Assistant speaks]")
        elif e.kind == "user":
            lines.append(f"Turn {e.turn_id} - User: {e.content}")
        elif e.kind == "tool_response":
            payload = e.payload if e.payload is not None else {}
            text = json.dumps(payload, ensure_ascii=False) if isinstance(payload, dict | list) else str(payload)
            lines.append(f"Turn {e.turn_id} - Tool Response ({e.tool_name or 'unknown'}): {text}")
    return "\n".join(lines)


def _audio_native_conversation(record: EvaRecord) -> str:
    lines = []
    index = 0
    for e in record.entries:
        if e.kind == "user":
            lines.append(f"Turn {e.turn_id} - User: {e.content}")
        elif e.kind == "assistant":
            lines.append(f"Turn {e.turn_id} - [Assistant speaks]")
        elif e.kind == "tool_call":
            index += 1
            lines.append(f"Turn {e.turn_id} - Tool Call [{index}] ({e.tool_name or 'unknown'}): {e.payload or {}}")
        elif e.kind == "tool_response":
            lines.append(f"Turn {e.turn_id} - Tool Response ({e.tool_name or 'unknown'}): {e.payload or {}}")
    return "\n".join(lines)


def _intended_turns(turns: Mapping[int, str]) -> str:
    return "\n".join(f"Turn {turn_id}: {' '.join(text.split())}" for turn_id, text in turns.items())


def _speakability_turns(record: EvaRecord) -> str:
    intended = record.speech(AGENT, "intended")
    return "\n\n".join(f"[Turn {turn_id}]\n{intended[turn_id]}" for turn_id in sorted(intended) if intended[turn_id])


def key_entity_turn_ids(record: EvaRecord) -> list[int]:
    """User turns with both an expected and a transcribed text: what EVA's cascade prompt pairs up."""
    intended = {k for k, v in record.speech(USER, "intended").items() if v}
    transcribed = {k for k, v in record.speech(USER, "transcribed").items() if v}
    return sorted(intended & transcribed)


def _user_turn_pairs(record: EvaRecord) -> str:
    intended = record.speech(USER, "intended")
    transcribed = record.speech(USER, "transcribed")
    return "\n\n".join(
        f'Turn {tid}:\nExpected: "{intended[tid]}"\nTranscribed: "{transcribed[tid]}"'
        for tid in key_entity_turn_ids(record)
    )


# EVA's pipeline fragments (eva.metrics.pipeline_prompts and the faithfulness metric), verbatim.
CASCADE_USER_TURNS_DISCLAIMER = (
    "**About user turns:** User turns are **transcripts** produced by the assistant's speech-to-text (STT) "
    "system. The assistant receives these transcripts as text input — this is the only representation of "
    "user speech available to the assistant. STT transcripts may contain errors (misheard words, garbled "
    "names, dropped syllables), but the assistant cannot know what the user actually said beyond what the "
    "transcript shows. Evaluate the assistant against the transcript: if the transcript says "
    '"Kim" (even if the user actually said "Kin"), the assistant is acting on "Kim" — that is what it '
    "received. Do not penalize the assistant for the transcript's accuracy."
)
S2S_USER_TURNS_DISCLAIMER = (
    "**About user turns:** This is a **speech-to-speech** system — the assistant receives raw audio "
    "directly, not a text transcript. The user turns shown here are the **intended text** (what the user "
    "simulator was instructed to say), not what the assistant heard. The assistant is responsible for its "
    "own audio understanding. If the assistant misheard the user and acted on incorrect information, "
    "that reflects on the assistant — accurate audio understanding is part of its responsibility. The "
    "only mitigation is proper disambiguation: if the assistant was unsure about what it heard, it "
    "should have asked the user to confirm or clarify."
)
CASCADE_ASSISTANT_TURNS_DISCLAIMER = (
    "**About assistant turns:** Assistant turns shown here are the LLM's **intended text** — exactly "
    "what the agent produced before TTS rendering. When a user response in the transcript appears to "
    "dispute, contradict, or react oddly to an assistant turn that itself looks correct, the most likely "
    "cause is an STT error on the user side (the user actually heard something different from what the "
    "transcript shows the assistant said). Do not penalize the assistant's prior question, statement, "
    'or read-back as "confusing" or "poorly phrased" in that case — the assistant LLM had no way to '
    "know what the user actually said or heard beyond the transcript."
)
S2S_ASSISTANT_TURNS_DISCLAIMER = (
    "**About assistant turns:** This is a **speech-to-speech** system — the agent produces audio directly, "
    "with no separate intended-text step. The assistant turns shown here are **STT transcriptions of the "
    "agent's audio**, not text the LLM wrote. Audio articulation fidelity (whether the agent *spoke* an "
    "entity clearly and correctly) is scored separately by the `agent_speech_fidelity` metric on the "
    "actual audio — do not penalize the agent here for what may be TTS-rendering or STT-transcription "
    "artifacts in its turns. Tool call parameters and tool responses shown in the trace are the literal "
    "values the agent sent and received via the API, not audio — if a tool parameter looks wrong, the "
    "agent really sent it that way; if the agent's claim contradicts a tool response, the tool truly "
    "returned the value shown."
)
S2S_MISREPRESENTATION_NOTE = (
    "**Speech-to-speech scoping for this dimension.** Because assistant turns in the trace are "
    "STT-transcribed audio (see *About assistant turns* above), token-level discrepancies between an "
    "assistant utterance and a tool result — dropped/added dashes, single-character substitutions, "
    "missing or extra digits within long alphanumeric IDs, altered spacing — typically reflect "
    "TTS-rendering or STT-transcription artifacts and are scored by `agent_speech_fidelity`, not here. "
    "Only flag `misrepresenting_tool_result` when the discrepancy is structural/semantic (wrong field, "
    "wrong order of magnitude, wrong category) or when downstream signals — subsequent tool calls, "
    "follow-up actions, user objections — show the agent was internally operating on a wrong value."
)
S2S_INFORMATION_LOSS_NOTE = (
    "**Speech-to-speech scoping for this dimension.** Because assistant turns in the trace are "
    "STT-transcribed audio (see *About assistant turns* above), variant token-level readings of the "
    "same alphanumeric identifier across nearby assistant turns — dropped/added dashes, single-character "
    "substitutions, missing or extra digits within long IDs, altered spacing or capitalization — typically "
    "reflect TTS-rendering or STT-transcription artifacts on a value the agent is reading consistently in "
    "audio. These are scored by `agent_speech_fidelity`, not here. "
    "Only flag `information_loss` when the discrepancy is structural/semantic (different entity, wrong "
    "field, wrong category — e.g., addressing the user by an entirely different first name, or referencing "
    "a different person/record than the tool returned), or when downstream signals — subsequent tool calls "
    "made with a wrong value, follow-up actions taken on stale data, user objections that the agent then "
    "fails to incorporate — show the agent was internally operating on a wrong value or had genuinely lost "
    "track of the established fact."
)
CASCADE_DISAMBIGUATION_CONTEXT = (
    "Since the assistant is working from a speech-to-text transcript, it should account for potential "
    "transcription errors, and clarify any ambiguity in the user's intent, especially when they lead to "
    "write/irreversible operations. It's not needed to clarify if the tools called are simple lookups, "
    "but if the lookups fail, the assistant is expected to clarify the user's intent."
)
S2S_DISAMBIGUATION_CONTEXT = (
    "Since the assistant processes raw audio directly (speech-to-speech), it should account for potential "
    "audio perception errors — mishearing letters, numbers, names, or codes is common with spoken input. "
    "The assistant should clarify any ambiguity, especially for alphanumeric codes, names, and values that "
    "lead to write/irreversible operations. It's not needed to clarify if the tools called are simple "
    "lookups, but if the lookups fail, the assistant is expected to clarify the user's intent."
)

# Variables an EVA record does not carry in its conversation: EVA takes them from the agent
# config and the dataset. A record (or the dataset's metadata) may hold them under these keys.
METADATA_VARIABLES: dict[str, tuple[str, ...]] = {
    "agent_instructions": ("agent_instructions",),
    "agent_role": ("agent_role",),
    "available_tools": ("available_tools", "agent_tools"),
    "current_date_time": ("current_date_time",),
    "user_simulator_instructions": ("user_simulator_instructions",),
    "modification_tools": ("modification_tools",),
    "conversation_end": ("conversation_end",),
    "conversation_evidence": ("conversation_evidence",),
}


def _from_metadata(name: str, record: EvaRecord) -> str | None:
    for key in METADATA_VARIABLES.get(name, ()):
        for source in (record.metadata, record.metadata.get("context") or {}):
            if isinstance(source, Mapping) and source.get(key) not in (None, ""):
                value = source[key]
                if name == "available_tools" and not isinstance(value, str):
                    return json.dumps(value, indent=4)
                if name == "modification_tools" and not isinstance(value, str):
                    return json.dumps(value, indent=2)
                return str(value)
    return None


# user_behavioral_fidelity's pipeline texts (eva.metrics.validation.user_behavioral_fidelity), verbatim.
CASCADE_CONVERSATION_EVIDENCE = (
    "You are provided with two views of the conversation. Use BOTH when analyzing user behavior.\n\n"
    "### Agent-Side Transcript (includes tool calls)\n"
    "This is the full conversation as seen by the agent, including all tool calls and their results. "
    "IMPORTANT: The user turns in this transcript are the agent's TRANSCRIPTIONS of what the user said "
    "— these may contain transcription errors (e.g., mishearing names, numbers, or codes). Do not "
    "penalize the user for information that was transcribed incorrectly by the agent.\n"
    "{conversation_trace}\n\n"
    "### User-Side Text (ground truth for what the user said)\n"
    "{intended_user_turns}\n"
    "This is what the user actually said out loud during the conversation. When evaluating whether the "
    "user provided correct information, ALWAYS check this source. If there is a discrepancy between the "
    "agent-side transcript and this text, the user-side text is the ground truth — the user said it "
    "correctly and the agent misheard."
)
AUDIO_NATIVE_CONVERSATION_EVIDENCE = (
    "This is a **speech-to-speech** system — the agent receives raw audio, not a text transcript. "
    "The user turns shown in the conversation trace are the **intended text** (what the user simulator "
    "was instructed to say). Since the agent only hears audio, discrepancies between what the user "
    "intended and how the agent responded may be due to the agent mishearing — do not penalize the user "
    "for the agent's audio perception errors.\n\n"
    "### Conversation (includes tool calls)\n"
    "{conversation_trace}\n\n"
    "### User Intended Text\n"
    "{intended_user_turns}\n"
    "This is what the user simulator was instructed to say. Use this as the ground truth for evaluating "
    "whether the user followed their goal and instructions correctly."
)


def _conversation_evidence(record: EvaRecord) -> str:
    template = AUDIO_NATIVE_CONVERSATION_EVIDENCE if record.audio_native else CASCADE_CONVERSATION_EVIDENCE
    # EVA formats the intended user turns as the dict itself ({1: '...'}), so the prompt shows its repr.
    return template.format(
        conversation_trace=format_transcript_with_tools(_trace_dicts(record)),
        intended_user_turns=record.speech(USER, "intended"),
    )


def _ended_reason(record: EvaRecord) -> str | None:
    for source in (record.metadata, record.metadata.get("context") or {}):
        if isinstance(source, Mapping) and source.get("conversation_ended_reason"):
            return str(source["conversation_ended_reason"])
    return None


def _conversation_end(record: EvaRecord) -> str | None:
    """EVA's sentence on how the call ended, or None when the record cannot tell."""
    reason = _ended_reason(record)
    if reason is None:
        return None
    if reason == "time_limit_exceeded":
        return (
            "a system timeout - the conversation exceeded the allowed time limit. "
            "The user did NOT end the call; the system terminated the conversation."
        )
    if reason == "inactivity_timeout":
        timed = [e for e in record.entries if e.kind in ("user", "assistant") and e.end_ms is not None]
        if not timed:
            return None  # who spoke last decides the sentence, and the record has no timestamps
        if max(timed, key=lambda e: e.end_ms or 0).kind == "user":
            return "the agent's failure to respond to the final user turn."
        return (
            "an inactivity timeout - neither the user nor the agent spoke for an extended period. "
            "The user did NOT end the call; the system terminated the conversation due to silence."
        )
    return "the user calling the end_call tool."


_BUILDERS: dict[str, Callable[[EvaRecord], str]] = {
    "conversation_turns": lambda r: format_transcript_with_tools(_trace_dicts(r)),
    "conversation_trace": lambda r: format_transcript_with_tools(_trace_dicts(r)),
    "conversation_trace_formatted": _redacted_trace,
    "conversation": _audio_native_conversation,
    "assistant_turns_formatted": _speakability_turns,
    "user_turns": _user_turn_pairs,
    "expected_language": lambda r: r.language_display_name,
    "language_display_name": lambda r: r.language_display_name,
    "user_turns_disclaimer": lambda r: S2S_USER_TURNS_DISCLAIMER if r.audio_native else CASCADE_USER_TURNS_DISCLAIMER,
    "assistant_turns_disclaimer": lambda r: (
        S2S_ASSISTANT_TURNS_DISCLAIMER if r.s2s else CASCADE_ASSISTANT_TURNS_DISCLAIMER
    ),
    "misrepresentation_pipeline_note": lambda r: S2S_MISREPRESENTATION_NOTE if r.s2s else "",
    "information_loss_pipeline_note": lambda r: S2S_INFORMATION_LOSS_NOTE if r.s2s else "",
    "disambiguation_context": lambda r: (
        S2S_DISAMBIGUATION_CONTEXT if r.audio_native else CASCADE_DISAMBIGUATION_CONTEXT
    ),
}


def _intended_for(profile: EvaProfile | None) -> Callable[[EvaRecord], str]:
    role = profile.rated_role if profile is not None else AGENT
    return lambda r: _intended_turns(r.speech(role, "intended"))


def build_variables(judge_key: str, names: Iterable[str], record: EvaRecord) -> tuple[dict[str, str], list[str]]:
    """(values, missing): every variable in ``names`` built the way EVA builds it, and those it cannot."""
    profile = profile_for(judge_key)
    values: dict[str, str] = {}
    missing: list[str] = []
    for name in names:
        if name == "intended_turns_formatted":
            values[name] = _intended_for(profile)(record)
        elif name in _BUILDERS:
            values[name] = _BUILDERS[name](record)
        else:
            found = _from_metadata(name, record)
            if found is None and name == "conversation_evidence":
                found = _conversation_evidence(record)
            if found is None and name == "conversation_end":
                found = _conversation_end(record)
            if found is None:
                missing.append(name)
            else:
                values[name] = found
    return values, missing


def expected_turn_ids(profile: EvaProfile, record: EvaRecord) -> list[int]:
    """The turn ids EVA asks the judge to rate (``get_expected_turn_ids`` of each metric)."""
    if profile.key == "conciseness":
        return record.turn_ids()
    if profile.key == "speakability":
        return [k for k, v in sorted(record.speech(AGENT, "intended").items()) if v]
    if profile.key == "transcription_accuracy_key_entities":
        return key_entity_turn_ids(record)
    if profile.rated_role == USER:
        return sorted(record.speech(USER, "intended"))
    return sorted(record.speech(AGENT, "intended") or dict.fromkeys(record.turn_ids(AGENT)))


# --- answers ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TurnAnswer:
    turn_id: int
    result: JudgeResult
    not_rated: bool = False


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _entries(profile: EvaProfile, raw_text: str) -> list[Any]:
    data = extract_json_value(raw_text)
    if isinstance(data, dict):
        turns = data.get("turns")
        if isinstance(turns, list) and (profile.shape == TURNS_OBJECT or "turn_id" not in data):
            return turns
        if "turn_id" in data:
            return [data]  # EVA reads a lone entry as a one-turn answer
        raise _AnswerProblem('expected a JSON array of turn entries (or {"turns": [...]}), got an object')
    if isinstance(data, list):
        return data
    raise _AnswerProblem(f"expected a JSON array of turn entries, got a JSON {type(data).__name__}")


def _explanation(entry: Mapping[str, Any], key: str = "explanation") -> str:
    value = entry.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _AnswerProblem(f"'{key}' must be a string")
    return value.strip()


def _turn_result(profile: EvaProfile, turn_id: int, entry: Mapping[str, Any]) -> TurnAnswer:
    where = f"turn {turn_id}"
    try:
        if profile.entity_scored:
            return _entity_result(profile, turn_id, entry)
        explanation = _explanation(entry)
        if "rating" not in entry:
            return TurnAnswer(
                turn_id, unresolved(f"{where}: the entry has no rating", explanation=explanation, code="missing_key")
            )
        value = entry["rating"]
        if value is None:
            return TurnAnswer(
                turn_id,
                JudgeResult(
                    status=UNRESOLVED,
                    problem=f"{where}: not rated (rating is null)",
                    explanation=explanation,
                    problem_code=ProblemCode.UNCERTAIN,
                ),
                not_rated=True,
            )
        if not _is_number(value) or not float(value).is_integer():
            return TurnAnswer(
                turn_id,
                unresolved(
                    f"{where}: rating {value!r} is not a whole scale point",
                    explanation=explanation,
                    code="out_of_range" if _is_number(value) else "bad_type",
                ),
            )
        rating = float(value)
        if not profile.scale_min <= rating <= profile.scale_max:
            return TurnAnswer(
                turn_id,
                unresolved(
                    f"{where}: rating {value!r} is outside the scale {profile.scale_min}..{profile.scale_max}",
                    explanation=explanation,
                    code="out_of_range",
                ),
            )
        flags: list[str] = []
        if profile.failure_mode_field:
            modes = entry.get(profile.failure_mode_field)
            if modes is None:
                modes = []
            if not isinstance(modes, list) or not all(isinstance(m, str) for m in modes):
                raise _AnswerProblem(f"'{profile.failure_mode_field}' must be a list of strings")
            known = set(profile.failure_modes)
            for mode in (m.strip() for m in modes if m.strip()):
                flags.append(mode if mode in known else f"unknown_failure_mode:{mode}")
            if rating == profile.scale_max and flags:
                flags.append("failure_modes_on_top_rating")
        passed = rating == 1.0 if profile.scale == "binary" else None
        label = ("pass" if passed else "fail") if profile.scale == "binary" else f"{rating:g}"
        sub_scores: dict[str, float] = {}
        return TurnAnswer(
            turn_id,
            JudgeResult(
                status=RESOLVED,
                rating=rating,
                label=label,
                passed=passed,
                flags=tuple(flags),
                sub_scores=sub_scores,
                explanation=explanation,
            ),
        )
    except _AnswerProblem as exc:
        return TurnAnswer(turn_id, unresolved(f"{where}: {exc}", code=exc.code))


def _entity_result(profile: EvaProfile, turn_id: int, entry: Mapping[str, Any]) -> TurnAnswer:
    where = f"turn {turn_id}"
    summary = _explanation(entry, "summary")
    entities = entry.get("entities")
    if entities is None:
        entities = []
    if not isinstance(entities, list):
        raise _AnswerProblem("'entities' must be a list")
    counted = 0
    correct = 0
    failures: list[str] = []
    for index, entity in enumerate(entities):
        if not isinstance(entity, dict):
            raise _AnswerProblem(f"entities[{index}] must be an object")
        skipped = entity.get("skipped", False)
        if not isinstance(skipped, bool):
            raise _AnswerProblem(f"entities[{index}].skipped must be true or false")
        if skipped:
            continue
        ok = entity.get("correct")
        if not isinstance(ok, bool):
            raise _AnswerProblem(f"entities[{index}].correct must be true or false")
        counted += 1
        correct += ok
        if not ok:
            mode = f"entity_error:{entity.get('type') or 'unknown'}"
            if mode not in failures:
                failures.append(mode)
    if counted == 0:
        # EVA scores such a turn -1, "not applicable", and leaves it out of every figure.
        return TurnAnswer(
            turn_id,
            JudgeResult(status=UNRESOLVED, problem=f"{where}: not rated (no entity to check)", explanation=summary),
            not_rated=True,
        )
    passed = correct == counted
    return TurnAnswer(
        turn_id,
        JudgeResult(
            status=RESOLVED,
            rating=1.0 if passed else 0.0,
            label="pass" if passed else "fail",
            passed=passed,
            flags=tuple(failures),
            sub_scores={"entity_accuracy": correct / counted},
            explanation=summary,
        ),
    )


def parse_per_turn(
    profile: EvaProfile, raw_text: str, *, turn_ids: Sequence[int], rated: Iterable[int]
) -> dict[int, TurnAnswer]:
    """One TurnAnswer for every turn id in ``rated``; never a guess.

    ``turn_ids`` are every turn id the conversation has, ``rated`` those with content the judge must
    rate (the targets). The whole answer is unresolved when it is not a JSON array of objects with
    integer turn ids, or when it rates a turn the conversation does not have (its numbering cannot
    be trusted); a target with no entry, or with two, is unresolved on its own.
    """
    rated = list(dict.fromkeys(rated))
    known = set(turn_ids)
    try:
        entries = _entries(profile, raw_text)
        by_id: dict[int, list[Mapping[str, Any]]] = {}
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict):
                raise _AnswerProblem(f"entry {index} is not an object")
            turn_id = entry.get("turn_id")
            if not isinstance(turn_id, int) or isinstance(turn_id, bool):
                raise _AnswerProblem(f"entry {index} has no integer turn_id (got {turn_id!r})")
            if turn_id not in known:
                raise _AnswerProblem(
                    f"entry {index} rates turn {turn_id}, which the conversation does not have"
                    f" (turns {', '.join(str(t) for t in sorted(known)) or 'none'})"
                )
            by_id.setdefault(turn_id, []).append(entry)
    except _AnswerProblem as exc:
        return {turn_id: TurnAnswer(turn_id, unresolved(str(exc), code=exc.code)) for turn_id in rated}
    answers: dict[int, TurnAnswer] = {}
    for turn_id in rated:
        found = by_id.get(turn_id, [])
        if not found:
            answers[turn_id] = TurnAnswer(
                turn_id, unresolved(f"turn {turn_id}: the answer has no entry for it", code="missing_key")
            )
        elif len(found) > 1:
            answers[turn_id] = TurnAnswer(
                turn_id, unresolved(f"turn {turn_id}: the answer has {len(found)} entries for it", code="duplicate_key")
            )
        else:
            answers[turn_id] = _turn_result(profile, turn_id, found[0])
    return answers


def parse_conversation(profile: EvaProfile, raw_text: str) -> JudgeResult:
    """A conversation judge's object: rating on the profile's scale, dimensions as flags and sub-scores."""
    explanation = ""
    try:
        data = extract_json_object(raw_text)
        explanation = _explanation(data)
        if "rating" not in data:
            raise _AnswerProblem("missing required key(s): rating")
        value = data["rating"]
        if value is None:
            raise _AnswerProblem("the judge gave no rating (rating is null)", "uncertain")
        if not _is_number(value) or not float(value).is_integer():
            raise _AnswerProblem(f"rating {value!r} is not a whole point of the {profile.scale} scale", "out_of_range")
        rating = float(value)
        if not profile.scale_min <= rating <= profile.scale_max:
            raise _AnswerProblem(
                f"rating {value!r} is outside the scale {profile.scale_min}..{profile.scale_max}", "out_of_range"
            )
        flags: list[str] = []
        sub_scores: dict[str, float] = {}
        details: list[str] = []
        if profile.dimension_field:
            dims = data.get(profile.dimension_field)
            if not isinstance(dims, dict):
                raise _AnswerProblem(f"'{profile.dimension_field}' must be an object of dimensions")
            missing = [name for name in profile.dimensions if name not in dims]
            if missing:
                raise _AnswerProblem(f"missing dimension(s): {', '.join(missing)}")
            for name in profile.dimensions:
                dim = dims[name]
                if not isinstance(dim, dict):
                    raise _AnswerProblem(f"dimension {name} must be an object")
                flagged = dim.get(profile.flag_field)
                if not isinstance(flagged, bool):
                    raise _AnswerProblem(f"dimension {name}: '{profile.flag_field}' must be true or false")
                if flagged:
                    flags.append(name)
                if "rating" in dim:
                    sub = dim["rating"]
                    if not _is_number(sub) or not profile.scale_min <= sub <= profile.scale_max:
                        raise _AnswerProblem(f"dimension {name}: rating {sub!r} is outside the scale")
                    sub_scores[name] = float(sub)
                said = dim.get("evidence", dim.get("analysis"))
                if isinstance(said, str) and said.strip() and flagged:
                    details.append(f"{name}: {said.strip()}")
            flags.extend(f"unknown_dimension:{name}" for name in dims if name not in profile.dimensions)
        if not explanation and details:
            explanation = "\n".join(details)
        passed = rating == 1.0 if profile.scale == "binary" else None
        label = ("pass" if passed else "fail") if profile.scale == "binary" else f"{rating:g}"
        return JudgeResult(
            status=RESOLVED,
            rating=rating,
            label=label,
            passed=passed,
            flags=tuple(flags),
            sub_scores=sub_scores,
            explanation=explanation,
        )
    except _AnswerProblem as exc:
        return unresolved(str(exc), explanation=explanation, code=exc.code)


def agent_variables(config: Mapping[str, Any]) -> dict[str, str]:
    """The variables EVA takes from an agent config (``configs/agents/*.yaml``): role, instructions, tools."""
    out: dict[str, str] = {}
    if config.get("role"):
        out["agent_role"] = str(config["role"])
    if config.get("instructions"):
        out["agent_instructions"] = str(config["instructions"])
    tools = config.get("tools")
    if tools is not None:
        out["available_tools"] = json.dumps(tools, indent=4)
        writes = [t for t in tools if isinstance(t, Mapping) and t.get("tool_type") == "write"]
        out["modification_tools"] = json.dumps(writes, indent=2)
    return out


def describe(result: JudgeResult, *, not_rated: bool = False) -> str:
    """A short cell for a side-by-side: the rating and flags, or why there is none."""
    if not_rated:
        return "not rated"
    if result.status != RESOLVED:
        return f"unresolved ({result.problem})"
    flags = f" [{', '.join(result.flags)}]" if result.flags else ""
    return f"{result.rating:g}{flags}"


def per_turn_side_by_side(
    profile: EvaProfile, old_text: str, new_text: str, *, turn_ids: Sequence[int], rated: Sequence[int]
) -> list[tuple[int, str, str]]:
    """(turn id, archived, replay) for every rated turn of a per-turn call answered twice."""
    old = parse_per_turn(profile, old_text, turn_ids=turn_ids, rated=rated)
    new = parse_per_turn(profile, new_text, turn_ids=turn_ids, rated=rated)
    return [
        (
            turn_id,
            describe(old[turn_id].result, not_rated=old[turn_id].not_rated),
            describe(new[turn_id].result, not_rated=new[turn_id].not_rated),
        )
        for turn_id in dict.fromkeys(rated)
    ]


DATASET_FIELDS = ("current_date_time",)


def dataset_variables(records: Any) -> dict[str, dict[str, str]]:
    """{record id: variables} from EVA's dataset file (``data/<domain>_dataset.json``): what EVA's runner
    takes from the dataset record rather than the conversation, such as ``current_date_time``."""
    if not isinstance(records, list):
        raise ValueError("expected a JSON list of EVA dataset records")
    out: dict[str, dict[str, str]] = {}
    for index, item in enumerate(records):
        if not isinstance(item, Mapping) or "id" not in item:
            raise ValueError(f"record {index} is not an object with an id")
        values = {name: str(item[name]) for name in DATASET_FIELDS if item.get(name) not in (None, "")}
        if values:
            out[str(item["id"])] = values
    return out
