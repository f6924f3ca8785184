"""Export pages: list, new export, snapshot page with progress and datasheet, download; each three ways."""

import re

import pytest
from django.urls import reverse

from reviewapp.exports.services.exports import snapshot_create, snapshot_path, snapshot_write
from reviewapp.models import ExportSnapshot
from tests import scenarios
from tests.factories import HTMX

pytestmark = pytest.mark.django_db


def no_inline_style_or_script(html: str) -> None:
    assert not re.search(r"\sstyle=", html)
    assert "<script>" not in html


def written(judge, fmt="jsonl", **kwargs) -> ExportSnapshot:
    snapshot = snapshot_create(judge=judge, fmt=fmt, build=False, **kwargs)
    return snapshot_write(snapshot_id=snapshot.pk)


@pytest.fixture
def lead(client, make_user):
    user = make_user("lena", role="lead")
    client.force_login(user)
    return user


def test_list_full_page_fragment_and_forbidden(client, make_user, corpus, media, lead):
    first = written(corpus.judge, name="set")
    written(corpus.judge, "csv", name="set")
    html = client.get(reverse("snapshot_list")).content.decode()
    assert "set v1" in html and "set v2" in html and first.sha256[:12] in html
    assert reverse("snapshot_new") in html and 'aria-current="page">Exports' in html
    no_inline_style_or_script(html)

    fragment = client.get(reverse("snapshot_list"), {"judge": "other"}, **HTMX).content.decode()
    assert fragment.lstrip().startswith('<section id="snapshot-results"')
    assert "<html" not in fragment and "set v1" not in fragment

    client.force_login(make_user("rita", languages=["fr"]))
    assert client.get(reverse("snapshot_list")).status_code == 403
    assert "Exports" not in client.get(reverse("dataset_list")).content.decode()


def test_list_runs_a_fixed_number_of_queries(client, corpus, media, lead, django_assert_max_num_queries):
    written(corpus.judge)
    with django_assert_max_num_queries(6):
        assert client.get(reverse("snapshot_list")).status_code == 200
    for _ in range(5):
        written(corpus.judge, "csv")
    with django_assert_max_num_queries(6):
        html = client.get(reverse("snapshot_list")).content.decode()
    assert "conciseness v6" in html


def test_new_export_form_creates_and_builds_a_snapshot(
    client, make_user, corpus, media, lead, eager_celery, django_capture_on_commit_callbacks
):
    form = client.get(reverse("snapshot_new")).content.decode()
    assert 'name="gold_sources"' in form and "conciseness" in form
    no_inline_style_or_script(form)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("snapshot_new"),
            {
                "judge": "conciseness",
                "format": "parquet",
                "name": "fr-only",
                "languages": "fr",
                "gold_sources": ["adjudicated", "unanimous", "imported"],
            },
        )
    snapshot = ExportSnapshot.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("snapshot_detail", args=[snapshot.pk])
    snapshot.refresh_from_db()
    assert (snapshot.status, snapshot.row_count, snapshot.created_by) == ("done", 2, lead)
    assert snapshot.filters["languages"] == ["fr"]

    bad = client.post(reverse("snapshot_new"), {"judge": "conciseness", "format": "csv", "languages": "fr;drop"})
    assert bad.status_code == 200 and "Not a language code" in bad.content.decode()

    client.force_login(make_user("rita", languages=["fr"]))
    assert client.get(reverse("snapshot_new")).status_code == 403
    assert client.post(reverse("snapshot_new"), {"judge": "conciseness", "format": "csv"}).status_code == 403
    assert ExportSnapshot.objects.count() == 1


def test_detail_shows_the_datasheet_and_the_download_link(client, make_user, corpus, media, lead):
    snapshot = written(corpus.judge, name="sheet")
    url = reverse("snapshot_detail", args=[snapshot.pk])
    html = client.get(url).content.decode()
    assert reverse("snapshot_download", args=[snapshot.pk]) in html
    assert snapshot.sha256 in html and "sheet-v1.jsonl" in html
    assert 'hx-trigger="every 2s"' not in html
    assert '<span class="lang">fr-CA</span>' in html and '<span class="lang">ja</span>' in html
    assert "conciseness@2.0" in html
    no_inline_style_or_script(html)

    fragment = client.get(url, **HTMX).content.decode()
    assert fragment.lstrip().startswith('<section id="snapshot-status"')
    assert "<html" not in fragment

    client.force_login(make_user("rita", languages=["fr", "ja"]))
    assert client.get(url).status_code == 403


def test_a_running_snapshot_polls_with_a_progress_bar(client, corpus, media, lead, django_assert_max_num_queries):
    snapshot = snapshot_create(judge=corpus.judge, fmt="csv", build=False)
    ExportSnapshot.objects.filter(pk=snapshot.pk).update(status="running", progress=40, row_count=800)
    url = reverse("snapshot_detail", args=[snapshot.pk])
    with django_assert_max_num_queries(5):
        fragment = client.get(url, **HTMX).content.decode()
    assert f'hx-get="{url}"' in fragment and 'hx-trigger="every 2s"' in fragment
    assert '<progress id="snapshot-bar" max="100" value="40">' in fragment and "800 rows written" in fragment
    assert reverse("snapshot_download", args=[snapshot.pk]) not in fragment
    assert client.get(reverse("snapshot_download", args=[snapshot.pk])).status_code == 404


def test_detail_runs_a_fixed_number_of_queries(client, corpus, media, lead, django_assert_max_num_queries):
    small = written(corpus.judge, name="small")
    scenarios.add_labelled(corpus, 40, language="de")
    big = written(corpus.judge, name="big")
    for snapshot in (small, big):
        with django_assert_max_num_queries(5):
            assert client.get(reverse("snapshot_detail", args=[snapshot.pk])).status_code == 200


def test_download_streams_the_file_after_the_access_check(client, make_user, corpus, media, lead):
    snapshot = written(corpus.judge, "csv", name="dl")
    response = client.get(reverse("snapshot_download", args=[snapshot.pk]))
    assert response.status_code == 200
    assert 'attachment; filename="dl-v1.csv"' in response["Content-Disposition"]
    assert b"".join(response.streaming_content) == snapshot_path(snapshot).read_bytes()

    sheet = client.get(reverse("snapshot_download", args=[snapshot.pk]), {"file": "datasheet"})
    assert b'"sha256": "' + snapshot.sha256.encode() + b'"' in b"".join(sheet.streaming_content)

    client.force_login(make_user("rita", languages=["fr", "ja"]))
    assert client.get(reverse("snapshot_download", args=[snapshot.pk])).status_code == 403
