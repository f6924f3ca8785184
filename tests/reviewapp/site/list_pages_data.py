"""The list pages and a builder that puts `n` rows on each, for the tests of their shared skeleton."""

from __future__ import annotations

from dataclasses import dataclass

from reviewapp.models import Comment, ExportSnapshot, ReviewItem, Signature, Sweep
from tests import factories


@dataclass(frozen=True)
class ListPage:
    url_name: str
    results_id: str
    nothing: dict  # a filter that matches no row
    clear_text: str  # the empty state's link back to the unfiltered list ("" when it has none)
    detail: bool = False  # the dataset page: its url takes the dataset's id


PAGES = [
    ListPage("signature_list", "signature-results", {"language": "zz"}, "Clear them"),
    ListPage("dispute_list", "dispute-results", {"language": "zz"}, "Clear them"),
    ListPage("dataset_list", "dataset-results", {"q": "matches-no-dataset"}, "Clear them"),
    ListPage("sweep_list", "sweep-results", {"status": Sweep.Status.FAILED}, "Show all"),
    ListPage("snapshot_list", "snapshot-results", {"judge": "no-such-judge"}, "Show all"),
    ListPage("comment_list", "comment-results", {"language": "zz"}, "Clear them"),
    ListPage("people_list", "people-rows", {"role": "lead"}, "Show everyone"),
    ListPage("dataset_detail", "conversation-results", {"language": "zz"}, "", detail=True),
]


def build(n: int, *, author) -> dict:
    """`n` rows for every list page, all in fr: datasets, conversations of one dataset, disputes, sweeps,
    snapshots, signatures, comments and reviewers. Returns the dataset whose page lists `n` conversations."""
    judge = factories.judge()
    first = None
    for i in range(n):
        dataset = factories.dataset(f"calls-{i}")
        # Dataset 0 holds n conversations; each other dataset one.
        for _ in range(n if i == 0 else 1):
            item = factories.make_item(on=dataset)
            first = first or dataset
        item.status = ReviewItem.Status.AWAITING_ADJUDICATION
        item.save(update_fields=["status"])
        ExportSnapshot.objects.create(name=f"export-{i}", version=1, judge=judge, format="jsonl", status="done")
        Signature.objects.create(judge=judge, language="fr", intent="filler", pattern=f"euh {i}", passed=False)
        Comment.objects.create(turn=item.turn, author=author, body=f"Trop long ({i}).")
    # make_item made one import sweep per dataset: n sweeps, all done.
    assert Sweep.objects.count() == n
    return {"dataset": first}
