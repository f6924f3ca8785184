"""The leads' progress page draws bars per reviewer and per language with width classes (CSP-safe)."""

import re
from pathlib import Path

import pytest
from django.urls import reverse

from reviewapp.models import Role
from reviewapp.review.services import reviews
from reviewapp.triage.selectors.progress import bar_width
from reviewapp.triage.services import claims
from tests.factories import make_item

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("part", "whole", "width"),
    [(0, 10, 0), (1, 0, 0), (1, 1000, 5), (1, 4, 25), (1, 3, 35), (2, 3, 65), (3, 3, 100), (5, 3, 100)],
)
def test_bar_width_steps_of_five(part, whole, width):
    assert bar_width(part, whole) == width


def test_progress_page_has_bars_per_reviewer_and_language_without_inline_style(client, make_user):
    items = [make_item("fr", priority=p) for p in (4, 3, 2, 1)]
    ana, bea = make_user("ana", languages=["fr"]), make_user("bea", languages=["fr"])
    for item in items[:3]:
        claims.item_claim(user=ana, item=item)
        reviews.review_submit(item=item, user=ana, rating=2)
    claims.item_claim(user=bea, item=items[3])
    reviews.review_submit(item=items[3], user=bea, rating=2)
    make_item("de")
    client.force_login(make_user("lea", role=Role.LEAD))

    html = client.get(reverse("queue_progress")).content.decode()

    assert not re.search(r"\sstyle=", html)
    rows = re.findall(r"<tr><td>(\w+)</td><td><span class=\"bar\"[^>]*><span class=\"bar__fill (w-\d+)\">", html)
    assert rows == [("ana", "w-100"), ("bea", "w-35")]  # 1 of 3 reviews, to the nearest 5 %
    assert 'aria-label="4 done, 0 open of 4"' in html and "bar__fill--done w-100" in html
    assert 'aria-label="0 done, 1 open of 1"' in html and "bar__fill--open w-100" in html
    css = (Path(__file__).resolve().parents[3] / "static" / "css" / "app.css").read_text()
    assert all(f".w-{step} {{ width: {step}%; }}" in css for step in range(5, 101, 5))
