"""A lead's tools in the browser: an import started from the datasets page (upload, worker, progress,
errors in place) and an archived call replayed beside the original."""

import json
import re

import pytest
from django.core.files.base import ContentFile
from django.urls import reverse
from playwright.sync_api import expect

from reviewapp.models import Conversation, ImportJob, JudgeCall, Role, Turn
from scoring.llm import LLMClient
from tests import factories
from tests.llm_server import run_llm_server
from tests.reviewapp.corpus.audio_support import wav_bytes

PASSWORD = "correct-horse-battery-7"


@pytest.fixture
def lead(settings, tmp_path, make_user, eager_celery):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.TRIBUNAL_UPLOAD_DIR = tmp_path / "uploads"
    settings.TRIBUNAL_IMPORT_ROOT = tmp_path / "imports"
    return make_user("lea", role=Role.LEAD, password=PASSWORD)


def test_lead_imports_a_file_from_the_datasets_page(page, login, lead, tmp_path):
    good = tmp_path / "calls.jsonl"
    good.write_text(
        json.dumps({"external_id": "b1", "language": "fr", "turns": [{"role": "agent", "text": "Bonjour"}]}) + "\n"
    )
    bad = tmp_path / "broken.jsonl"
    bad.write_text('{"external_id": "b2", "turns": [{"role": "robot"}]}\n')
    login(page, "lea", PASSWORD)

    page.goto(reverse("dataset_list"))
    with page.expect_navigation():
        page.locator("[data-action=import]").click()
    page.locator("input[name=upload]").set_input_files(str(bad))
    with page.expect_navigation():
        page.get_by_role("button", name="Start the import").click()
    expect(page.locator("#import-progress")).to_have_attribute("data-import-status", "failed")
    expect(page.locator("#import-errors")).to_contain_text("turns[0].role")
    expect(page.locator("#import-errors")).to_contain_text("broken.jsonl")

    page.goto(reverse("import_new"))
    page.locator("input[name=upload]").set_input_files(str(good))
    page.locator("input[name=dataset_name]").fill("browser-import")
    with page.expect_navigation():
        page.get_by_role("button", name="Start the import").click()
    expect(page.locator("#import-progress")).to_have_attribute("data-import-status", "done")
    expect(page.locator("#import-bar")).to_have_attribute("value", "100")
    with page.expect_navigation():
        page.get_by_role("link", name="browser-import").click()
    assert Conversation.objects.filter(dataset__name="browser-import", external_id="b1").exists()
    assert ImportJob.objects.count() == 2


def test_lead_replays_an_archived_call_and_sees_both_answers(page, login, lead, monkeypatch, run_sweep):
    with run_llm_server() as server:
        client = LLMClient(base_url=server.base_url, api_key="test", max_attempts=1)
        monkeypatch.setattr("reviewapp.judging.services.sweeps.llm_client", lambda: client)
        monkeypatch.setattr("reviewapp.judging.services.calls.llm_client_from_settings", lambda **kw: client)
        dataset = factories.dataset_of_calls("voice", {"heard": ("fr", ["Votre siège est le 14C."])})
        conversation = Conversation.objects.get(external_id="heard")
        conversation.audio.save("heard.wav", ContentFile(wav_bytes(3000)))
        Turn.objects.filter(conversation=conversation, position=1).update(audio_start_ms=500, audio_end_ms=2500)
        run_sweep(
            dataset=dataset, judge_versions=[factories.store_judge("tts_fidelity", needs_audio=True)], qa_sample=0
        )
        call = JudgeCall.objects.get()

        login(page, "lea", PASSWORD)
        page.goto(reverse("conversation_detail", args=[conversation.pk]))
        # The call's page, known by its URL and heading rather than by its load event: with the other
        # suites running beside this one, waiting for the load event outlasted the timeout once.
        page.locator("[data-call-link]").first.click()
        expect(page).to_have_url(re.compile(re.escape(reverse("call_detail", args=[call.pk])) + "$"), timeout=15_000)
        expect(page.locator("h1")).to_contain_text(f"Archived call #{call.pk}")
        page.locator("[data-action=replay]").click()
        replay = page.locator("section.replay")
        expect(replay).to_have_attribute("data-replay-status", "done")
        expect(replay).to_contain_text("same text")
        expect(replay.locator("[data-side=old]")).to_contain_text('"rating"')
        expect(replay.locator("[data-side=new]")).to_contain_text('"rating"')
        assert server.audio_received[-1] == server.audio_received[0]
        client.close()


@pytest.fixture
def run_sweep(eager_celery):
    from reviewapp.judging.services.sweeps import sweep_start
    from reviewapp.judging.tasks.sweeps import sweep_queue

    def _run(**kwargs):
        sweep = sweep_start(
            **kwargs, dispatch=sweep_queue
        )  # the live server's database commits: the dispatch runs eagerly
        sweep.refresh_from_db()
        return sweep

    return _run
