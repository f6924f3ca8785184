"""The flat rows are the expected bytes, whichever database builds them, in a fixed number of queries.

The expected lines are written out here field by field from the corpus (tests/scenarios.export_corpus) and
serialised with the standard library, not with the export's own code.
"""

import hashlib
import hmac
import json
from datetime import UTC, datetime

import pandas as pd
import pytest
from django.conf import settings

from reviewapp.exports.services.exports import snapshot_create, snapshot_path, snapshot_write
from reviewapp.models import Comment, Conversation, ExportSnapshot, GoldLabel, Review, Sweep, Turn, Verdict
from tests.scenarios import add_labelled

pytestmark = pytest.mark.django_db

ON_THE_SECOND = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)  # no microseconds: isoformat leaves them out


def export(judge, fmt: str, name: str, chunk_size: int = 2000) -> ExportSnapshot:
    snapshot = snapshot_create(judge=judge, fmt=fmt, name=name, build=False)
    return snapshot_write(snapshot_id=snapshot.pk, chunk_size=chunk_size)


def hmac_id(user) -> str:
    digest = hmac.new(settings.SECRET_KEY.encode(), f"reviewer:{user.pk}".encode(), hashlib.sha256).hexdigest()
    return "r-" + digest[:16]


def line(row: dict) -> str:
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"))


def stamp(value: datetime) -> str:
    return value.astimezone(UTC).isoformat()


def expected_adjudicated_row(corpus) -> dict:
    ana, bea, lea = corpus.reviewers
    turn = Turn.objects.get(conversation=corpus.fr, position=1)
    gold = GoldLabel.objects.get(turn=turn, source="adjudicated")
    second = Review.objects.filter(item__turn=turn).order_by("id")[1]
    comment = Comment.objects.get(turn=turn)
    sweep = Sweep.objects.get()

    def verdict(rating, passed, flags):
        return {
            "sweep": sweep.pk,
            "run": 0,
            "tier": "llm",
            "status": "resolved",
            "rating": rating,
            "label": "",
            "passed": passed,
            "flags": flags,
            "explanation": "",
        }

    return {
        "dataset": "calls",
        "conversation_id": "fr-1",
        "language": "fr-CA",
        "judge": "conciseness",
        "level": "turn",
        "turn_position": 1,
        "turn_role": "agent",
        "text": "Bonjour, je vérifie votre dossier.",
        "intended_text": None,
        "context": [{"position": 0, "role": "user", "text": "Question 0"}],
        "gold_rating": 1.0,
        "gold_label": None,
        "gold_passed": None,
        "gold_failure_modes": ["gloss"],
        "gold_source": "adjudicated",
        "gold_labelled_at": stamp(gold.created_at),
        "adjudication": {
            "lead": hmac_id(lea),
            "rating": 1.0,
            "label": "",
            "passed": None,
            "categories": ["gloss"],
            "rationale": "The gloss is a failure.",
        },
        "reviews": [
            {
                "reviewer": hmac_id(ana),
                "rating": 1.0,
                "label": "",
                "passed": None,
                "categories": ["gloss"],
                "comment": "Rated 1.",
                "quoted_span": "",
                "created_at": "2026-01-02T03:04:05+00:00",
            },
            {
                "reviewer": hmac_id(bea),
                "rating": 2.0,
                "label": "",
                "passed": False,
                "categories": ["gloss"],
                "comment": "Rated 2.",
                "quoted_span": "",
                "created_at": stamp(second.created_at),
            },
        ],
        "comments": [
            {
                "author": hmac_id(ana),
                "turn_position": 1,
                "body": "Gloss after the code.",
                "categories": ["gloss", "politeness-formula"],
                "quoted_span": "",
                "reply_to": None,
                "id": comment.pk,
                "created_at": stamp(comment.created_at),
            }
        ],
        "verdicts": {
            "1.0": [verdict(3.0, True, ["long", {"score": 0.5}])],
            "2.0": [verdict(1.0, None, [])],
        },
    }


def prepare(corpus) -> None:
    """Values that take each of the databases' special paths: a time on the second, true and false,
    nested JSON flags, whole-number ratings."""
    turn = Turn.objects.get(conversation=corpus.fr, position=1)
    first, second = Review.objects.filter(item__turn=turn).order_by("id")
    Review.objects.filter(pk=first.pk).update(created_at=ON_THE_SECOND)
    Review.objects.filter(pk=second.pk).update(passed=False)
    Verdict.objects.filter(turn=turn, judge_version=corpus.v1).update(passed=True, flags=["long", {"score": 0.5}])


def test_a_jsonl_row_is_the_expected_line_byte_for_byte(corpus, media):
    prepare(corpus)
    expected = expected_adjudicated_row(corpus)

    lines = snapshot_path(export(corpus.judge, "jsonl", "bytes")).read_text(encoding="utf-8").splitlines()

    assert len(lines) == 3
    assert lines[0] == line(expected)
    assert json.loads(lines[1])["gold_source"] == "unanimous" and json.loads(lines[1])["turn_position"] == 3
    assert json.loads(lines[2])["conversation_id"] == "ja-1"


def test_csv_and_parquet_cells_hold_the_same_values(corpus, media):
    prepare(corpus)
    expected = expected_adjudicated_row(corpus)

    csv_frame = pd.read_csv(snapshot_path(export(corpus.judge, "csv", "cells")), keep_default_na=False)
    parquet_frame = pd.read_parquet(snapshot_path(export(corpus.judge, "parquet", "cells")))

    for frame in (csv_frame, parquet_frame):
        row = frame.iloc[0]
        for column in ("context", "gold_failure_modes", "adjudication", "reviews", "comments", "verdicts"):
            assert row[column] == line(expected[column]), column
        assert row["gold_labelled_at"] == expected["gold_labelled_at"]
        assert float(row["gold_rating"]) == 1.0 and row["text"] == expected["text"]


def test_a_conversation_level_row_carries_every_turn_and_comment(corpus, media):
    GoldLabel.objects.create(judge=corpus.judge, conversation=corpus.ja, turn=None, source="imported", label="ok")
    reply_turn = Turn.objects.get(conversation=corpus.ja, position=0)
    ana = corpus.reviewers[0]
    note = Comment.objects.create(turn=reply_turn, author=ana, judge=None, body="No judge named.")

    rows = [json.loads(text) for text in snapshot_path(export(corpus.judge, "jsonl", "level")).read_text().splitlines()]

    whole = next(row for row in rows if row["level"] == "conversation")
    assert (whole["turn_position"], whole["turn_role"], whole["text"], whole["intended_text"]) == (None,) * 4
    assert whole["context"] == [
        {"position": 0, "role": "user", "text": "Question 0"},
        {"position": 1, "role": "agent", "text": "かしこまりました。"},
    ]
    assert whole["gold_label"] == "ok" and whole["gold_rating"] is None
    assert [(c["author"], c["turn_position"], c["body"], c["id"]) for c in whole["comments"]] == [
        (hmac_id(ana), 0, "No judge named.", note.pk)
    ]
    assert whole["verdicts"] == {} and whole["reviews"] == [] and whole["adjudication"] is None
    assert sum(row["conversation_id"] == "ja-1" for row in rows) == 2


def test_the_winning_gold_is_the_best_source_of_the_target(corpus, media):
    turn = Turn.objects.get(conversation=corpus.ja, position=1)
    GoldLabel.objects.create(judge=corpus.judge, conversation=corpus.ja, turn=turn, source="unanimous", rating=1)

    rows = [json.loads(text) for text in snapshot_path(export(corpus.judge, "jsonl", "gold")).read_text().splitlines()]

    ja = [row for row in rows if row["conversation_id"] == "ja-1"]
    assert [(row["gold_source"], row["gold_rating"]) for row in ja] == [("unanimous", 1.0)]


# Reads of one export: the snapshot, the row count (the labels' count and sources, then the targets
# since the corpus's labels have several sources), the rows, the turns of their context and their
# verdicts (three statements, whatever the size), the judge's versions for the datasheet, the final
# refresh; writes: running, done.
FLAT_EXPORT_QUERIES = 10


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_a_flat_export_runs_the_same_queries_at_any_size(corpus, media, fmt, django_assert_num_queries):
    small = snapshot_create(judge=corpus.judge, fmt=fmt, name="small", build=False)
    with django_assert_num_queries(FLAT_EXPORT_QUERIES):
        small = snapshot_write(snapshot_id=small.pk, chunk_size=2)
    add_labelled(corpus, 40)
    big = snapshot_create(judge=corpus.judge, fmt=fmt, name="big", build=False)
    with django_assert_num_queries(FLAT_EXPORT_QUERIES):
        big = snapshot_write(snapshot_id=big.pk, chunk_size=2)
    assert (small.row_count, big.row_count) == (3, 43)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_the_context_is_the_six_turns_before_even_with_gaps_in_the_positions(corpus, media, fmt):
    """Positions 0, 3, 6 ... 24 (gaps) and 30-32 (none) in one conversation, labels on 24 and 32."""
    conversation = Conversation.objects.create(dataset=corpus.dataset, external_id="gaps", language="en")
    positions = [*range(0, 25, 3), 30, 31, 32]
    turns = {
        p: Turn.objects.create(conversation=conversation, position=p, role="user", text=f"t{p}") for p in positions
    }
    for position in (24, 32, 3):
        GoldLabel.objects.create(judge=corpus.judge, conversation=conversation, turn=turns[position], source="imported")

    path = snapshot_path(export(corpus.judge, fmt, "gaps"))
    if fmt == "jsonl":
        rows = [json.loads(text) for text in path.read_text().splitlines()]
        contexts = {row["turn_position"]: row["context"] for row in rows if row["conversation_id"] == "gaps"}
    else:
        frame = pd.read_csv(path, keep_default_na=False)
        gaps = frame[frame["conversation_id"] == "gaps"]
        contexts = dict(zip(gaps["turn_position"], map(json.loads, gaps["context"]), strict=True))

    assert {p: [turn["position"] for turn in context] for p, context in contexts.items()} == {
        3: [0],
        24: [6, 9, 12, 15, 18, 21],
        32: [15, 18, 21, 24, 30, 31],
    }
    assert contexts[32][-1] == {"position": 31, "role": "user", "text": "t31"}
