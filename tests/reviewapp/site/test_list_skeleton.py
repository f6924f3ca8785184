"""Every list page is the same skeleton around its own columns: a filter bar, a results section with a
count line that states n, a table, and an empty state with a way back when a filter matches nothing.
Each page keeps a fixed number of queries whatever its number of rows."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from reviewapp.models import Role
from tests.reviewapp.site import list_pages_data as data

pytestmark = pytest.mark.django_db


def _url(page: data.ListPage, built: dict) -> str:
    return reverse(page.url_name, args=[built["dataset"].pk] if page.detail else None)


def _admin_with_rows(client, make_user, n: int):
    admin = make_user("root", role=Role.ADMIN)
    built = data.build(n, author=admin)
    for i in range(n - 1):  # people: the admin and n - 1 reviewers, n in all
        make_user(f"reviewer-{i}", languages=["fr"])
    client.force_login(admin)
    return built


@pytest.mark.parametrize("page", data.PAGES, ids=lambda page: page.url_name)
def test_each_list_page_has_the_filter_bar_the_count_and_the_table(client, make_user, page):
    built = _admin_with_rows(client, make_user, 3)
    html = client.get(_url(page, built)).content.decode()
    bar = re.search(r'<form class="filters"[^>]*data-skeleton="filter-bar"[^>]*>', html)
    assert bar and f'hx-target="#{page.results_id}"' in bar.group(0) and 'hx-push-url="true"' in bar.group(0)
    assert f'<section id="{page.results_id}" class="results" data-skeleton="results"' in html
    assert re.search(r'<p class="results__count" data-skeleton="count" data-count="3">3 \w+', html)
    assert html.count('data-skeleton="table"') == 1 and 'data-skeleton="empty"' not in html


@pytest.mark.parametrize("page", data.PAGES, ids=lambda page: page.url_name)
def test_each_list_page_swaps_its_results_and_says_when_a_filter_matches_nothing(client, make_user, page):
    built = _admin_with_rows(client, make_user, 2)
    url = _url(page, built)
    fragment = client.get(url, page.nothing, headers={"HX-Request": "true"})
    html = fragment.content.decode()
    assert "HX-Request" in fragment.headers["Vary"]
    assert html.lstrip().startswith(f'<section id="{page.results_id}"') and "<html" not in html
    assert 'data-count="0">0 ' in html and 'data-skeleton="table"' not in html
    empty = re.search(r'<div class="empty" data-skeleton="empty">(.*?)</div>', html, re.S)
    assert empty and "<strong>" in empty.group(1)
    if page.clear_text:
        assert f'<a href="{url}">{page.clear_text}</a>' in empty.group(1)


# Queries per page, the same at 1 and at 4 rows (the session with its user and their profile, then the
# page's own reads).
QUERIES = {
    "signature_list": 5,
    "dispute_list": 5,
    "dataset_list": 4,
    "sweep_list": 3,
    "snapshot_list": 3,
    "comment_list": 8,
    "people_list": 3,  # with the known languages the add-a-person form offers
    "dataset_detail": 5,
}


@pytest.mark.parametrize("n", [1, 4])
@pytest.mark.parametrize("page", data.PAGES, ids=lambda page: page.url_name)
def test_each_list_page_runs_a_fixed_number_of_queries(client, make_user, django_assert_num_queries, page, n):
    built = _admin_with_rows(client, make_user, n)
    url = _url(page, built)
    client.get(url)  # warm caches that are not per request (content types, the session's first write)
    with django_assert_num_queries(QUERIES[page.url_name]):
        response = client.get(url)
    assert f'data-count="{n}"' in response.content.decode()
