"""The JSON API: token auth, sweeps (start, status, gate), snapshots (list, download), language limits."""

import json

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from reviewapp.models import ApiToken, Sweep
from reviewapp.selectors.sweeps import gate_report
from reviewapp.services.api_tokens import api_token_create, api_token_revoke, token_hash
from reviewapp.services.exports import snapshot_create, snapshot_path, snapshot_write

from . import export_support, test_sweep_support
from .test_sweep_support import make_dataset, store_judge

pytestmark = pytest.mark.django_db
corpus = export_support.corpus
media = export_support.media
scripted_llm = test_sweep_support.scripted_llm
eager_celery = test_sweep_support.eager_celery
run_sweep = test_sweep_support.run_sweep


@pytest.fixture
def api():
    """A client that enforces CSRF like a browser would: the token alone must be enough."""
    return Client(enforce_csrf_checks=True)


def bearer(raw: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


def token_for(user) -> str:
    return api_token_create(user=user, name="ci")[1]


@pytest.fixture
def judge():
    return store_judge("conciseness")


@pytest.fixture
def fr_sweep(judge, scripted_llm, run_sweep):
    dataset = make_dataset("fr-calls", {"a": ("fr", ["Bonjour [[r=1]]", "Au revoir [[r=3]]"])})
    return run_sweep(dataset=dataset, judge_versions=[judge], qa_sample=0)


@pytest.fixture
def ja_sweep(judge, scripted_llm, run_sweep):
    dataset = make_dataset("ja-calls", {"a": ("ja", ["はい"])})
    return run_sweep(dataset=dataset, judge_versions=[judge], qa_sample=0)


def test_create_api_token_prints_it_once_and_stores_only_its_hash(make_user, capsys):
    user = make_user("ci-bot", role="lead")
    call_command("create_api_token", "ci-bot", "--name", "CI gate")
    raw = capsys.readouterr().out.strip()
    token = ApiToken.objects.get(user=user)
    assert raw.startswith("trb_") and len(raw) > 40
    assert token.key_hash == token_hash(raw) and raw not in (token.key_hash, token.prefix)
    assert token.name == "CI gate" and raw.startswith(token.prefix)

    call_command("create_api_token", "ci-bot", "--revoke", token.prefix)
    token.refresh_from_db()
    assert token.revoked_at is not None


def test_missing_wrong_and_revoked_tokens_get_401(api, make_user, fr_sweep):
    url = reverse("api_sweep_detail", args=[fr_sweep.pk])
    user = make_user("lea", role="lead")
    token, raw = api_token_create(user=user, name="ci")

    assert api.get(url).status_code == 401
    wrong = api.get(url, **bearer(raw + "x"))
    assert wrong.status_code == 401 and wrong.json()["status"] == 401
    assert wrong["WWW-Authenticate"].startswith("Bearer")
    assert api.get(url, HTTP_AUTHORIZATION=f"Token {raw}").status_code == 401

    ok = api.get(url, **bearer(raw))
    assert ok.status_code == 200 and ok.json()["id"] == fr_sweep.pk
    token.refresh_from_db()
    assert token.last_used_at is not None

    api_token_revoke(token=token)
    assert api.get(url, **bearer(raw)).status_code == 401
    # The session cookie of a logged-in person is not an API credential.
    api.force_login(user)
    assert api.get(url).status_code == 401


def test_sweep_status_and_counts(api, make_user, fr_sweep):
    body = api.get(reverse("api_sweep_detail", args=[fr_sweep.pk]), **bearer(token_for(make_user("lea", role="lead"))))
    data = body.json()
    assert data["status"] == "done" and data["dataset"] == "fr-calls"
    assert data["judge_versions"] == ["conciseness@1.0"]
    assert data["counts"]["targets"] == 2 and data["counts"]["verdicts_written"] == 2
    assert data["code_version"] == fr_sweep.code_version
    assert data["gate_url"].endswith(reverse("api_sweep_gate", args=[fr_sweep.pk]))


def test_a_reviewer_token_reads_only_sweeps_in_its_languages(api, make_user, fr_sweep, ja_sweep):
    raw = token_for(make_user("ana", languages=["fr"]))
    assert api.get(reverse("api_sweep_detail", args=[fr_sweep.pk]), **bearer(raw)).status_code == 200
    denied = api.get(reverse("api_sweep_detail", args=[ja_sweep.pk]), **bearer(raw))
    assert denied.status_code == 403 and "languages" in denied.json()["error"]
    assert api.get(reverse("api_sweep_gate", args=[ja_sweep.pk]), **bearer(raw)).status_code == 403
    assert api.get(reverse("api_sweep_detail", args=[999999]), **bearer(raw)).status_code == 404


def test_gate_reuses_the_gate_report(api, make_user, fr_sweep):
    raw = token_for(make_user("lea", role="lead"))
    url = reverse("api_sweep_gate", args=[fr_sweep.pk])
    assert api.get(url, **bearer(raw)).json() == gate_report(sweep=fr_sweep).as_dict()

    strict = api.get(url, {"threshold": "overall=0.9"}, **bearer(raw)).json()
    assert strict == gate_report(sweep=fr_sweep, overrides={"overall": 0.9}).as_dict()
    assert strict["passed"] is False
    bad = api.get(url, {"threshold": "overall=lots"}, **bearer(raw))
    assert bad.status_code == 400 and "not a number" in bad.json()["error"]


def test_a_lead_token_starts_a_sweep(
    api, make_user, judge, scripted_llm, eager_celery, django_capture_on_commit_callbacks
):
    make_dataset("api-calls", {"a": ("en", ["Hello [[r=3]]"])})
    raw = token_for(make_user("lea", role="lead"))
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(
            reverse("api_sweep_create"),
            data=json.dumps({"dataset": "api-calls", "judges": ["conciseness@1.0"], "repeats": 1, "qa_sample": 0}),
            content_type="application/json",
            **bearer(raw),
        )
    assert response.status_code == 201
    sweep = Sweep.objects.get(pk=response.json()["id"])
    assert response["Location"] == reverse("api_sweep_detail", args=[sweep.pk])
    assert sweep.created_by.username == "lea" and sweep.code_version
    sweep.refresh_from_db()
    assert sweep.status == "done" and sweep.verdicts_written == 1


def test_starting_a_sweep_refuses_reviewers_and_bad_input(api, make_user, judge):
    make_dataset("api-calls", {"a": ("en", ["Hello"])})
    reviewer = token_for(make_user("ana", languages=["en"]))
    lead = token_for(make_user("lea", role="lead"))
    url = reverse("api_sweep_create")

    def post(raw, body, **extra):
        return api.post(url, data=body, content_type="application/json", **bearer(raw), **extra)

    assert post(reviewer, json.dumps({"dataset": "api-calls", "judges": ["conciseness"]})).status_code == 403
    assert post(lead, "{not json").status_code == 400
    assert post(lead, json.dumps({"judges": ["conciseness"]})).status_code == 400
    assert post(lead, json.dumps({"dataset": "nope", "judges": ["conciseness"]})).status_code == 404
    unknown = post(lead, json.dumps({"dataset": "api-calls", "judges": ["nope"]}))
    assert unknown.status_code == 400 and "No judge" in unknown.json()["error"]
    assert post(lead, json.dumps({"dataset": "api-calls", "judges": ["conciseness"], "repeats": 99})).status_code == 400
    assert (
        post(lead, json.dumps({"dataset": "api-calls", "judges": ["conciseness"], "repeats": "2"})).status_code == 400
    )
    no_target = post(lead, json.dumps({"dataset": "api-calls", "judges": ["conciseness"], "language": "ja"}))
    assert no_target.status_code == 400 and "no target" in no_target.json()["error"]
    assert api.get(url, **bearer(lead)).status_code == 405
    assert not Sweep.objects.exists()


def test_snapshots_list_and_download(api, make_user, corpus, media):
    snapshot = snapshot_write(snapshot_id=snapshot_create(judge=corpus.judge, fmt="csv", build=False).pk)
    pending = snapshot_create(judge=corpus.judge, fmt="jsonl", build=False)
    raw = token_for(make_user("lea", role="lead"))

    listed = api.get(reverse("api_snapshot_list"), **bearer(raw)).json()["snapshots"]
    assert [(s["id"], s["version"], s["status"]) for s in listed] == [
        (pending.pk, 2, "pending"),
        (snapshot.pk, 1, "done"),
    ]
    assert listed[1]["sha256"] == snapshot.sha256 and listed[1]["rows"] == 3
    assert listed[1]["download_url"].endswith(reverse("api_snapshot_download", args=[snapshot.pk]))
    assert listed[0]["download_url"] is None
    done = api.get(reverse("api_snapshot_list"), {"status": "done"}, **bearer(raw)).json()["snapshots"]
    assert [s["id"] for s in done] == [snapshot.pk]
    assert api.get(reverse("api_snapshot_list"), {"status": "odd"}, **bearer(raw)).status_code == 400

    download = api.get(reverse("api_snapshot_download", args=[snapshot.pk]), **bearer(raw))
    assert download.status_code == 200 and download["X-Checksum-Sha256"] == snapshot.sha256
    assert b"".join(download.streaming_content) == snapshot_path(snapshot).read_bytes()
    assert api.get(reverse("api_snapshot_download", args=[pending.pk]), **bearer(raw)).status_code == 409
    assert api.get(reverse("api_snapshot_download", args=[999999]), **bearer(raw)).status_code == 404


def test_a_reviewer_token_may_not_read_snapshots(api, make_user, corpus, media):
    snapshot = snapshot_write(snapshot_id=snapshot_create(judge=corpus.judge, fmt="csv", languages=["fr"]).pk)
    # Even a snapshot limited to the reviewer's own language: exports hold other people's labels.
    raw = token_for(make_user("ana", languages=["fr"]))
    assert api.get(reverse("api_snapshot_list"), **bearer(raw)).status_code == 403
    denied = api.get(reverse("api_snapshot_download", args=[snapshot.pk]), **bearer(raw))
    assert denied.status_code == 403 and denied["Content-Type"] == "application/json"


def test_the_openapi_document_lists_every_endpoint():
    import yaml
    from django.urls import resolve

    from .test_import_eva_validation import REPO

    document = yaml.safe_load((REPO / "docs" / "api" / "openapi.yaml").read_text())
    assert document["openapi"] == "3.1.0"
    resolved = {
        resolve("/api/v1" + path.replace("{sweep_id}", "1").replace("{snapshot_id}", "1")).url_name
        for path in document["paths"]
    }
    assert resolved == {
        "api_sweep_create",
        "api_sweep_detail",
        "api_sweep_gate",
        "api_snapshot_list",
        "api_snapshot_download",
    }
