"""Template variables for judge prompts, built from Tribunal's conversations and turns.

One function per target level. Both return every variable the shipped judges and EVA-style
prompt files use, so a template asking for something else fails with MissingVariable naming it
(EVA's user_goal, user_persona, modification_tools, conversation_trace_formatted ... have no
Tribunal source yet).

The functions read attributes only (``turn.text``, ``turn.conversation.language`` ...), so they
work on unsaved model instances too: ``sample_conversations()`` builds the fixed sample behind
the golden renders that way, without touching the database.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from reviewapp.corpus.importers.eva_validation import EVENT_SHAPE_KEY, reorder
from reviewapp.models import Conversation, Turn
from scoring import eva, eva_variables
from scoring.specs import JudgeSpec, MissingVariable, RenderedPrompt, render, template_variables

LANGUAGE_NAMES = {
    "ar": "Arabic",
    "de": "German",
    "en": "English",
    "en-GB": "English (United Kingdom)",
    "en-US": "English (United States)",
    "es": "Spanish",
    "es-MX": "Spanish (Mexico)",
    "fr": "French",
    "fr-CA": "French (Canada)",
    "hi": "Hindi",
    "it": "Italian",
    "ja": "Japanese",
    "ko": "Korean",
    "nl": "Dutch",
    "pt": "Portuguese",
    "pt-BR": "Portuguese (Brazil)",
    "zh": "Chinese",
}

ROLE_NAMES = {"agent": "assistant", "user": "user", "tool_call": "tool_call", "tool_response": "tool_response"}
NO_ENTITIES = "(none listed)"


def language_display_name(code: str) -> str:
    by_lower = {k.lower(): v for k, v in LANGUAGE_NAMES.items()}
    if code.lower() in by_lower:
        return by_lower[code.lower()]
    base = code.split("-", 1)[0].lower()
    if base in by_lower:
        return f"{by_lower[base]} ({code.split('-', 1)[1]})"
    return code


def _line(turn: Any) -> str:
    role = ROLE_NAMES.get(turn.role, turn.role)
    text = (turn.text or "").strip()
    return f"[turn {turn.position}] {role}: {text}"


def format_turns(turns: Iterable[Any], *, roles: Sequence[str] | None = None) -> str:
    lines = [_line(t) for t in turns if roles is None or t.role in roles]
    return "\n".join(lines) if lines else "(no earlier turns)"


def format_intended(turns: Iterable[Any]) -> str:
    lines = []
    for turn in turns:
        if turn.role != Turn.Role.AGENT:
            continue
        intended = (turn.intended_text or turn.text or "").strip()
        lines.append(f"Turn {turn.position}:\n  intended: {intended}\n  entities: {format_entities(turn.entities)}")
    return "\n".join(lines) if lines else "(no agent turns)"


def format_entities(entities: Any) -> str:
    if not entities:
        return NO_ENTITIES
    items = []
    for entity in entities:
        if isinstance(entity, dict):
            kind = entity.get("type") or entity.get("kind") or "entity"
            value = entity.get("value") or entity.get("text") or json.dumps(entity, ensure_ascii=False)
            items.append(f"- {kind}: {value}")
        else:
            items.append(f"- {entity}")
    return "\n".join(items)


def _common(conversation: Any, turns: Sequence[Any]) -> dict[str, Any]:
    language = conversation.language
    return {
        "expected_language": language,
        "language_display_name": language_display_name(language),
        "conversation_id": conversation.external_id,
        "conversation_turns": format_turns(turns),
        "conversation_trace": format_turns(turns),
        "assistant_turns_formatted": format_turns(turns, roles=[Turn.Role.AGENT]),
        "user_turns": format_turns(turns, roles=[Turn.Role.USER]),
        "intended_turns_formatted": format_intended(turns),
    }


def variables_for_turn(turn: Any, *, context_turns: Sequence[Any]) -> dict[str, Any]:
    """Variables for a turn-level judge. ``context_turns``: the turns before ``turn``, in order."""
    context = [t for t in context_turns if t.position < turn.position]
    variables = _common(turn.conversation, context)
    variables.update(
        {
            "turn_id": turn.position,
            "turn_role": ROLE_NAMES.get(turn.role, turn.role),
            "turn_text": (turn.text or "").strip(),
            "intended_text": (turn.intended_text or turn.text or "").strip(),
            "entities_formatted": format_entities(turn.entities),
            "intended_turns_formatted": format_intended([turn]),
        }
    )
    return variables


def variables_for_conversation(conversation: Any, turns: Sequence[Any]) -> dict[str, Any]:
    """Variables for a conversation-level judge over ``turns`` (all of them, in order)."""
    variables = _common(conversation, turns)
    variables["turn_count"] = len(turns)
    return variables


# --- the fixed sample behind the golden renders -------------------------------------------------

_SAMPLE: dict[str, list[tuple[str, str, str, list[dict[str, str]]]]] = {
    "en": [
        ("user", "Hi, my flight to Boston was cancelled. Can you rebook me for tomorrow morning?", "", []),
        (
            "agent",
            "Sure. What's your six-character confirmation code and the last name on the booking?",
            "Sure. What's your six-character confirmation code and the last name on the booking?",
            [],
        ),
        ("user", "It's K seven M D two Q, last name Patel.", "", []),
        (
            "agent",
            "Thanks, Ms. Patel. I found K eleven M D two Q. **Option one** leaves at 8:05 AM.",
            "Thanks, Ms. Patel. I found K seven M D two Q. Option one leaves at 8:05 AM.",
            [{"type": "confirmation_code", "value": "K7MD2Q"}, {"type": "time", "value": "8:05 AM"}],
        ),
    ],
    "fr": [
        ("user", "Bonjour, je voudrais changer mon vol de jeudi pour Lyon.", "", []),
        (
            "agent",
            "Bien sûr. Pouvez-vous me donner votre numéro de réservation (booking reference) ?",
            "Bien sûr. Pouvez-vous me donner votre numéro de réservation ?",
            [],
        ),
        ("user", "C'est X X F six O H.", "", []),
        (
            "agent",
            "Merci. Le vol AF 7412 part à 14 h 30 ; la différence de tarif est de 45 euros.",
            "Merci. Le vol AF 7412 part à 14 h 30 ; la différence de tarif est de 45 euros.",
            [{"type": "flight_number", "value": "AF 7412"}, {"type": "amount", "value": "45 €"}],
        ),
    ],
    "fr-CA": [
        ("user", "Allô, mon vol pour Québec a été annulé. Je peux-tu en avoir un autre à soir?", "", []),
        (
            "agent",
            "Certainement. Je vous envoie la confirmation par courriel (e-mail) dès que c'est fait.",
            "Certainement. Je vous envoie la confirmation par courriel dès que c'est fait.",
            [],
        ),
        ("user", "Parfait, merci.", "", []),
        (
            "agent",
            "I have booked you on the 19 h 40 flight, seat 12 C.",
            "Je vous ai réservé sur le vol de 19 h 40, siège 12 C.",
            [{"type": "time", "value": "19:40"}, {"type": "seat", "value": "12C"}],
        ),
    ],
    "ja": [
        ("user", "明日の大阪行きの便を変更したいのですが。", "", []),
        (
            "agent",
            "かしこまりました。予約番号をお伺いしてもよろしいでしょうか。",
            "かしこまりました。予約番号をお伺いしてもよろしいでしょうか。",
            [],
        ),
        ("user", "ZK3FFWです。", "", []),
        (
            "agent",
            "ありがとうございます。午後3時15分発の便に空席がございます。差額は4500円です。",
            "ありがとうございます。午後3時15分発の便に空席がございます。差額は4500円です。",
            [{"type": "time", "value": "15:15"}, {"type": "amount", "value": "4500円"}],
        ),
    ],
    "hi": [
        ("user", "नमस्ते, मेरी दिल्ली की flight cancel हो गई है।", "", []),
        (
            "agent",
            "मुझे खेद है। कृपया अपना booking नंबर बताइए।",
            "मुझे खेद है। कृपया अपना booking नंबर बताइए।",
            [],
        ),
        ("user", "J Q सात K नौ P.", "", []),
        (
            "agent",
            "धन्यवाद। मैंने आपको कल सुबह 9:10 की flight पर रख दिया है, कोई extra charge नहीं है।",
            "धन्यवाद। मैंने आपको कल सुबह 9:10 की flight पर रख दिया है, कोई अतिरिक्त शुल्क नहीं है।",
            [{"type": "time", "value": "9:10"}],
        ),
    ],
}


def sample_conversations() -> list[tuple[Conversation, list[Turn]]]:
    """A few short conversations in en, fr, fr-CA, ja and hi, as unsaved model instances."""
    samples = []
    for language, rows in _SAMPLE.items():
        conversation = Conversation(external_id=f"golden-{language}", language=language)
        turns = [
            Turn(
                conversation=conversation,
                position=position,
                role=role,
                text=text,
                intended_text=intended,
                entities=entities,
            )
            for position, (role, text, intended, entities) in enumerate(rows, start=1)
        ]
        samples.append((conversation, turns))
    return samples


def render_target_prompts(spec: JudgeSpec, conversation: Any, turns: Sequence[Any]) -> list[dict[str, Any]]:
    """Every prompt ``spec`` sends for one conversation: one per agent turn, or one in all (EVA's judges:
    one per conversation, per-turn judges included)."""
    if spec.eva_profile:
        values = eva_prompt_values(spec, eva_record(conversation, turns))
        return [_as_dict("conversation", render(spec, values, language=conversation.language))]
    if spec.level == "conversation":
        prompt = render(spec, variables_for_conversation(conversation, turns), language=conversation.language)
        return [_as_dict("conversation", prompt)]
    rendered = []
    for turn in turns:
        if turn.role != Turn.Role.AGENT:
            continue
        variables = variables_for_turn(turn, context_turns=turns)
        prompt = render(spec, variables, language=conversation.language)
        rendered.append(_as_dict(f"turn {turn.position}", prompt))
    return rendered


def _as_dict(target: str, prompt: RenderedPrompt) -> dict[str, Any]:
    return {"target": target, "system": prompt.system, "user": prompt.user}


def golden_renders(specs: Sequence[JudgeSpec]) -> dict[str, dict[str, Any]]:
    """{language: {"judge@version": [prompts]}} for the fixed sample: the golden-render fixtures."""
    out: dict[str, dict[str, Any]] = {}
    for conversation, turns in sample_conversations():
        out[conversation.language] = {
            spec.key: render_target_prompts(spec, conversation, turns) for spec in sorted(specs, key=lambda s: s.key)
        }
    return out


# --- EVA records ---------------------------------------------------------------------------------

BY_RECORD = "by_record"  # sweep variables per record id (from EVA's dataset file)
_EVA_KINDS = {"agent": "assistant", "user": "user", "tool_call": "tool_call", "tool_response": "tool_response"}


def _eva_turn_ids(conversation: Any, turns: Sequence[Any]) -> list[int]:
    """EVA's turn id of each turn: the imported one (EVA runs), else EVA's rule for the record's shape."""
    stored = [(t.metadata or {}).get("eva_turn_id") for t in turns]
    if turns and all(isinstance(v, int) and not isinstance(v, bool) for v in stored):
        return [int(v) for v in stored]
    if (conversation.metadata or {}).get("eva_shape") == "entity_transcription":
        return [t.position for t in turns]  # the labels' turn_id counts user turns from 0
    return eva.exchange_turn_ids([t.role for t in turns])


def eva_record(conversation: Any, turns: Sequence[Any], *, extra: dict[str, Any] | None = None) -> eva.EvaRecord:
    """The EVA view of one conversation: its trace entries keyed by EVA turn id, as EVA's processor builds it."""
    metadata = dict(conversation.metadata or {})
    if extra:
        # The record's own fields win over its entry in EVA's dataset file, which wins over the sweep's.
        shared = {k: v for k, v in extra.items() if k != BY_RECORD}
        own = (extra.get(BY_RECORD) or {}).get(str(conversation.external_id)) or {}
        metadata = {**shared, **own, **metadata}
    entries = []
    for turn, turn_id in zip(turns, _eva_turn_ids(conversation, turns), strict=True):
        kind = _EVA_KINDS.get(turn.role)
        if kind is None:
            continue
        meta = turn.metadata or {}
        if kind in ("tool_call", "tool_response"):
            # Stored as jsonb on PostgreSQL, the event lost its key order: EVA formats it in its own order.
            event = reorder(meta.get("event") or {}, meta.get(EVENT_SHAPE_KEY))
            if kind == "tool_call":
                payload = event.get("parameters", event.get("params", {}))
            else:
                payload = event.get("tool_response", event.get("response", {}))
            entries.append(
                eva.EvaEntry(
                    turn_id=turn_id,
                    kind=kind,
                    tool_name=str(event.get("tool_name") or meta.get("tool_name") or ""),
                    payload=payload,
                    source_id=turn.pk,
                )
            )
            continue
        text = turn.text or ""
        intended = turn.intended_text or ""
        if "trace_content" in meta:
            content = str(meta["trace_content"])
        elif meta.get("trace_type") == "intended":
            content = intended or text
        elif meta.get("trace_type") == "transcribed":
            content = text or intended
        else:
            # EVA's trace shows what the assistant meant to say and what the user was heard saying.
            content = (intended or text) if kind == "assistant" else (text or intended)
        entries.append(
            eva.EvaEntry(
                turn_id=turn_id,
                kind=kind,
                content=content,
                intended=intended or (text if kind == "assistant" else ""),
                transcribed=text,
                source_id=turn.pk,
                end_ms=turn.audio_end_ms,
            )
        )
    context = metadata.get("context") if isinstance(metadata.get("context"), dict) else {}
    pipeline = str(metadata.get("pipeline_type") or context.get("pipeline_type") or "").lower()
    audio_native = bool(context.get("is_audio_native")) or pipeline in ("s2s", "audio_llm")
    return eva.EvaRecord(
        record_id=str(conversation.external_id),
        entries=tuple(entries),
        language_display_name=language_display_name(conversation.language or "en"),
        metadata=metadata,
        audio_native=audio_native,
        s2s=pipeline == "s2s",
    )


def eva_prompt_variables(spec: JudgeSpec, record: eva.EvaRecord) -> tuple[dict[str, Any], list[str]]:
    """(variables, missing) for an EVA judge's templates over one record; shared variables come from the spec."""
    names = [
        name
        for template in (spec.system_template, spec.user_template)
        for name in template_variables(template)
        if name not in spec.shared_variables and name != "language_guidance"
    ]
    return eva_variables.build_variables(spec.eva_profile or spec.slug, list(dict.fromkeys(names)), record)


def eva_prompt_values(spec: JudgeSpec, record: eva.EvaRecord) -> dict[str, Any]:
    """An EVA judge's variables over one record; MissingVariable names the first one it lacks."""
    values, missing = eva_prompt_variables(spec, record)
    if missing:
        raise MissingVariable(missing[0], judge=spec.key, template="user", available=tuple(sorted(values)))
    return values
