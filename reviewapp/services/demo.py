"""Demo data: a multilingual voice-agent dataset with gold labels, imported verdicts and demo accounts.

`demo_seed` is idempotent: running it again updates the same rows (turn ids are kept, so comments and
reviews made on demo turns survive) and leaves the counts unchanged. `reset=True` deletes the demo
dataset and the demo judge versions first.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.db import transaction

from ..models import (
    Category,
    Conversation,
    Dataset,
    GoldLabel,
    Judge,
    JudgeVersion,
    Profile,
    Role,
    Sweep,
    Turn,
    Verdict,
)
from . import demo_content as content
from .demo_audio import demo_audio_write
from .demo_signatures import demo_signatures_seed
from .demo_versions import demo_versions_seed
from .queue_items import items_from_imports

DEMO_DATASET = "demo-voice-agents"
DEMO_VERSION = "demo-v1"
# Demo-only accounts share one well-known password; the command refuses to run outside DEBUG unless forced.
DEMO_PASSWORD = "tribunal-demo"  # noqa: S105

DEMO_USERS: list[tuple[str, str, list[str]]] = [
    ("reviewer-fr", Role.REVIEWER, ["fr", "de"]),
    ("reviewer-asia", Role.REVIEWER, ["ja", "ko", "hi"]),
    ("lead", Role.LEAD, []),
    ("admin", Role.ADMIN, []),
]

CATEGORIES: list[tuple[str, str, str]] = [
    (content.GLOSS, "Gloss", "A term followed by its translation in parentheses, read aloud as is."),
    (content.WRONG_LANGUAGE, "Wrong-language phrase", "A phrase in another language inside a turn."),
    (
        content.LETTER_NAMES,
        "Spelled-code letter names",
        "A spelled code read with letter names from another language or the NATO alphabet.",
    ),
    (content.POLITENESS, "Politeness formula", "Service formulas that add words but no information."),
    (content.NUMBER, "Number reading", "A number, time, amount or counter read the wrong way for the language."),
    (content.ACRONYM, "Acronym expansion", "An acronym expanded or read as a word when it should be spelled."),
    (content.ENTITY, "Entity error", "A name, code or place changed between what was meant and what was said."),
    (content.TRUNCATION, "Truncation", "Speech cut off before the end of the turn."),
    (content.FILLER, "Filler", "Hesitation words and verbal tics in generated speech."),
    (content.VERBOSITY, "Verbosity", "Longer than a caller can follow by ear."),
]

JUDGES: dict[str, dict] = {
    "conciseness": {
        "name": "Conciseness",
        "level": Judge.Level.TURN,
        "scale": Judge.Scale.ORDINAL,
        "scale_min": 1,
        "scale_max": 3,
        "description": "Is the agent turn short enough to follow by ear? 3 concise, 2 somewhat long, 1 too long.",
    },
    "speakability": {
        "name": "Speakability",
        "level": Judge.Level.TURN,
        "scale": Judge.Scale.BINARY,
        "scale_min": 0,
        "scale_max": 1,
        "description": "Can the text be spoken as written (no glosses, no stray languages, no markup)?",
    },
    "tts_fidelity": {
        "name": "TTS fidelity",
        "level": Judge.Level.TURN,
        "scale": Judge.Scale.BINARY,
        "scale_min": 0,
        "scale_max": 1,
        "description": "Did the speech say what the agent meant, with codes, numbers and names read correctly?",
    },
    "task_completion": {
        "name": "Task completion",
        "level": Judge.Level.CONVERSATION,
        "scale": Judge.Scale.BINARY,
        "scale_min": 0,
        "scale_max": 1,
        "description": "Did the caller leave with the task done and the right details?",
    },
}
TURN_JUDGE_FIELD = {"conciseness": "concise", "speakability": "speak", "tts_fidelity": "tts"}

WHY_FAILED = {
    content.GLOSS: "Glosses a term with its English translation in parentheses; a caller hears both.",
    content.WRONG_LANGUAGE: "Switches to another language mid-turn.",
    content.LETTER_NAMES: "Reads the spelled code with letter names from another language.",
    content.POLITENESS: "Stacks service formulas at the end of the turn.",
    content.NUMBER: "Reads a number, time or counter the wrong way for this language.",
    content.ACRONYM: "Expands or mispronounces an acronym instead of saying it as callers do.",
    content.ENTITY: "A name or code in the speech differs from the one the agent meant.",
    content.TRUNCATION: "The speech stops before the end of the sentence.",
    content.FILLER: "Hesitation fillers make the turn harder to follow.",
    content.VERBOSITY: "Too long to follow by ear; half of it could go.",
}
WHY_PASSED = {
    "conciseness": "Short and to the point for a phone call.",
    "speakability": "Reads naturally aloud in the conversation's language.",
    "tts_fidelity": "The speech matches what the agent meant.",
    "task_completion": "The caller's request was handled and the details confirmed.",
}
FALSE_ALARM = {
    "conciseness": ([content.VERBOSITY], "Slightly long for a voice turn; the last sentence could be cut."),
    "speakability": ([content.WRONG_LANGUAGE], "A brand or product name may be read as a foreign-language phrase."),
    "tts_fidelity": ([content.ENTITY], "A name in the speech may not match the intended text."),
    "task_completion": ([], "The caller did not explicitly confirm the outcome."),
}


@dataclass
class DemoSummary:
    dataset_id: int
    conversations: int
    turns: int
    gold_labels: int
    verdicts: int
    categories: int
    languages: list[str]
    users: list[tuple[str, str, list[str]]] = field(default_factory=list)
    password: str = DEMO_PASSWORD


def _stable(*parts: object) -> int:
    """A deterministic number per item, so the same demo comes out on every run and machine."""
    return zlib.crc32(":".join(str(p) for p in parts).encode())


def _spec_hash(slug: str, spec: dict) -> str:
    canonical = json.dumps({"judge": slug, "version": DEMO_VERSION, "spec": spec}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _gold_values(judge: str, modes: list[str]) -> dict:
    if judge == "conciseness":
        return {"rating": float(3 - min(2, len(modes))), "passed": None}
    return {"rating": None, "passed": not modes}


def _verdict_values(judge: str, gold: dict, modes: list[str], seed: int) -> dict:
    """An imported judge answer: mostly right, sometimes wrong, now and then unresolved."""
    roll = seed % 100
    if roll < 6:
        return {
            "status": Verdict.Status.UNRESOLVED,
            "rating": None,
            "passed": None,
            "flags": [],
            "explanation": "",
            "raw_text": "I am not sure: the transcript alone does not settle it. Maybe a 2?",
        }
    wrong = roll < 28
    if judge == "conciseness":
        rating = gold["rating"]
        if wrong:
            rating = 2.0 if rating == 3 else 3.0
        flags = modes if rating < 3 and not (wrong and gold["rating"] == 3) else []
        if wrong and gold["rating"] == 3:
            flags, explanation = FALSE_ALARM[judge]
        elif rating < 3:
            explanation = " ".join(WHY_FAILED[m] for m in modes)
        else:
            explanation = WHY_PASSED[judge]
        return {
            "status": Verdict.Status.RESOLVED,
            "rating": rating,
            "passed": None,
            "flags": list(flags),
            "explanation": explanation,
            "raw_text": "",
        }
    passed = gold["passed"] != wrong
    if judge == "speakability" and content.GLOSS in modes:
        # The blind spot demo-v2 fixes: demo-v1's prompt has no rule for glosses, so it lets them through.
        passed = True
    if passed:
        flags, explanation = [], WHY_PASSED[judge]
    elif gold["passed"]:
        flags, explanation = FALSE_ALARM[judge]
    else:
        flags, explanation = modes, " ".join(WHY_FAILED[m] for m in modes)
    return {
        "status": Verdict.Status.RESOLVED,
        "rating": None,
        "passed": passed,
        "flags": list(flags),
        "explanation": explanation,
        "raw_text": "",
    }


def _seed_taxonomy_and_judges() -> dict[str, JudgeVersion]:
    for slug, name, description in CATEGORIES:
        Category.objects.update_or_create(
            slug=slug, defaults={"name": name, "description": description, "active": True}
        )
    versions = {}
    for slug, attributes in JUDGES.items():
        judge, _ = Judge.objects.get_or_create(slug=slug, defaults=attributes)
        spec = {"imported": True}
        versions[slug], _ = JudgeVersion.objects.get_or_create(
            judge=judge,
            version=DEMO_VERSION,
            defaults={"spec": spec, "spec_hash": _spec_hash(slug, spec), "source": "seed_demo (imported verdicts)"},
        )
    return versions


def _seed_users() -> list[tuple[str, str, list[str]]]:
    user_model = get_user_model()
    # One hash for the shared demo password: PBKDF2 is deliberately slow, and these accounts share it anyway.
    password_hash = make_password(DEMO_PASSWORD)
    for username, role, languages in DEMO_USERS:
        user, _ = user_model.objects.get_or_create(username=username)
        user.is_staff = user.is_superuser = role == Role.ADMIN
        user.is_active = True
        user.password = password_hash
        user.save()
        Profile.objects.update_or_create(user=user, defaults={"role": role, "languages": languages})
    return DEMO_USERS


def _timed(script: list[dict]) -> list[dict]:
    """Give speech turns plausible audio positions: about 65 ms a character, 400 ms between turns."""
    clock = 0
    timed = []
    for line in script:
        line = dict(line)
        if line["role"] in ("user", "agent"):
            spoken = line.get("said") or line["text"]
            line["start"], clock = clock, clock + max(1200, 65 * len(spoken))
            line["end"] = clock
            clock += 400
        timed.append(line)
    return timed


@transaction.atomic
def demo_seed(*, reset: bool = False) -> DemoSummary:
    if reset:
        Dataset.objects.filter(name=DEMO_DATASET).delete()
        JudgeVersion.objects.filter(version=DEMO_VERSION, judge__slug__in=list(JUDGES)).delete()

    versions = _seed_taxonomy_and_judges()
    dataset, _ = Dataset.objects.update_or_create(
        name=DEMO_DATASET,
        defaults={
            "kind": Dataset.Kind.DEMO,
            "source": "python manage.py seed_demo",
            "description": "Scripted voice-agent calls in nine languages (airline, bank card, pharmacy, hotel, "
            "parcel, internet) with the failures native reviewers look for: glosses, wrong-language phrases, "
            "spelled codes, service formulas, number readings.",
            "metadata": {"demo": True},
        },
    )
    sweep, _ = Sweep.objects.get_or_create(
        kind=Sweep.Kind.IMPORT,
        dataset=dataset,
        name="demo imported verdicts",
        defaults={"status": Sweep.Status.DONE, "code_version": DEMO_VERSION},
    )
    sweep.judge_versions.set(versions.values())

    scripts: dict[int, tuple[Conversation, list[dict]]] = {}
    for language, conversations in content.CONVERSATIONS.items():
        for number, (slug, scenario, agent, script) in enumerate(conversations, start=1):
            conversation, _ = Conversation.objects.update_or_create(
                dataset=dataset,
                external_id=f"{language}-{number:02d}-{slug}",
                defaults={
                    "language": language,
                    "metadata": {
                        "scenario": scenario,
                        "agent": agent,
                        "channel": "phone",
                        "tts_voice": f"{language}-demo",
                    },
                },
            )
            scripts[conversation.pk] = (conversation, _timed(script))

    Turn.objects.bulk_create(
        [
            Turn(
                conversation=conversation,
                position=position,
                role=line["role"],
                text=line.get("said") or line["text"],
                intended_text=line["text"] if line["role"] == "agent" else "",
                audio_start_ms=line.get("start"),
                audio_end_ms=line.get("end"),
                metadata={"tool": line["tool"]} if "tool" in line else {},
            )
            for conversation, script in scripts.values()
            for position, line in enumerate(script)
        ],
        update_conflicts=True,
        unique_fields=["conversation", "position"],
        update_fields=["role", "text", "intended_text", "audio_start_ms", "audio_end_ms", "metadata"],
    )
    for conversation, script in scripts.values():
        conversation.turns.filter(position__gte=len(script)).delete()
    turn_ids = {
        (conversation_id, position): pk
        for pk, conversation_id, position in Turn.objects.filter(conversation__dataset=dataset).values_list(
            "pk", "conversation_id", "position"
        )
    }

    GoldLabel.objects.filter(conversation__dataset=dataset, source=GoldLabel.Source.IMPORTED).delete()
    Verdict.objects.filter(sweep=sweep).delete()
    gold_rows, verdict_rows = [], []
    for conversation, script in scripts.values():
        for position, line in enumerate(script):
            if line["role"] != "agent":
                continue
            for judge, attribute in TURN_JUDGE_FIELD.items():
                modes = list(line[attribute])
                seed = _stable(conversation.external_id, position, judge)
                gold = _gold_values(judge, modes)
                common = {"conversation": conversation, "turn_id": turn_ids[(conversation.pk, position)]}
                gold_rows.append(
                    GoldLabel(
                        judge=versions[judge].judge,
                        source=GoldLabel.Source.IMPORTED,
                        failure_modes=modes,
                        excluded=seed % 29 == 0,
                        metadata={"annotator": "demo"} if seed % 29 else {"excluded_because": "annotators disagreed"},
                        **gold,
                        **common,
                    )
                )
                verdict_rows.append(
                    Verdict(
                        sweep=sweep,
                        judge_version=versions[judge],
                        tier=Verdict.Tier.IMPORTED,
                        **_verdict_values(judge, gold, modes, seed >> 8),
                        **common,
                    )
                )
        completed = not any(content.ENTITY in line.get("tts", ()) for line in script)
        seed = _stable(conversation.external_id, "task_completion")
        gold = {"rating": None, "passed": completed}
        gold_rows.append(
            GoldLabel(
                judge=versions["task_completion"].judge,
                conversation=conversation,
                source=GoldLabel.Source.IMPORTED,
                failure_modes=[] if completed else [content.ENTITY],
                **gold,
            )
        )
        verdict_rows.append(
            Verdict(
                sweep=sweep,
                judge_version=versions["task_completion"],
                conversation=conversation,
                tier=Verdict.Tier.IMPORTED,
                **_verdict_values("task_completion", gold, gold and ([] if completed else [content.ENTITY]), seed >> 8),
            )
        )
    GoldLabel.objects.bulk_create(gold_rows)
    Verdict.objects.bulk_create(verdict_rows)

    sweep.total_targets = len(verdict_rows)
    sweep.verdicts_written = len(verdict_rows)
    sweep.unresolved = sum(v.status == Verdict.Status.UNRESOLVED for v in verdict_rows)
    sweep.status = Sweep.Status.DONE
    sweep.save(update_fields=["total_targets", "verdicts_written", "unresolved", "status"])
    demo_versions_seed(dataset=dataset, sweep=sweep)
    items_from_imports(dataset=dataset)
    demo_audio_write(dataset=dataset)
    demo_signatures_seed(dataset=dataset)

    return DemoSummary(
        dataset_id=dataset.pk,
        conversations=len(scripts),
        turns=len(turn_ids),
        gold_labels=len(gold_rows),
        verdicts=len(verdict_rows),
        categories=len(CATEGORIES),
        languages=list(content.CONVERSATIONS),
        users=_seed_users(),
    )
