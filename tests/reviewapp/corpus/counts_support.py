"""The dataset counts the database keeps (DatasetCount) against a fresh recount of the rows: a plain ORM
GROUP BY over each table by its conversation's dataset and language, independent of the triggers."""

from collections import Counter

from django.db.models import Count

from reviewapp.models import Conversation, DatasetCount, GoldLabel, Turn, Verdict

COLUMNS = ("conversations", "turns", "gold_labels", "verdicts")


def recount() -> Counter:
    counted: Counter = Counter()
    for row in Conversation.objects.order_by().values("dataset_id", "language").annotate(n=Count("pk")):
        counted[(row["dataset_id"], row["language"], "conversations")] += row["n"]
    for model, column in ((Turn, "turns"), (GoldLabel, "gold_labels"), (Verdict, "verdicts")):
        rows = model.objects.order_by().values("conversation__dataset_id", "conversation__language")
        for row in rows.annotate(n=Count("pk")):
            counted[(row["conversation__dataset_id"], row["conversation__language"], column)] += row["n"]
    return counted


def kept() -> Counter:
    counted: Counter = Counter()
    for row in DatasetCount.objects.values("dataset_id", "language", *COLUMNS):
        for column in COLUMNS:
            counted[(row["dataset_id"], row["language"], column)] += row[column]
    assert all(n >= 0 for n in counted.values()), counted  # a count below zero took a row away twice
    return +counted  # groups that emptied (zeros) are not counts


def assert_kept() -> Counter:
    """The kept counts equal the recount, and hold something (a test that wrote nothing proves nothing)."""
    counts = recount()
    assert kept() == counts
    return counts
