"""Every URL of the site, as every kind of visitor, full page and htmx fragment: nothing leaks.

The fixture plants unique strings: a blind French dataset whose turn has a verdict explanation, a gold
label and a peer's label and comment, and a Japanese conversation with its own transcript and verdict.
Each URL pattern is resolved with real ids (the French objects, then the Japanese ones) and requested
by anonymous, a French reviewer who has not labelled the item, one who has, a Japanese reviewer, a lead
and an admin. A reviewer who has not labelled a blind target must never see its verdicts, gold or the
peer's work; nobody sees a language they do not have. A URL pattern this test cannot fill in fails it,
so a new page is walked from the day it exists.
"""

from __future__ import annotations

import pytest
from django.db import transaction
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from reviewapp.models import Dataset, ExportSnapshot, ReviewItem, Role, Signature, Turn
from tests.factories import (
    HTMX,
    CommentFactory,
    ConversationFactory,
    DatasetFactory,
    GoldLabelFactory,
    ReviewFactory,
    ReviewItemFactory,
    SweepFactory,
    TurnFactory,
    VerdictFactory,
    store_judge,
)

pytestmark = pytest.mark.django_db

FR_TEXT = "FRTRANSCRIPT-a41c Votre vol part à neuf heures."
JA_TEXT = "JATRANSCRIPT-c0d9 お客様のフライトは九時です。"
EXPLANATION = "EXPLANATION-7f3a trop long pour l'oral"
JA_EXPLANATION = "JAEXPLANATION-e5b0"
GOLD = "GOLDLABEL-91c2"
PEER_COMMENT = "PEERCOMMENT-5d1e la porte se dit autrement"
PEER_NAME = "peer-ulrike-77"
JA_COMMENT = "JACOMMENT-3b88"

SECRETS_OF_FR_TARGET = (EXPLANATION, GOLD, PEER_COMMENT, PEER_NAME)
SECRETS_OF_JA = (JA_TEXT, JA_EXPLANATION, JA_COMMENT)
ALL_SECRETS = (FR_TEXT, *SECRETS_OF_FR_TARGET, *SECRETS_OF_JA)

# Lead-only pages of the improvement loop, the call archive and browser imports: ids no row has (a 403
# or 404 must leak nothing either).
MISSING_IDS = dict.fromkeys(("case_id", "proof_id", "call_id", "replay_id", "job_id"), 999_999)


def _agent_turn(dataset: Dataset, language: str, text: str, external_id: str) -> Turn:
    """A conversation: a user greeting, then the agent turn `text` (returned)."""
    conversation = ConversationFactory(dataset=dataset, external_id=external_id, language=language)
    TurnFactory(conversation=conversation, position=0, role=Turn.Role.USER, text="Bonjour / こんにちは")
    return TurnFactory(conversation=conversation, position=1, text=text)


@pytest.fixture
def world(make_user):
    version = store_judge("conciseness")  # the shipped spec, so lead pages that read it render
    judge = version.judge
    blind = DatasetFactory(name="blind-fr", kind=Dataset.Kind.REVIEW, blind_review=True, reviews_required=2)
    other = DatasetFactory(name="set-ja", kind=Dataset.Kind.REVIEW, blind_review=True)
    fr_turn = _agent_turn(blind, "fr", FR_TEXT, "fr-1")
    ja_turn = _agent_turn(other, "ja", JA_TEXT, "ja-1")
    sweep = SweepFactory(dataset=blind, language="fr")
    ja_sweep = SweepFactory(dataset=other, language="ja")
    for turn, why, on in ((fr_turn, EXPLANATION, sweep), (ja_turn, JA_EXPLANATION, ja_sweep)):
        VerdictFactory(sweep=on, judge_version=version, turn=turn, rating=2, explanation=why)
        GoldLabelFactory(judge=judge, turn=turn, rating=3, label=GOLD)
    fr_item = ReviewItemFactory(
        judge=judge,
        turn=fr_turn,
        reasons=[ReviewItem.Reason.QA_SAMPLE],
        reviews_required=3,
        status=ReviewItem.Status.IN_REVIEW,
    )
    ja_item = ReviewItemFactory(judge=judge, turn=ja_turn, reasons=["unresolved"])
    peer = make_user(PEER_NAME, languages=["fr"])
    labelled = make_user("fr-labelled", languages=["fr"])
    for who in (peer, labelled):
        ReviewFactory(item=fr_item, reviewer=who, rating=3, comment=PEER_COMMENT if who == peer else "ok")
    peer_comment = CommentFactory(turn=fr_turn, author=peer, body=PEER_COMMENT)
    ja_author = make_user("ja-author", languages=["ja"])
    ja_comment = CommentFactory(turn=ja_turn, author=ja_author, body=JA_COMMENT)
    lead = make_user("lead", role=Role.LEAD)
    signature = Signature.objects.create(judge=judge, language="ja", intent="greeting", pattern="JATRANSCRIPT")
    signature.evidence.set([ja_turn])
    snapshot = ExportSnapshot.objects.create(name="snap", version=1, judge=judge, format="jsonl", created_by=lead)
    users = {
        "anonymous": None,
        "fr-unlabelled": make_user("fr-fresh", languages=["fr"]),
        "fr-labelled": labelled,
        "ja-reviewer": make_user("ja-only", languages=["ja"]),
        "lead": lead,
        "admin": make_user("boss", role=Role.ADMIN),
    }
    users["admin"].is_staff = users["admin"].is_superuser = True
    users["admin"].save()
    both = {
        "snapshot_id": snapshot.pk,
        "signature_id": signature.pk,
        "judge_slug": judge.slug,
        "version_id": version.pk,
        **MISSING_IDS,
    }
    scenes = {
        name: {
            "conversation_id": turn.conversation_id,
            "turn_id": turn.pk,
            "item_id": item.pk,
            "dataset_id": dataset.pk,
            "comment_id": comment.pk,
            "user_id": comment.author_id,
            "sweep_id": on.pk,
            **both,
        }
        for name, turn, item, dataset, comment, on in (
            ("fr", fr_turn, fr_item, blind, peer_comment, sweep),
            ("ja", ja_turn, ja_item, other, ja_comment, ja_sweep),
        )
    }
    return users, scenes


def forbidden_for(role: str) -> tuple[str, ...]:
    if role == "anonymous":
        return ALL_SECRETS
    if role == "fr-unlabelled":
        return (*SECRETS_OF_FR_TARGET, *SECRETS_OF_JA)
    if role == "fr-labelled":
        return SECRETS_OF_JA
    if role == "ja-reviewer":
        return (FR_TEXT, *SECRETS_OF_FR_TARGET)
    return ()


def url_patterns(resolver=None, prefix: str = "") -> list[tuple[str, URLPattern]]:
    """(dotted name, pattern) for every view of the site outside Django's own admin."""
    resolver = resolver or get_resolver()
    found = []
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            if entry.app_name == "admin" or entry.namespace == "admin":
                continue
            found += url_patterns(entry, prefix + (f"{entry.namespace}:" if entry.namespace else ""))
        elif entry.name:
            found.append((prefix + entry.name, entry))
    return found


def url_for(name: str, pattern: URLPattern, scene: dict) -> str:
    params = list(pattern.pattern.converters)
    missing = [p for p in params if p not in scene]
    assert not missing, f"the walk cannot fill {missing} of URL {name!r}: add them to the fixture"
    return reverse(name, kwargs={p: scene[p] for p in params}) + f"?dataset={scene['dataset_id']}"


def body_of(response) -> str:
    if response.streaming:
        content = b"".join(response.streaming_content)
        response.close()
    else:
        content = response.content
    return content.decode("utf-8", "replace")


def walk(client, user, scenes) -> dict[tuple[str, str, str, str], str]:
    """Every URL in both scenes, GET and POST, full page and fragment: {(scene, name, method, mode): body}."""
    if user is not None:
        client.force_login(user)
    pages = {}
    for scene_name, scene in scenes.items():
        for name, pattern in url_patterns():
            if name in ("login", "logout"):
                continue
            url = url_for(name, pattern, scene)
            for mode, headers in (("page", {}), ("fragment", HTMX)):
                pages[(scene_name, name, "GET", mode)] = body_of(client.get(url, **headers))
                # A POST with nothing in it must not leak either (error pages re-render screens); it is
                # rolled back so every request sees the same world.
                with transaction.atomic():
                    pages[(scene_name, name, "POST", mode)] = body_of(client.post(url, {"next": "/"}, **headers))
                    transaction.set_rollback(True)
    client.logout()
    return pages


ROLES = ("anonymous", "fr-unlabelled", "fr-labelled", "ja-reviewer", "lead", "admin")


@pytest.mark.parametrize("role", ROLES)
def test_no_page_or_fragment_leaks_blind_work_or_other_languages(client, world, role):
    users, scenes = world
    pages = walk(client, users[role], scenes)
    leaks = [
        f"{scene} {method} {name} ({mode}) shows {secret!r}"
        for (scene, name, method, mode), body in pages.items()
        for secret in forbidden_for(role)
        if secret.split()[0] in body
    ]
    assert not leaks, "\n".join(leaks)

    # The walk reaches the pages that matter: the planted strings are there for whoever may see them.
    seen = " ".join(pages[("fr", name, "GET", "page")] for name in ("conversation_detail", "comment_list"))
    fragment = pages[("fr", "conversation_turn", "GET", "fragment")]
    if role in ("fr-unlabelled", "fr-labelled", "lead", "admin"):
        assert FR_TEXT.split()[0] in seen and FR_TEXT.split()[0] in fragment
    if role in ("fr-labelled", "lead", "admin"):
        for secret in (EXPLANATION, GOLD, PEER_COMMENT):
            assert secret.split()[0] in seen, f"{role} should see {secret!r} on the conversation or comments page"
        assert EXPLANATION.split()[0] in fragment
    if role == "fr-labelled":
        review = pages[("fr", "review_item", "GET", "page")]
        assert PEER_NAME in review and EXPLANATION.split()[0] in review
    if role == "ja-reviewer":
        assert JA_TEXT.split()[0] in pages[("ja", "conversation_detail", "GET", "page")]


def test_every_url_pattern_is_walked(world):
    _, scenes = world
    names = [name for name, _ in url_patterns()]
    for name, pattern in url_patterns():
        if name not in ("login", "logout"):
            assert url_for(name, pattern, scenes["fr"]).startswith("/")
    assert {"conversation_detail", "conversation_turn", "comment_list", "review_item", "review_verdicts"} <= set(names)
