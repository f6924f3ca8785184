"""How tests/llm_server.py answers a judge's prompt: the prompt's key and text, audio parts, a good rating
for a turn, EVA's per-turn and nested answers, and a well-formed answer for any judge Tribunal ships."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from typing import Any

# Audio formats an audio-capable chat model takes in an `input_audio` content part.
AUDIO_FORMATS = ("wav", "mp3")


def prompt_key(body: dict[str, Any]) -> str:
    """A stable hash of the messages, so scripted "first time" behaviours are per prompt."""
    messages = body.get("messages") or []
    canonical = json.dumps(messages, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def message_text(body: dict[str, Any], *, role: str | None = None) -> str:
    """The text of the request's messages (only the `role` ones when given), string or content parts."""
    parts = []
    for message in body.get("messages") or []:
        if role is not None and message.get("role") != role:
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(chunk.get("text", "")) for chunk in content if isinstance(chunk, dict))
    return "\n".join(parts)


def audio_parts(body: dict[str, Any]) -> list[tuple[str, bytes]] | str:
    """(format, decoded bytes) of every `input_audio` part of the messages, or the reason the request
    is malformed (a real endpoint answers 400 to those): no data, not base64, an unknown format."""
    found: list[tuple[str, bytes]] = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "input_audio":
                continue
            if message.get("role") != "user":
                return "input_audio is only accepted in user messages"
            audio = part.get("input_audio")
            if not isinstance(audio, dict) or not isinstance(audio.get("data"), str) or not audio["data"]:
                return "input_audio.data must be a non-empty base64 string"
            if audio.get("format") not in AUDIO_FORMATS:
                return f"input_audio.format must be one of {', '.join(AUDIO_FORMATS)}"
            try:
                data = base64.b64decode(audio["data"], validate=True)
            except (binascii.Error, ValueError):
                return "input_audio.data is not valid base64"
            found.append((audio["format"], data))
    return found


def count_tokens(text: str) -> int:
    # Whitespace words are a fair stand-in for tokens: deterministic and proportional to length.
    return len(text.split())


# The answer format a judge prompt asks for, e.g. `"rating": 0 | 1` or `"language_match": 0-100`.
RATING_CHOICES = re.compile(r'"rating":\s*(\d+(?:\s*\|\s*\d+)+)')
SUB_SCORE = re.compile(r'"(\w+)":\s*0-100')
CRITERION = re.compile(r'"(\w+)":\s*\{+(?:"score"|\.\.\.)')


def good_rating(body: dict[str, Any]) -> int:
    """The rating a "good" answer gives: one of the values the prompt offers (`"rating": 0 | 1`),
    1..3 when it names none, picked from a hash of the prompt so the same prompt gets the same answer."""
    found = RATING_CHOICES.search(message_text(body))
    choices = [int(v) for v in found.group(1).split("|")] if found else [1, 2, 3]
    return choices[int(prompt_key(body)[:8], 16) % len(choices)]


# --- EVA's judges (configs/prompts/judge.yaml): one entry per turn, or nested dimensions -------------

EVA_RATING = re.compile(r'"rating":\s*<([^>]*)>')
EVA_BLOCK = re.compile(r"^Turn (\d+):\n((?:  .*\n?)*)", re.MULTILINE)
EVA_SPEAKABILITY = re.compile(r"^\[Turn (\d+)\]$", re.MULTILINE)
EVA_LINE = re.compile(r"^Turn (\d+): (.*)$", re.MULTILINE)
EVA_REDACTED = re.compile(r"^Turn (\d+) - \[Assistant speaks\]$", re.MULTILINE)
EVA_PAIR = re.compile(r'^Turn (\d+):\nExpected: "(.*)"\nTranscribed: "(.*)"$', re.MULTILINE)
EVA_DIMENSION = re.compile(r'"(\w+)":\s*\{\s*"(evidence|analysis)"')


def is_eva_prompt(text: str) -> bool:
    rated = bool(EVA_RATING.search(text))
    per_turn = '"turn_id"' in text and (rated or '"entities"' in text)
    return per_turn or (rated and ('"dimensions"' in text or "corruption_analysis" in text))


def _eva_choices(text: str) -> list[int]:
    found = EVA_RATING.search(text)
    digits = sorted({int(d) for d in re.findall(r"\b(\d)\b", found.group(1))}) if found else []
    return digits or [1, 2, 3]


def _pick(choices: list[int], *keys: str) -> int:
    digest = hashlib.sha256("\x1f".join(keys).encode("utf-8")).hexdigest()
    return choices[int(digest[:8], 16) % len(choices)]


def eva_turn_ids(text: str) -> tuple[list[int], set[int]]:
    """(every turn id the prompt shows, the ids with content the judge rates)."""
    pairs = EVA_PAIR.findall(text)
    if pairs:
        ids = [int(t) for t, _, _ in pairs]
        return ids, set(ids)
    blocks = EVA_BLOCK.findall(text)
    if blocks:
        ids = [int(t) for t, _ in blocks]
        return ids, {int(t) for t, body in blocks if "  assistant:" in body}
    for pattern in (EVA_SPEAKABILITY, EVA_REDACTED, EVA_LINE):
        found = [int(m.group(1)) for m in pattern.finditer(text)]
        if found:
            ids = list(dict.fromkeys(found))
            return ids, set(ids)
    return [], set()


def eva_answer(body: dict[str, Any], *, rating: int | None = None) -> str | None:
    """The answer an EVA judge gives to an EVA prompt, or None when the prompt is not one of EVA's.

    Per-turn prompts get one entry per turn id (null for turns without rated content); the speech
    judges' entries are wrapped in {"turns": [...]}; faithfulness-style prompts get their nested
    dimensions. Ratings are picked from the scale the prompt states, by a hash of prompt and turn.
    `rating` forces every rating (e.g. 42 for an out-of-range answer).
    """
    text = message_text(body)
    if not is_eva_prompt(text):
        return None
    choices = _eva_choices(text)
    key = prompt_key(body)
    if '"turn_id"' in text:
        ids, rated = eva_turn_ids(text)
        pairs = {int(t): (said, heard) for t, said, heard in EVA_PAIR.findall(text)}
        entries: list[dict[str, Any]] = []
        for turn_id in ids:
            value = (rating if rating is not None else _pick(choices, key, str(turn_id))) if turn_id in rated else None
            entry: dict[str, Any] = {"turn_id": turn_id}
            if turn_id in pairs:
                said, heard = pairs[turn_id]
                entry["entities"] = [
                    {
                        "type": "utterance",
                        "value": said,
                        "transcribed_value": heard,
                        "analysis": "compared as a whole",
                        "correct": said.strip().lower() == heard.strip().lower(),
                        "skipped": False,
                    }
                ]
                entry["summary"] = "One entity checked."
            else:
                entry["explanation"] = "" if value is None else f"Turn {turn_id} reads as a {value}."
                if '"failure_modes"' in text:
                    entry["failure_modes"] = []
                entry["rating"] = value
            entries.append(entry)
        return json.dumps({"turns": entries} if '"turns": [' in text else entries)
    overall = rating if rating is not None else _pick(choices, key)
    field_name = "corruption_analysis" if "corruption_analysis" in text else "dimensions"
    names = list(dict.fromkeys(name for name, _ in EVA_DIMENSION.findall(text)))
    dims: dict[str, Any] = {}
    for name in names:
        if field_name == "dimensions":
            dims[name] = {"evidence": f"{name} checked.", "flagged": overall < max(choices), "rating": overall}
        else:
            dims[name] = {"analysis": f"{name} checked.", "detected": overall == 0}
    return json.dumps({field_name: dims, "rating": overall})


def good_answer(body: dict[str, Any]) -> str:
    """A well-formed answer in the shape the judge's prompt asks for: a rating, weighted sub-scores
    (`"name": 0-100`) or rubric criteria (`"name": {"score": 0 | 1 ...}`), deterministic per prompt;
    EVA's prompts get EVA's shapes (see eva_answer)."""
    eva = eva_answer(body)
    if eva is not None:
        return eva
    text = message_text(body)
    seed = int(prompt_key(body)[8:16], 16)
    answer: dict[str, Any] = {"failure_modes": [], "flags": []}
    if '"sub_scores"' in text and (names := SUB_SCORE.findall(text)):
        answer["sub_scores"] = {name: 60 + (seed >> i) % 41 for i, name in enumerate(dict.fromkeys(names))}
        answer["explanation"] = "Scored each sub-metric of this judge."
    elif '"criteria"' in text and (names := CRITERION.findall(text)):
        met = {name: bool((seed >> i) % 4) for i, name in enumerate(dict.fromkeys(names))}
        answer["criteria"] = {name: {"score": int(ok), "passed": ok} for name, ok in met.items()}
        answer["explanation"] = "Checked every rubric item."
    else:
        rating = good_rating(body)
        answer = {
            "rating": rating,
            "explanation": f"The turn reads as a {rating} on this judge's scale.",
            "failure_modes": [],
            "flags": [],
        }
    return json.dumps(answer)
