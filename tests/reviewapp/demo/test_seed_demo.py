from collections import Counter
from io import StringIO

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db.models import F, Sum

from reviewapp.demo.loader import DEMO_DATASET, DEMO_PASSWORD, demo_seed
from reviewapp.judging.services.judges import is_placeholder
from reviewapp.models import (
    Category,
    Conversation,
    Dataset,
    DatasetCount,
    ExportEpoch,
    GoldLabel,
    JudgeVersion,
    QueueCount,
    ReviewItem,
    Role,
    Sweep,
    Turn,
    Verdict,
)
from tests.reviewapp.corpus.counts_support import assert_kept

pytestmark = pytest.mark.django_db

LANGUAGES = {"en", "fr", "fr-CA", "es", "de", "it", "hi", "ja", "ko"}


def counts() -> dict[str, int]:
    return {
        "datasets": Dataset.objects.count(),
        "conversations": Conversation.objects.count(),
        "turns": Turn.objects.count(),
        "gold": GoldLabel.objects.count(),
        "verdicts": Verdict.objects.count(),
        "categories": Category.objects.count(),
        "versions": JudgeVersion.objects.count(),
        "sweeps": Sweep.objects.count(),
        "users": get_user_model().objects.count(),
    }


# What seed_demo gives a fresh database, per model. Before the demo became files under demo/, it seeded
# the same rows except: no adjudications, comments or adjudicated gold (its 9 closed version-moved items
# were written closed; now the lead decides them through the adjudication service), 32 audit events
# (now also the categories, the dataset's description, reviews and decisions are audited), and 272 review items (the same reasons,
# but the QA draw is seeded by judge ids, which load_judges now assigns in file order).
SEEDED = {
    "Adjudication": 9,
    "AuditEvent": 97,
    "Category": 10,
    "Comment": 3,
    "Conversation": 54,
    "Dataset": 1,
    "GoldLabel": 702,
    "Judge": 4,
    "JudgeVersion": 5,
    "Profile": 4,
    "Review": 12,
    "ReviewItem": 268,
    "Signature": 32,
    "SignatureVersion": 32,
    "Sweep": 1,
    "Turn": 529,
    "Verdict": 1119,
}
REASONS = {"gold_disagrees": 146, "qa_sample": 110, "uncertain": 39, "unresolved": 39, "version_moved": 15}
STATUSES = {"awaiting_adjudication": 3, "closed": 9, "open": 256}


def model_counts() -> dict[str, int]:
    # QueueCount and DatasetCount are derived (the database keeps them from the rows): they are checked
    # against those instead. ExportEpoch is the one row its migration writes, not seeded data.
    counted = {
        m.__name__: m.objects.count()
        for m in apps.get_app_config("reviewapp").get_models()
        if m not in (QueueCount, DatasetCount, ExportEpoch)
    }
    return {name: n for name, n in counted.items() if n}


def queue_counts() -> tuple[Counter, Counter]:
    items = list(ReviewItem.objects.values_list("reasons", "status"))
    return Counter(r for reasons, _ in items for r in reasons), Counter(status for _, status in items)


# Fresh sequences, as on a new database: the QA draw is seeded by the dataset's and judges' ids.
@pytest.mark.django_db(reset_sequences=True)
def test_seed_demo_counts_per_model_and_queue_reason_and_twice_changes_nothing(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    demo_seed()
    assert model_counts() == SEEDED
    assert QueueCount.objects.aggregate(n=Sum("n"))["n"] == SEEDED["ReviewItem"]
    demo = Dataset.objects.get(name=DEMO_DATASET).pk
    assert sum(n for (dataset, _, column), n in assert_kept().items() if (dataset, column) == (demo, "turns")) == 529
    assert get_user_model().objects.count() == 4
    reasons, statuses = queue_counts()
    assert reasons == REASONS and statuses == STATUSES
    items = dict(ReviewItem.objects.values_list("pk", "updated_at"))
    demo_seed()
    assert model_counts() == SEEDED
    assert queue_counts() == (reasons, statuses)
    assert_kept()  # the reset deleted the demo and wrote it again
    assert dict(ReviewItem.objects.values_list("pk", "updated_at")) == items


def test_seed_demo_is_idempotent_and_keeps_turn_ids():
    demo_seed()
    first, turn_ids = counts(), set(Turn.objects.values_list("pk", flat=True))
    demo_seed()
    assert counts() == first
    assert set(Turn.objects.values_list("pk", flat=True)) == turn_ids
    demo_seed(reset=True)
    assert counts() == first


def test_seed_demo_covers_every_language_with_realistic_conversations():
    summary = demo_seed()
    dataset = Dataset.objects.get(name=DEMO_DATASET)
    assert set(summary.languages) == LANGUAGES
    for language in LANGUAGES:
        conversations = dataset.conversations.filter(language=language)
        assert 6 <= conversations.count() <= 10, language
        for conversation in conversations:
            assert 6 <= conversation.turns.count() <= 13, conversation.external_id
    assert summary.conversations == dataset.conversations.count()
    assert dataset.kind == Dataset.Kind.DEMO and "glosses, wrong-language phrases" in dataset.description
    # TTS deviations are recorded as intended vs said on agent turns, in most languages.
    deviating = Turn.objects.filter(role="agent").exclude(intended_text="").exclude(intended_text=F("text"))
    assert {t.conversation.language for t in deviating.select_related("conversation")} == LANGUAGES
    assert Turn.objects.filter(text__contains="<script>").exists()


def test_seed_demo_labels_verdicts_and_taxonomy():
    demo_seed()
    assert set(Category.objects.values_list("slug", flat=True)) >= {
        "gloss",
        "wrong-language-phrase",
        "spelled-code-letter-names",
        "politeness-formula",
        "number-reading",
        "acronym-expansion",
        "entity-error",
        "truncation",
        "filler",
        "verbosity",
    }
    versions = {str(v) for v in JudgeVersion.objects.select_related("judge")}
    assert {"conciseness@demo-v1", "speakability@demo-v1", "tts_fidelity@demo-v1"} <= versions
    # The demo's versions are the judge specs in demo/judges, loaded by load_judges: demo-v2 is demo-v1
    # with the gloss rule added to its prompt.
    specs = {str(v): v for v in JudgeVersion.objects.select_related("judge")}
    assert not any(is_placeholder(v) for v in specs.values())
    before, after = specs["speakability@demo-v1"].spec, specs["speakability@demo-v2"].spec
    assert "- gloss:" in after["user_template"] and "- gloss:" not in before["user_template"]
    assert set(after["failure_modes"]) - set(before["failure_modes"]) == {"gloss"}
    sweep = Sweep.objects.get(dataset__name=DEMO_DATASET)
    assert sweep.kind == Sweep.Kind.IMPORT
    # The imported gold, and the lead's decisions on the version-moved items the reviewers agreed on.
    assert Counter(GoldLabel.objects.values_list("source", flat=True)) == {
        GoldLabel.Source.IMPORTED: 693,
        GoldLabel.Source.ADJUDICATED: 9,
    }
    assert set(Verdict.objects.values_list("tier", flat=True)) == {Verdict.Tier.IMPORTED}
    assert GoldLabel.objects.filter(excluded=True).exists()
    assert Verdict.objects.filter(status=Verdict.Status.UNRESOLVED).exists()
    # Some verdicts agree with the gold label and some do not.
    agree = disagree = 0
    for verdict in Verdict.objects.filter(status=Verdict.Status.RESOLVED, turn__isnull=False):
        gold = GoldLabel.objects.get(turn=verdict.turn, judge=verdict.judge_version.judge, source="imported")
        same = gold.rating == verdict.rating if gold.passed is None else gold.passed == verdict.passed
        agree, disagree = agree + same, disagree + (not same)
    assert agree > disagree > 0
    languages_by_mode: dict[str, set[str]] = {}
    imported = GoldLabel.objects.filter(source=GoldLabel.Source.IMPORTED)
    for modes, language in imported.values_list("failure_modes", "conversation__language"):
        for mode in modes:
            languages_by_mode.setdefault(mode, set()).add(language)
    assert languages_by_mode["gloss"] >= {"fr", "fr-CA", "de", "es", "it", "hi", "ja", "ko"}
    assert languages_by_mode["number-reading"] >= {"fr", "de", "es", "hi", "ja", "ko"}
    assert languages_by_mode["spelled-code-letter-names"] >= {"fr", "fr-CA", "de", "es", "it", "ja"}
    assert languages_by_mode["politeness-formula"] >= {"fr", "es", "it", "de", "hi", "ja", "ko"}


def test_seed_demo_accounts():
    demo_seed()
    users = {u.username: u for u in get_user_model().objects.select_related("profile")}
    assert users["reviewer-fr"].profile.languages == ["fr", "de"]
    assert users["reviewer-asia"].profile.languages == ["ja", "ko", "hi"]
    assert users["lead"].profile.role == Role.LEAD
    assert users["admin"].is_staff and users["admin"].is_superuser
    assert all(users[name].check_password(DEMO_PASSWORD) for name in ("reviewer-fr", "reviewer-asia", "lead", "admin"))


def test_command_prints_accounts_and_refuses_without_debug_unless_forced(settings):
    settings.DEBUG = False
    with pytest.raises(CommandError, match="published password"):
        call_command("seed_demo")
    out = StringIO()
    call_command("seed_demo", "--force", stdout=out)
    text = out.getvalue()
    assert "demo only" in text and DEMO_PASSWORD in text and "reviewer-asia" in text
    assert "Signatures: 32 created, 0 kept" in text and "refused" not in text
    settings.DEBUG = True
    out = StringIO()
    call_command("seed_demo", "--reset", stdout=out)
    assert Dataset.objects.filter(name=DEMO_DATASET).count() == 1
    # A reset removes the demo turns the signatures had as evidence: each is made again with new evidence.
    assert "Signatures: 32 created, 0 kept" in out.getvalue()


def test_reviewer_fr_sees_only_french_and_german_demo_conversations(client):
    demo_seed()
    client.login(username="reviewer-fr", password=DEMO_PASSWORD)
    response = client.get("/datasets/")
    (row,) = response.context["datasets"]
    assert row.languages == ["de", "fr", "fr-CA"]
    ja = Conversation.objects.filter(language="ja").first()
    assert client.get(f"/conversations/{ja.pk}/").status_code == 403
