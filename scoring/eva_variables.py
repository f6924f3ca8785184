"""The prompt variables of EVA's judges, built from an EVA record the way EVA's metrics build them (src/eva/metrics/), and the agent and dataset variables some of them need."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from itertools import groupby
from typing import Any

from scoring.eva import AGENT, USER, EvaProfile, EvaRecord, profile_for

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
