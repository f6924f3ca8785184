"""Imports from the browser: upload or server path (leads only), size and path limits, a worker running the
import service, the progress fragment polling until done, and the line-numbered errors in place."""

import io
import json
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from reviewapp.corpus.services.import_jobs import ImportJobError, import_job_run, import_job_start
from reviewapp.models import Conversation, Dataset, ImportJob, Role
from tests.factories import HTMX
from tests.reviewapp.corpus.audio_support import eva_record_with_audio, wav_bytes

pytestmark = pytest.mark.django_db

GOOD = {"external_id": "c1", "language": "fr", "turns": [{"role": "user", "text": "Bonjour"}]}
BAD = {"external_id": "c2", "language": "fr", "turns": [{"role": "robot", "text": "Bip"}]}


def jsonl(*records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


@pytest.fixture(autouse=True)
def folders(settings, tmp_path):
    settings.TRIBUNAL_IMPORT_ROOT = tmp_path / "imports"
    settings.TRIBUNAL_UPLOAD_DIR = tmp_path / "uploads"
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.TRIBUNAL_IMPORT_ROOT.mkdir()
    return settings.TRIBUNAL_IMPORT_ROOT


@pytest.fixture
def lead(make_user):
    return make_user("lea", role=Role.LEAD)


@pytest.fixture
def post(client, lead, eager_celery, django_capture_on_commit_callbacks):
    client.force_login(lead)

    def _post(**data):
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(reverse("import_new"), {"fmt": "auto", **data})

    return _post


def test_form_page_and_dataset_button_for_leads_forbidden_for_reviewers(client, lead, make_user):
    client.force_login(lead)
    html = client.get(reverse("import_new")).content.decode()
    assert 'enctype="multipart/form-data"' in html and 'name="server_path"' in html
    assert reverse("import_new") in client.get(reverse("dataset_list")).content.decode()

    client.force_login(make_user("ana", languages=["fr"]))
    assert client.get(reverse("import_new")).status_code == 403
    assert client.post(reverse("import_new"), {"fmt": "auto", "server_path": "x"}).status_code == 403
    assert reverse("import_new") not in client.get(reverse("dataset_list")).content.decode()


def test_upload_runs_on_the_worker_and_the_page_shows_what_was_written(client, post):
    response = post(upload=SimpleUploadedFile("calls.jsonl", jsonl(GOOD)), dataset_name="from-browser")
    job = ImportJob.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("import_detail", args=[job.pk])
    assert (job.status, job.progress, job.source, job.source_kind) == ("done", 100, "calls.jsonl", "upload")
    dataset = Dataset.objects.get(name="from-browser")
    assert job.dataset == dataset and dataset.conversations.count() == 1

    page = client.get(reverse("import_detail", args=[job.pk])).content.decode()
    assert "<nav" in page and "1 new conversation," in page
    fragment = client.get(reverse("import_detail", args=[job.pk]), **HTMX).content.decode()
    assert fragment.lstrip().startswith('<section id="import-progress"') and "<nav" not in fragment
    assert 'hx-trigger="every 1s"' not in fragment


def test_refused_upload_shows_file_line_and_field_and_writes_nothing(client, post):
    post(upload=SimpleUploadedFile("calls.jsonl", jsonl(GOOD, BAD)))
    job = ImportJob.objects.get()
    assert job.status == "failed" and not Conversation.objects.exists()
    assert [(e["file"], e["line"], e["field"]) for e in job.errors] == [("calls.jsonl", 2, "turns[0].role")]
    page = client.get(reverse("import_detail", args=[job.pk])).content.decode()
    assert 'id="import-errors"' in page and "turns[0].role" in page and "nothing was written" in page

    post(upload=SimpleUploadedFile("calls.jsonl", jsonl(GOOD, BAD)), skip_invalid="on")
    skipped = ImportJob.objects.order_by("-pk").first()
    assert skipped.status == "done" and len(skipped.errors) == 1
    assert Conversation.objects.filter(external_id="c1").exists()


def test_a_waiting_job_polls(client, lead):
    job = import_job_start(user=lead, upload=SimpleUploadedFile("calls.jsonl", jsonl(GOOD)), dispatch=False)
    client.force_login(lead)
    fragment = client.get(reverse("import_detail", args=[job.pk]), **HTMX).content.decode()
    assert 'hx-trigger="every 1s"' in fragment and 'value="0"' in fragment
    import_job_run(job_id=job.pk)
    assert import_job_run(job_id=job.pk).status == "done"  # a second run leaves it as it is
    assert Conversation.objects.count() == 1


def test_server_path_under_the_import_root_with_eva_audio(client, post, folders, tmp_path):
    record = eva_record_with_audio(folders / "eva")
    response = post(server_path="eva/run")
    job = ImportJob.objects.get()
    assert response.status_code == 302 and job.status == "done", job.errors
    assert job.path == str(record.parent.parent.resolve())
    conversation = Conversation.objects.get(external_id="1.1.2")
    assert conversation.audio and conversation.metadata["audio"]["path"] == "audio_mixed.wav"


@pytest.mark.parametrize(
    ("server_path", "message"),
    [
        ("../outside.jsonl", "leaves the import folder"),
        ("/etc/passwd", "outside the import folder"),
        ("missing.jsonl", "Nothing at"),
        ("link.jsonl", "outside the import folder"),
    ],
)
def test_server_paths_outside_the_root_are_refused_in_the_form(post, folders, tmp_path, server_path, message):
    (tmp_path / "outside.jsonl").write_bytes(jsonl(GOOD))
    (folders / "link.jsonl").symlink_to(tmp_path / "outside.jsonl")
    response = post(server_path=server_path)
    assert response.status_code == 400 and message in response.content.decode()
    assert not ImportJob.objects.exists()


def test_size_limit_and_one_source(post, settings, folders, lead):
    settings.TRIBUNAL_IMPORT_MAX_BYTES = 50
    response = post(upload=SimpleUploadedFile("calls.jsonl", jsonl(GOOD)))
    assert response.status_code == 400 and "more than the 50 bytes" in response.content.decode()
    (folders / "big.jsonl").write_bytes(jsonl(GOOD))
    assert "more than the 50 bytes" in post(server_path="big.jsonl").content.decode()
    with pytest.raises(ImportJobError, match="not both"):
        import_job_start(user=lead, upload=SimpleUploadedFile("a.jsonl", b"x"), server_path="big.jsonl")
    with pytest.raises(ImportJobError, match="upload a"):
        import_job_start(user=lead, upload=SimpleUploadedFile("a.exe", b"x"))
    assert not ImportJob.objects.exists()


def _zip(members: dict[str, bytes], *, link: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        for name, data in members.items():
            bundle.writestr(name, data)
        if link:
            info = zipfile.ZipInfo(link)
            info.external_attr = 0o120777 << 16
            bundle.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def test_zip_of_jsonl_with_its_audio(post):
    record = {
        **GOOD,
        "audio": "audio/c1.wav",
        "turns": [{"role": "user", "text": "Bonjour", "audio_start_ms": 0, "audio_end_ms": 500}],
    }
    bundle = _zip({"calls.jsonl": jsonl(record), "audio/c1.wav": wav_bytes(1000)})
    post(upload=SimpleUploadedFile("calls.zip", bundle))
    job = ImportJob.objects.get()
    assert job.status == "done", job.errors
    assert Conversation.objects.get(external_id="c1").audio


@pytest.mark.parametrize(
    ("members", "link", "message"),
    [
        ({"../evil.jsonl": b"x"}, None, "would land outside the upload"),
        ({"/abs.jsonl": b"x"}, None, "would land outside the upload"),
        ({"calls.jsonl": b"x"}, "audio.wav", "is a link"),
    ],
)
def test_zip_members_that_escape_are_refused(post, members, link, message, tmp_path):
    response = post(upload=SimpleUploadedFile("run.zip", _zip(members, link=link)))
    assert response.status_code == 400 and message in response.content.decode()
    assert not ImportJob.objects.exists() and not (tmp_path / "evil.jsonl").exists()


def test_job_page_runs_a_fixed_number_of_queries(client, lead, django_assert_max_num_queries):
    job = import_job_start(user=lead, upload=SimpleUploadedFile("calls.jsonl", jsonl(GOOD, BAD)), dispatch=False)
    import_job_run(job_id=job.pk)
    client.force_login(lead)
    client.get(reverse("import_detail", args=[job.pk]))
    with django_assert_max_num_queries(4):
        assert client.get(reverse("import_detail", args=[job.pk])).status_code == 200


def test_job_page_is_for_leads_only(client, lead, make_user):
    job = import_job_start(user=lead, upload=SimpleUploadedFile("calls.jsonl", jsonl(GOOD)), dispatch=False)
    client.force_login(make_user("ana", languages=["fr"]))
    assert client.get(reverse("import_detail", args=[job.pk])).status_code == 403
    assert client.get(reverse("import_detail", args=[job.pk]), **HTMX).status_code == 403
