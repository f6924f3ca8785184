"""The kept dataset counts (DatasetCount, maintained by triggers in the writing transaction) equal a fresh
recount of conversations, turns, gold labels and verdicts after every kind of write: factories and bulk
inserts, imports (COPY with the row triggers off on PostgreSQL, INSERTs otherwise), a refused import,
reviews and adjudication, deletes of every kind and order, and rows that move between conversations,
languages and datasets. The recount (counts_support) is a plain ORM GROUP BY, independent of the code
under test."""

import importlib
import json

import pytest
from django.db import IntegrityError, connection, transaction

from reviewapp.adjudication.services import adjudication
from reviewapp.corpus.services.imports import ImportFailed, dataset_import
from reviewapp.models import Conversation, Dataset, DatasetCount, GoldLabel, JudgeVersion, Role, Turn, Verdict
from reviewapp.review.services import reviews
from reviewapp.triage.services import claims
from tests.factories import (
    dataset_of_languages,
    gold,
    import_sweep,
    judge_version,
    label_turn,
    make_item,
    turn_pairs,
    verdicts,
)
from tests.reviewapp.corpus.counts_support import assert_kept, kept

pytestmark = pytest.mark.django_db


def group(dataset: Dataset, language: str) -> DatasetCount:
    return DatasetCount.objects.get(dataset=dataset, language=language)


def calls(path, start: int, count: int, *, language: str = "fr", broken_at: int | None = None):
    lines = []
    for i in range(start, start + count):
        turns = [{"role": "user", "text": f"Bonjour {i}"}, {"role": "agent", "text": f"Votre vol {i}."}]
        turns[-1]["labels"] = [{"judge": "helpful", "rating": 2}]
        turns[-1]["verdicts"] = [{"judge": "helpful", "version": "v1", "rating": 1 + i % 3}]
        record = {"external_id": f"call-{i:04d}", "language": language, "turns": turns}
        lines.append("{not json" if i == broken_at else json.dumps(record))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_factory_rows_and_bulk_inserts_are_counted_per_dataset_and_language():
    mixed = dataset_of_languages("mixed", ["fr", "fr-CA", "ja", "ja"], turns_per_conversation=3)
    turn = Turn.objects.filter(conversation__dataset=mixed, conversation__language="ja").first()
    label_turn(turn, rating=3, verdict_rating=2, sweep=import_sweep(mixed))
    fr_turns = list(Turn.objects.filter(conversation__dataset=mixed, conversation__language="fr"))
    jv = judge_version("speakability")
    verdicts(import_sweep(mixed, "bulk"), jv, fr_turns, [True, False, None])
    gold(jv.judge, fr_turns, [True, True, False])

    counts = assert_kept()
    ja, fr = group(mixed, "ja"), group(mixed, "fr")
    assert (ja.conversations, ja.turns, ja.gold_labels, ja.verdicts) == (2, 6, 1, 1)
    assert (fr.conversations, fr.turns, fr.gold_labels, fr.verdicts) == (1, 3, 3, 3)
    assert sum(n for (_, _, column), n in counts.items() if column == "turns") == 12


@pytest.mark.parametrize("method", [None, "insert"])
def test_imports_new_and_into_an_existing_dataset_are_counted(tmp_path, method):
    dataset_import(
        path=calls(tmp_path / "a.jsonl", 0, 25), fmt="jsonl", dataset_name="calls", batch_size=10, method=method
    )
    first = group(Dataset.objects.get(name="calls"), "fr")
    assert (first.conversations, first.turns, first.gold_labels, first.verdicts) == (25, 50, 25, 25)
    dataset_import(
        path=calls(tmp_path / "b.jsonl", 25, 12, language="de"),
        fmt="jsonl",
        dataset_name="calls",
        batch_size=5,
        method=method,
    )
    assert_kept()
    de = group(Dataset.objects.get(name="calls"), "de")
    assert (de.conversations, de.turns, de.gold_labels, de.verdicts) == (12, 24, 12, 12)


def test_a_refused_import_leaves_the_counts_as_they_were(tmp_path):
    dataset_import(path=calls(tmp_path / "a.jsonl", 0, 5), fmt="jsonl", dataset_name="calls")
    before = assert_kept()
    with pytest.raises(ImportFailed):
        dataset_import(
            path=calls(tmp_path / "b.jsonl", 5, 30, broken_at=28), fmt="jsonl", dataset_name="calls", batch_size=10
        )
    assert assert_kept() == before


def test_reviews_and_an_adjudication_that_write_gold_keep_the_counts(make_user):
    ana, bea = make_user("ana", languages=["fr"]), make_user("bea", languages=["fr"])
    lead = make_user("lea", role=Role.LEAD)
    item = make_item("fr", reviews_required=2, verdict_rating=2)
    gold_before = GoldLabel.objects.count()
    for reviewer, rating in ((ana, 1), (bea, 3)):
        claims.item_claim(user=reviewer)
        reviews.review_submit(item=item, user=reviewer, rating=rating)
    item.refresh_from_db()
    adjudication.adjudication_decide(item=item, lead=lead, rationale="Trop long à l'oral.", rating=1)
    assert GoldLabel.objects.count() > gold_before  # the decision is gold now
    assert_kept()


def test_deletes_of_turns_conversations_versions_and_datasets_take_their_rows_away():
    mixed = dataset_of_languages("mixed", ["fr", "fr", "ja"], turns_per_conversation=4)
    other = dataset_of_languages("other", ["fr", "de"], turns_per_conversation=2)
    sweep = import_sweep(mixed)
    for turn in Turn.objects.filter(conversation__dataset=mixed, position=1):
        label_turn(turn, rating=3, verdict_rating=2, sweep=sweep)
    assert_kept()

    Turn.objects.filter(
        conversation__dataset=mixed, position=1, conversation__language="ja"
    ).delete()  # its label and verdict too
    assert group(mixed, "ja").turns == 3 and group(mixed, "ja").verdicts == 0
    assert_kept()
    Conversation.objects.filter(dataset=mixed, language="fr").first().delete()
    assert group(mixed, "fr").conversations == 1
    assert_kept()
    JudgeVersion.objects.filter(pk=judge_version().pk).delete()  # the version's verdicts go with it
    assert group(mixed, "fr").verdicts == 0
    assert_kept()
    Dataset.objects.filter(pk=mixed.pk).delete()
    assert not DatasetCount.objects.filter(dataset_id=mixed.pk).exists()
    assert_kept()
    assert group(other, "de").turns == 2


def test_a_conversation_and_its_rows_that_change_language_or_dataset_move_their_counts():
    mixed = dataset_of_languages("mixed", ["fr", "fr", "ja"], turns_per_conversation=2)
    other = dataset_of_languages("other", ["de"], turns_per_conversation=1)
    for turn in Turn.objects.filter(conversation__dataset=mixed, position=1):
        label_turn(turn, rating=3, verdict_rating=2, sweep=import_sweep(mixed))

    first = Conversation.objects.filter(dataset=mixed, language="fr").first()
    Conversation.objects.filter(pk=first.pk).update(language="fr-CA")
    moved = group(mixed, "fr-CA")
    assert (moved.conversations, moved.turns, moved.gold_labels, moved.verdicts) == (1, 2, 1, 1)
    assert group(mixed, "fr").conversations == 1
    assert_kept()
    # Both of a statement's conversations move at once, one of them into the other's old group.
    ja = Conversation.objects.get(dataset=mixed, language="ja")
    Conversation.objects.filter(pk__in=[first.pk, ja.pk]).update(dataset=other, language="ja")
    assert group(other, "ja").conversations == 2 and group(mixed, "ja").conversations == 0
    assert_kept()
    conversation = Conversation.objects.get(dataset=other, language="de")
    # A row of each table moved to a conversation of another group.
    turn = Turn.objects.filter(conversation__dataset=mixed, position=0).first()
    Turn.objects.filter(pk=turn.pk).update(conversation=conversation, position=50)
    for model in (GoldLabel, Verdict):
        model.objects.filter(pk=model.objects.filter(conversation__dataset=mixed).first().pk).update(
            conversation=conversation
        )
    Turn.objects.filter(conversation__dataset=other, position=0).first().save()  # a save that moves nothing
    assert_kept()
    de = group(other, "de")
    assert (de.turns, de.gold_labels, de.verdicts) == (2, 1, 1)


def test_new_conversations_and_turns_of_a_new_language_open_its_group():
    found = dataset_of_languages("calls", ["fr"])
    conversation = Conversation.objects.create(dataset=found, external_id="new", language="hi")
    turn_pairs(conversation, ["नमस्ते", "धन्यवाद"])
    hi = group(found, "hi")
    assert (hi.conversations, hi.turns) == (1, 4)
    assert_kept()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="raw deletes in either order, keys deferred")
def test_a_conversation_deleted_before_its_rows_takes_them_away_once():
    mixed = dataset_of_languages("mixed", ["fr", "fr"], turns_per_conversation=3)
    for turn in Turn.objects.filter(conversation__dataset=mixed, position=1):
        label_turn(turn, rating=3, verdict_rating=2, sweep=import_sweep(mixed))
    first, second = Conversation.objects.filter(dataset=mixed).order_by("pk")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM reviewapp_conversation WHERE id = %s", [first.pk])  # keys are deferred
        for table in ("reviewapp_verdict", "reviewapp_goldlabel", "reviewapp_turn"):
            cursor.execute(f"DELETE FROM {table} WHERE conversation_id = %s", [first.pk])  # noqa: S608
        cursor.execute("DELETE FROM reviewapp_turn WHERE conversation_id = %s AND position = 0", [second.pk])
    fr = group(mixed, "fr")
    assert (fr.conversations, fr.turns, fr.gold_labels, fr.verdicts) == (1, 2, 1, 1)
    assert_kept()


def test_a_write_that_fails_rolls_its_counts_back():
    found = dataset_of_languages("calls", ["fr"], turns_per_conversation=2)
    before = assert_kept()
    conversation = Conversation.objects.get(dataset=found)
    with pytest.raises(IntegrityError), transaction.atomic():
        Turn.objects.create(conversation=conversation, position=5, role="user")
        Turn.objects.create(conversation=conversation, position=0, role="user")  # the position is taken
    assert assert_kept() == before


def test_the_migrations_recount_fills_the_counts_from_the_rows():
    mixed = dataset_of_languages("mixed", ["fr", "ja", "ja"], turns_per_conversation=3)
    label_turn(
        Turn.objects.filter(conversation__dataset=mixed).first(), rating=3, verdict_rating=2, sweep=import_sweep(mixed)
    )
    expected = assert_kept()
    migration = importlib.import_module("reviewapp.migrations.0014_dataset_counts")
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM reviewapp_datasetcount")
        assert not kept()
        cursor.execute(migration.RECOUNT)
    assert assert_kept() == expected


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL notes inserts and folds them per statement")
def test_a_bulk_insert_is_folded_into_its_groups_once_and_leaves_no_note_behind():
    found = dataset_of_languages("calls", ["fr", "ja"], turns_per_conversation=1)
    fr, ja = Conversation.objects.filter(dataset=found).order_by("language")
    with transaction.atomic():
        Turn.objects.bulk_create(
            Turn(conversation=conversation, position=position, role="user")
            for position in range(1, 3001)
            for conversation in (fr, ja)
        )
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM reviewapp_datasetcount_delta")
            assert cursor.fetchone()[0] == 0  # folded at the end of the statement, inside the transaction
        assert (group(found, "fr").turns, group(found, "ja").turns) == (3001, 3001)
    assert_kept()
