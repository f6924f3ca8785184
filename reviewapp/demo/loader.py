"""The demo: the files in the top-level `demo/` folder, loaded through the paths users take.

    demo/accounts.yaml       the demo accounts, their roles and languages, and their shared password
    demo/dataset.yaml        the demo dataset's name, kind and description -> datasets.dataset_describe
    demo/categories.yaml     the failure taxonomy                      -> reviews.category_create
    demo/judges/*.yaml       judge specs, two speakability versions    -> manage.py load_judges (in name order)
    demo/conversations.jsonl conversations, gold labels and verdicts   -> imports.dataset_import (Tribunal JSONL)
    demo/queue.yaml          version-moved and QA items, reviews, lead decisions
                             -> triage.review_items_merge, reviews.review_submit, adjudication.adjudication_decide
    demo/signatures.yaml     tier-1 signatures                         -> signatures.signature_create

then queue_items.dataset_triage triages the imported verdicts, and every conversation gets a generated
audio file (demo_audio: tones at the turn timings, not content).

`demo_seed` is idempotent: every step skips what exists, so running it again adds nothing and keeps turn
ids (comments and reviews on demo turns survive). `reset=True` deletes the demo dataset and the demo judge
versions first.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path

import yaml
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.core.management import call_command
from django.db import transaction

from reviewapp.adjudication.services.adjudication import adjudication_decide
from reviewapp.corpus.services.datasets import dataset_describe
from reviewapp.corpus.services.imports import dataset_import
from reviewapp.demo.audio import demo_audio_write
from reviewapp.demo.signatures import DemoSignatureSummary, demo_signatures_seed
from reviewapp.models import (
    Adjudication,
    Category,
    Dataset,
    Judge,
    JudgeVersion,
    Profile,
    ReviewItem,
    Role,
    Turn,
    Verdict,
)
from reviewapp.review.services.comments import category_create, category_update
from reviewapp.review.services.reviews import review_submit
from reviewapp.triage.services.queue_items import dataset_triage
from reviewapp.triage.services.triage import review_items_merge

DEMO_DIR = Path(settings.BASE_DIR) / "demo"
DEMO_VERSIONS = ("demo-v1", "demo-v2")
VERSION_MOVED = ReviewItem.Reason.VERSION_MOVED
QA_SAMPLE = ReviewItem.Reason.QA_SAMPLE


def demo_file(name: str) -> Path:
    return DEMO_DIR / name


@functools.cache
def demo_yaml(name: str):
    with demo_file(name).open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


DEMO_DATASET: str = demo_yaml("dataset.yaml")["name"]
# Demo-only accounts share one well-known password; the command refuses to run outside DEBUG unless forced.
DEMO_PASSWORD: str = demo_yaml("accounts.yaml")["password"]


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
    signatures: DemoSignatureSummary | None = None


def demo_users() -> list[tuple[str, str, list[str]]]:
    return [(a["username"], a["role"], list(a["languages"])) for a in demo_yaml("accounts.yaml")["accounts"]]


def _seed_users() -> dict[str, object]:
    user_model = get_user_model()
    # One hash for the shared demo password: PBKDF2 is deliberately slow, and these accounts share it anyway.
    password_hash = make_password(DEMO_PASSWORD)
    users = {}
    for username, role, languages in demo_users():
        user, _ = user_model.objects.get_or_create(username=username)
        user.is_staff = user.is_superuser = role == Role.ADMIN
        user.is_active = True
        user.password = password_hash
        user.save()
        Profile.objects.update_or_create(user=user, defaults={"role": role, "languages": languages})
        users[username] = user
    return users


def _categories() -> dict[str, Category]:
    return {c.slug: c for c in Category.objects.all()}


def _seed_categories(*, actor) -> None:
    existing = _categories()
    for row in demo_yaml("categories.yaml"):
        category = existing.get(row["slug"])
        if category is None:
            category_create(actor=actor, slug=row["slug"], name=row["name"], description=row["description"])
        elif (category.name, category.description, category.active) != (row["name"], row["description"], True):
            category_update(
                actor=actor, category=category, name=row["name"], description=row["description"], active=True
            )


def _demo_versions():
    slugs = [spec["slug"] for spec in map(yaml.safe_load, _judge_files())]
    return JudgeVersion.objects.filter(version__in=DEMO_VERSIONS, judge__slug__in=slugs)


def _judge_files() -> list[str]:
    return [p.read_text(encoding="utf-8") for p in sorted(demo_file("judges").glob("*.yaml"))]


def _stale() -> bool:
    """Demo versions stored as import placeholders (an older demo) would clash with the demo's judge specs."""
    return any((v.spec or {}).get("imported") for v in _demo_versions().only("spec"))


def _targets(dataset: Dataset, judge: Judge, pairs) -> list[tuple[int, tuple[int, int]]]:
    ids = {
        (external_id, position): (conversation_id, pk)
        for pk, conversation_id, external_id, position in Turn.objects.filter(
            conversation__dataset=dataset
        ).values_list("pk", "conversation_id", "conversation__external_id", "position")
    }
    return [(judge.pk, ids[(external_id, position)]) for external_id, position in pairs]


def _item(dataset: Dataset, judge: Judge, target) -> ReviewItem:
    ((_, (_, turn_id)),) = _targets(dataset, judge, [target])
    return ReviewItem.objects.get(judge=judge, turn_id=turn_id)


def _seed_queue(*, dataset: Dataset, users: dict[str, object]) -> None:
    """Queue the turns where the demo's versions disagree, then the people's work on them, then the QA sample."""
    queue = demo_yaml("queue.yaml")
    judge = Judge.objects.get(slug=queue["judge"])
    moved = _targets(dataset, judge, queue["version_moved"])
    review_items_merge(reasons={key: {VERSION_MOVED} for key in moved}, qa_weight={})
    categories = _categories()
    for row in queue["reviews"]:
        item = _item(dataset, judge, row["target"])
        reviewer = users[row["reviewer"]]
        if item.reviews.filter(reviewer=reviewer).exists():
            continue
        verdicts = dict(
            Verdict.objects.filter(judge_version__judge=judge, turn_id=item.turn_id, run_index=0).values_list(
                "judge_version__version", "pk"
            )
        )
        review_submit(
            item=item,
            user=reviewer,
            passed=row["passed"],
            categories=[categories[slug] for slug in row["categories"]],
            verdict_agreement={verdicts[version]: value for version, value in row["verdicts"].items()},
            comment=row.get("comment", ""),
            seconds_spent=row["seconds_spent"],
        )
    for row in queue["adjudications"]:
        item = _item(dataset, judge, row["target"])
        if Adjudication.objects.filter(item=item).exists():
            continue
        adjudication_decide(
            item=item,
            lead=users[row["lead"]],
            rationale=row["rationale"],
            passed=row["passed"],
            categories=[categories[slug] for slug in row["categories"]],
        )
    sample = _targets(dataset, judge, queue["qa_sample"])
    review_items_merge(
        reasons={key: {QA_SAMPLE} for key in sample}, qa_weight=dict.fromkeys(sample, queue["qa_sample_weight"])
    )


@transaction.atomic
def demo_seed(*, reset: bool = False) -> DemoSummary:
    if reset or _stale():
        Dataset.objects.filter(name=DEMO_DATASET).delete()
        _demo_versions().delete()

    users = _seed_users()
    lead = next(users[name] for name, role, _ in demo_users() if role == Role.LEAD)
    _seed_categories(actor=lead)
    call_command("load_judges", str(demo_file("judges")), stdout=StringIO())
    imported = dataset_import(path=demo_file("conversations.jsonl"), fmt="jsonl", dataset_name=DEMO_DATASET)
    about = demo_yaml("dataset.yaml")
    dataset = dataset_describe(
        actor=lead,
        dataset=Dataset.objects.get(name=DEMO_DATASET),
        kind=about["kind"],
        description=about["description"],
    )
    _seed_queue(dataset=dataset, users=users)
    dataset_triage(dataset=dataset)
    demo_audio_write(dataset=dataset)
    signatures = demo_signatures_seed(dataset=dataset, spec=demo_yaml("signatures.yaml"))

    return DemoSummary(
        dataset_id=dataset.pk,
        conversations=imported.conversations,
        turns=imported.turns,
        gold_labels=imported.labels,
        verdicts=imported.verdicts,
        categories=len(demo_yaml("categories.yaml")),
        languages=list(dict.fromkeys(dataset.conversations.order_by("pk").values_list("language", flat=True))),
        users=demo_users(),
        signatures=signatures,
    )
