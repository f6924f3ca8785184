"""Exports read each relation once, in streamed queries: their number does not grow with the rows,
and the rows of each conversation get their own reviews, comments and verdicts across chunk edges."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviewapp.exports.selectors.export_filters import pseudonym
from reviewapp.exports.services.exports import snapshot_create, snapshot_path, snapshot_write
from reviewapp.models import Category, Comment, Conversation, ExportSnapshot, Review, ReviewItem, Turn
from tests.scenarios import add_labelled

pytestmark = pytest.mark.django_db

TINY_CHUNK = 2  # many chunks even for a few rows: a query per chunk would show at once


def write(judge, fmt: str, name: str) -> tuple[ExportSnapshot, list[str]]:
    snapshot = snapshot_create(judge=judge, fmt=fmt, name=name, build=False)
    with CaptureQueriesContext(connection) as queries:
        snapshot = snapshot_write(snapshot_id=snapshot.pk, chunk_size=TINY_CHUNK)
    return snapshot, [query["sql"] for query in queries.captured_queries]


def reads(sqls: list[str]) -> list[str]:
    return [sql for sql in sqls if sql.lstrip().upper().startswith("SELECT")]


def add_reviewed(corpus, count: int) -> None:
    """`count` labelled conversations, each turn with one review (a category) and one comment."""
    start = Conversation.objects.filter(dataset=corpus.dataset).count()
    add_labelled(corpus, count)
    reviewer = corpus.reviewers[0]
    category = Category.objects.get(slug="gloss")
    for number in range(start, start + count):
        turn = Turn.objects.get(conversation__external_id=f"en-{number}", role="agent")
        item = ReviewItem.objects.create(
            judge=corpus.judge, conversation=turn.conversation, turn=turn, dataset=corpus.dataset, language="en"
        )
        review = Review.objects.create(item=item, reviewer=reviewer, rating=2, comment=f"Review {number}.")
        review.categories.set([category])
        comment = Comment.objects.create(turn=turn, author=reviewer, judge=corpus.judge, body=f"Comment {number}.")
        comment.categories.set([category])


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "eva"])
def test_the_queries_of_an_export_do_not_grow_with_its_rows(corpus, media, fmt):
    small, small_sqls = write(corpus.judge, fmt, "small")
    add_reviewed(corpus, 40)
    big, big_sqls = write(corpus.judge, fmt, "big")
    assert (small.row_count, big.row_count) == (3, 43)
    # 3 rows in 2 chunks and 43 rows in 22 chunks: the same reads.
    assert len(reads(big_sqls)) == len(reads(small_sqls)) <= 16
    assert len(big_sqls) == len(small_sqls)


def test_rows_keep_their_own_reviews_and_comments_across_chunks(corpus, media):
    add_reviewed(corpus, 9)
    snapshot, _ = write(corpus.judge, "jsonl", "aligned")
    lines = snapshot_path(snapshot).read_text(encoding="utf-8").splitlines()
    rows = {row["conversation_id"]: row for row in map(json.loads, lines)}
    assert len(lines) == 12  # fr-1's two labelled turns, ja-1's one, and the nine added
    assert len(rows) == 11
    for number in range(2, 11):
        row = rows[f"en-{number}"]
        assert [review["comment"] for review in row["reviews"]] == [f"Review {number}."]
        assert [review["reviewer"] for review in row["reviews"]] == [pseudonym(corpus.reviewers[0].pk)]
        assert [review["categories"] for review in row["reviews"]] == [["gloss"]]
        assert [(c["body"], c["categories"]) for c in row["comments"]] == [(f"Comment {number}.", ["gloss"])]
        assert list(row["verdicts"]) == ["2.0"]
        assert row["context"] == [{"position": 0, "role": "user", "text": "Question 0"}]
        assert row["text"] == f"Answer {number}"
    assert rows["ja-1"]["reviews"] == [] and rows["ja-1"]["comments"] == []
