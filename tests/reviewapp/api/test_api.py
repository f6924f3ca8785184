"""The JSON API: token auth, sweeps (start, status, gate), snapshots (list, download), language limits."""

import json
from datetime import datetime

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from reviewapp.exports.services.exports import snapshot_create, snapshot_path, snapshot_write
from reviewapp.judging.selectors.sweeps import gate_report
from reviewapp.models import ApiToken, Sweep
from reviewapp.people.services.api_tokens import (
    READ_SNAPSHOTS,
    READ_SWEEPS,
    RUN_SWEEPS,
    SCOPES,
    ApiTokenError,
    api_token_create,
    api_token_revoke,
    token_hash,
)
from tests.factories import dataset_of_calls, store_judge

pytestmark = pytest.mark.django_db


@pytest.fixture
def api():
    """A client that enforces CSRF like a browser would: the token alone must be enough."""
    return Client(enforce_csrf_checks=True)


def bearer(raw: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


def token_for(user, scopes=None, languages=()) -> str:
    """A token with every scope its user's role allows, unless `scopes` says otherwise."""
    if scopes is None:
        scopes = SCOPES if user.profile.role in ("lead", "admin") else [READ_SWEEPS]
    return api_token_create(user=user, name="ci", scopes=scopes, languages=languages)[1]


@pytest.fixture
def judge():
    return store_judge("conciseness")


@pytest.fixture
def fr_sweep(judge, scripted_llm, run_sweep):
    dataset = dataset_of_calls("fr-calls", {"a": ("fr", ["Bonjour [[r=1]]", "Au revoir [[r=3]]"])})
    return run_sweep(dataset=dataset, judge_versions=[judge], qa_sample=0)


@pytest.fixture
def ja_sweep(judge, scripted_llm, run_sweep):
    dataset = dataset_of_calls("ja-calls", {"a": ("ja", ["はい"])})
    return run_sweep(dataset=dataset, judge_versions=[judge], qa_sample=0)


def test_create_api_token_prints_it_once_and_stores_only_its_hash(make_user, capsys):
    user = make_user("ci-bot", role="lead")
    call_command("create_api_token", "ci-bot", "--name", "CI gate", "--scope", "read-snapshots")
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
    token, raw = api_token_create(user=user, name="ci", scopes=[READ_SWEEPS])

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
    # ISO 8601 in UTC to the millisecond, as DjangoJSONEncoder writes it.
    created = fr_sweep.created_at
    assert data["created_at"].endswith("Z")
    assert datetime.fromisoformat(data["created_at"]) == created.replace(microsecond=created.microsecond // 1000 * 1000)
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
    dataset_of_calls("api-calls", {"a": ("en", ["Hello [[r=3]]"])})
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
    dataset_of_calls("api-calls", {"a": ("en", ["Hello"])})
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
    assert download.streaming  # read from disk as it is sent, never whole into memory
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

    from tests.reviewapp.corpus.test_import_eva_validation import REPO

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


# --- scopes, languages and JSON errors ---------------------------------------------------------------


def test_a_read_only_token_cannot_start_a_sweep(api, make_user, judge, fr_sweep):
    dataset_of_calls("api-calls", {"a": ("en", ["Hello"])})
    raw = token_for(make_user("lea", role="lead"), scopes=[READ_SWEEPS, READ_SNAPSHOTS])
    response = api.post(
        reverse("api_sweep_create"),
        data=json.dumps({"dataset": "api-calls", "judges": ["conciseness"]}),
        content_type="application/json",
        **bearer(raw),
    )
    assert response.status_code == 403 and response["Content-Type"] == "application/json"
    assert response.json() == {
        "error": "This token lacks the run-sweeps scope (it has: read-sweeps, read-snapshots).",
        "status": 403,
    }
    assert Sweep.objects.count() == 1  # only fr_sweep
    # It reads what it may.
    assert api.get(reverse("api_sweep_detail", args=[fr_sweep.pk]), **bearer(raw)).status_code == 200
    assert api.get(reverse("api_snapshot_list"), **bearer(raw)).status_code == 200


def test_a_snapshot_token_reads_no_sweep_and_run_sweeps_implies_reading_them(api, make_user, fr_sweep):
    lead = make_user("lea", role="lead")
    snapshots_only = token_for(lead, scopes=[READ_SNAPSHOTS])
    denied = api.get(reverse("api_sweep_gate", args=[fr_sweep.pk]), **bearer(snapshots_only))
    assert denied.status_code == 403 and "read-sweeps" in denied.json()["error"]
    runner = token_for(lead, scopes=[RUN_SWEEPS])
    assert api.get(reverse("api_sweep_detail", args=[fr_sweep.pk]), **bearer(runner)).status_code == 200
    assert api.get(reverse("api_snapshot_list"), **bearer(runner)).status_code == 403


def test_a_token_limited_to_a_language(api, make_user, judge, fr_sweep, ja_sweep):
    raw = token_for(make_user("lea", role="lead"), scopes=[RUN_SWEEPS], languages=["fr"])
    assert api.get(reverse("api_sweep_detail", args=[fr_sweep.pk]), **bearer(raw)).status_code == 200
    other = api.get(reverse("api_sweep_detail", args=[ja_sweep.pk]), **bearer(raw))
    assert other.status_code == 403 and "limited to fr" in other.json()["error"]
    dataset_of_calls("mixed", {"a": ("fr-CA", ["Bonjour"]), "b": ("en", ["Hello"])})

    def start(**body):
        return api.post(
            reverse("api_sweep_create"),
            data=json.dumps({"dataset": "mixed", "judges": ["conciseness"], **body}),
            content_type="application/json",
            **bearer(raw),
        )

    assert start().status_code == 403  # every language of the dataset: not only fr
    assert start(language="en").status_code == 403
    before = Sweep.objects.count()
    assert start(language="fr-CA").status_code == 201  # "fr" covers fr-CA
    assert Sweep.objects.count() == before + 1


def test_token_scopes_are_checked_when_created(make_user, capsys):
    reviewer = make_user("ana", languages=["fr"])
    with pytest.raises(ApiTokenError, match="cannot have read-snapshots, run-sweeps"):
        api_token_create(user=reviewer, name="ci", scopes=[RUN_SWEEPS, READ_SNAPSHOTS])
    with pytest.raises(ApiTokenError, match="Unknown scope 'admin'"):
        api_token_create(user=reviewer, name="ci", scopes=["admin"])
    with pytest.raises(ApiTokenError, match="at least one scope"):
        api_token_create(user=reviewer, name="ci", scopes=[])
    with pytest.raises(ApiTokenError, match="does not work in ja"):
        api_token_create(user=reviewer, name="ci", scopes=[READ_SWEEPS], languages=["ja"])
    with pytest.raises(ApiTokenError, match="not a BCP 47"):
        api_token_create(user=reviewer, name="ci", scopes=[READ_SWEEPS], languages=['"><svg>'])
    with pytest.raises(ApiTokenError, match="at most 200"):
        api_token_create(user=reviewer, name="x" * 201, scopes=[READ_SWEEPS])
    assert not ApiToken.objects.exists()

    lead = make_user("lea", role="lead")
    call_command("create_api_token", "lea", "--name", "CI", "--scope", "run-sweeps", "--language", "fr")
    token = ApiToken.objects.get(user=lead)
    assert (token.scopes, token.languages) == (["run-sweeps"], ["fr"])
    assert "scopes run-sweeps, languages fr" in capsys.readouterr().err
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="--scope is required"):
        call_command("create_api_token", "lea", "--name", "CI")


def test_every_api_url_answers_json_errors(api, make_user, fr_sweep):
    raw = token_for(make_user("lea", role="lead"))
    for path in ("/api/v1/nothing", "/api/v1/sweeps/1/gates", "/api/", "/api", "/api/v2/sweeps"):
        response = api.get(path, **bearer(raw))
        assert response.status_code == 404, path
        assert response["Content-Type"] == "application/json" and response.json()["status"] == 404
    missing = api.get(reverse("api_sweep_detail", args=[999999]), **bearer(raw))
    assert missing.status_code == 404 and missing.json()["status"] == 404


def test_the_gate_of_an_import_sweep_is_a_json_409_not_a_500(api, make_user, fr_sweep):
    from reviewapp.models import Conversation, Judge, JudgeVersion, Turn, Verdict

    judge = Judge.objects.create(slug="imported_judge", scale="binary")
    version = JudgeVersion.objects.create(judge=judge, version="v1", spec={"imported": True}, spec_hash="x" * 64)
    sweep = Sweep.objects.create(kind=Sweep.Kind.IMPORT, status=Sweep.Status.DONE, dataset=fr_sweep.dataset)
    sweep.judge_versions.set([version])
    turn = Turn.objects.filter(conversation__dataset=fr_sweep.dataset, role="agent").first()
    Verdict.objects.create(
        sweep=sweep,
        judge_version=version,
        conversation=Conversation.objects.get(pk=turn.conversation_id),
        turn=turn,
        tier="imported",
        status="resolved",
        passed=True,
    )
    response = api.get(reverse("api_sweep_gate", args=[sweep.pk]), **bearer(token_for(make_user("lea", role="lead"))))
    assert response.status_code == 409 and response["Content-Type"] == "application/json"
    assert "an import of verdicts" in response.json()["error"]


def test_an_unexpected_failure_is_a_json_500(api, make_user, fr_sweep, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("reviewapp.judging.selectors.sweeps.gate_report", broken)
    response = api.get(
        reverse("api_sweep_gate", args=[fr_sweep.pk]), **bearer(token_for(make_user("lea", role="lead")))
    )
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    assert response.json()["status"] == 500 and "boom" not in response.json()["error"]


def test_a_sweep_says_which_signature_versions_it_used(api, make_user, judge, scripted_llm, run_sweep):
    from reviewapp.judging.services.signatures import signature_create

    dataset = dataset_of_calls("greetings", {"a": ("en", ["Have a good day.", "Your flight is at nine."])})
    closing = dataset.conversations.get().turns.get(position=1)
    signature = signature_create(
        judge=judge.judge,
        language="en",
        intent="closing",
        kind="substring",
        pattern="have a good day",
        evidence=[closing],
        rating=3.0,
    )
    sweep = run_sweep(dataset=dataset, judge_versions=[judge], qa_sample=0)
    body = api.get(reverse("api_sweep_detail", args=[sweep.pk]), **bearer(token_for(make_user("lea", role="lead"))))
    assert body.json()["signature_versions"] == [{"signature": signature.pk, "version": 1}]
    assert body.json()["counts"]["tier1_resolved"] == 1


# --- a fixed number of queries ------------------------------------------------------------------------


def test_reading_a_sweep_takes_a_fixed_number_of_queries(
    api, make_user, judge, scripted_llm, run_sweep, django_assert_num_queries
):
    raw = token_for(make_user("lea", role="lead"))
    small = run_sweep(dataset=dataset_of_calls("one", {"a": ("fr", ["Un"])}), judge_versions=[judge], qa_sample=0)
    texts = [f"Phrase {n} [[r=2]]" for n in range(6)]
    large = run_sweep(
        dataset=dataset_of_calls("many", {f"c{n}": ("fr", texts) for n in range(4)}),
        judge_versions=[judge],
        qa_sample=0,
    )
    # the token, its last-used stamp, the sweep, its judge versions, their judges, its signature versions
    for sweep in (small, large):
        with django_assert_num_queries(6):
            assert api.get(reverse("api_sweep_detail", args=[sweep.pk]), **bearer(raw)).status_code == 200
        raw = token_for(make_user(f"lea-{sweep.pk}", role="lead"))  # a fresh token: its last-used stamp is written


def test_listing_snapshots_takes_a_fixed_number_of_queries(api, make_user, corpus, media, django_assert_num_queries):
    raw = token_for(make_user("lea", role="lead"))
    api.get(reverse("api_snapshot_list"), **bearer(raw))  # stamps the token's last use once
    snapshot_create(judge=corpus.judge, fmt="csv", build=False)
    with django_assert_num_queries(2):  # the token, the snapshots with their judges
        assert len(api.get(reverse("api_snapshot_list"), **bearer(raw)).json()["snapshots"]) == 1
    for fmt in ("jsonl", "csv", "jsonl"):
        snapshot_create(judge=corpus.judge, fmt=fmt, build=False)
    with django_assert_num_queries(2):
        assert len(api.get(reverse("api_snapshot_list"), **bearer(raw)).json()["snapshots"]) == 4
