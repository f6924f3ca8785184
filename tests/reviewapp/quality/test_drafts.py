"""A new judge version from corrections: evidence, examples, guidance, save with provenance, leakage,
the proof against noise, and the pages (full, fragment, forbidden)."""

import pytest
from django.urls import reverse

from reviewapp.judging.tasks.sweeps import sweep_queue
from reviewapp.models import AuditEvent, JudgeVersion, ProofRun, Role, VersionProvenance
from reviewapp.quality.selectors.drafts import draft_from_corrections, version_lineage
from reviewapp.quality.selectors.leakage import excluded_targets
from reviewapp.quality.selectors.proofs import proof_comparison
from reviewapp.quality.services.drafts import DraftError, draft_version_save
from reviewapp.quality.services.proofs import proof_start
from reviewapp.triage.selectors.planner import plan_cells
from tests import fake_llms, scenarios

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(make_user):
    lead = make_user("lea", role=Role.LEAD)
    reviewers = [make_user("ana", languages=["fr", "ja"]), make_user("bea", languages=["fr", "ja"])]
    return lead, reviewers


@pytest.fixture
def corpus(people):
    return scenarios.draft_corpus(*people)


@pytest.fixture
def llm(monkeypatch):
    client = fake_llms.CorrectionAwareLLM()
    monkeypatch.setattr("reviewapp.judging.services.sweeps.llm_client", lambda: client)
    return client


def saved_draft(corpus, lead, *, suffix=""):
    """Version 1.1 saved from the corrections draft of 1.0, each proposed guidance block ending in `suffix`."""
    draft = draft_from_corrections(version=corpus.v1)
    return draft_version_save(
        parent=corpus.v1,
        label="1.1",
        guidance={lang.language: lang.proposed_guidance + suffix for lang in draft.languages},
        item_ids=draft.item_ids,
        comment_ids=draft.comment_ids,
        user=lead,
    )


def copy_verdicts(source, target):
    """Give `target` the same verdicts as `source`, so both count the same targets."""
    from reviewapp.models import Verdict

    Verdict.objects.bulk_create(
        Verdict(**{**v, "id": None, "judge_version_id": target.pk})
        for v in Verdict.objects.filter(judge_version=source).values()
    )


def test_the_draft_gathers_disagreements_per_language_with_categories_and_quotes(corpus):
    draft = draft_from_corrections(version=corpus.v1)
    by_language = {lang.language: lang for lang in draft.languages}
    assert set(by_language) == {"fr", "ja"}
    fr, ja = by_language["fr"], by_language["ja"]
    assert [d.item_id for d in fr.disagreements] == [i.pk for i in corpus.fr_items]
    assert {(d.gold, d.gold_source, d.judge_said) for d in fr.disagreements} == {("fail", "adjudicated", "pass")}
    assert {(d.gold, d.gold_source) for d in ja.disagreements} == {("fail", "unanimous")}
    assert fr.categories == [("gloss", 3)]
    assert ja.categories == [("wrong-language-phrase", 2)]
    assert fr.disagreements[0].context == [("user", "Bonjour ?")]
    # The guidance groups by category and quotes the reviewers' own words.
    assert "## Reviewer corrections (fr)" in fr.proposed_guidance
    assert "- gloss (3): " in fr.proposed_guidance
    assert '"Le mot anglais entre parenthèses est lu deux fois (0)."' in fr.proposed_guidance
    assert "カタカナの後に英語が続きます。" in ja.proposed_guidance
    # The existing French block stays; the diff adds lines only.
    assert fr.current_guidance.startswith("## Language notes (French)")
    assert fr.proposed_guidance.startswith(fr.current_guidance)
    assert {kind for kind, _ in fr.diff} <= {"file", "hunk", "same", "add"}
    assert draft.comment_ids == [corpus.comment.pk]


def test_examples_cover_each_category_and_balance_labels():
    from reviewapp.quality.selectors.drafts import Disagreement, _pick_examples

    def d(item_id, gold, *categories):
        return Disagreement(item_id, (1, item_id), "fr", "t", [], gold, "adjudicated", "x", "", list(categories))

    rows = [d(1, "fail", "gloss"), d(2, "fail", "gloss"), d(3, "pass", "gloss"), d(4, "fail", "markup"), d(5, "pass")]
    chosen = _pick_examples(rows, 4)
    categories = {c for row in chosen for c in row.categories}
    assert {"gloss", "markup"} <= categories
    labels = [row.gold for row in chosen]
    assert abs(labels.count("pass") - labels.count("fail")) <= 1
    assert len(_pick_examples(rows, 2)) == 2


def test_saving_stores_an_immutable_version_with_provenance_and_exclusions(corpus, people):
    lead, _ = people
    v2 = saved_draft(corpus, lead, suffix="\nEdited by the lead.")
    assert v2.spec["language_guidance"]["fr"].rstrip().endswith("Edited by the lead.")
    assert v2.spec["language_guidance"]["fr-CA"] == corpus.v1.spec["language_guidance"]["fr-CA"]
    provenance = VersionProvenance.objects.get(version=v2)
    assert (provenance.parent, provenance.approved_by) == (corpus.v1, lead)
    assert set(provenance.items.values_list("pk", flat=True)) == {i.pk for i in corpus.fr_items + corpus.ja_items}
    assert list(provenance.comments.all()) == [corpus.comment]
    expected = {(i.conversation_id, i.turn_id) for i in corpus.fr_items + corpus.ja_items}
    assert excluded_targets(v2) == expected
    assert AuditEvent.objects.filter(action="judge_version.from_corrections", actor=lead).count() == 1
    rows = {r.version.version: r for r in version_lineage(judge=v2.judge)}
    assert rows["1.1"].parent == corpus.v1 and rows["1.1"].items == 5 and rows["1.0"].parent is None

    with pytest.raises(DraftError, match=r"already has a version '1\.1'"):
        draft_version_save(
            parent=corpus.v1, label="1.1", guidance=v2.spec["language_guidance"], item_ids=[], comment_ids=[], user=lead
        )
    unchanged = {"fr": corpus.v1.spec["language_guidance"]["fr"]}
    with pytest.raises(DraftError, match="changes nothing"):
        draft_version_save(parent=corpus.v1, label="1.2", guidance=unchanged, item_ids=[], comment_ids=[], user=lead)
    assert JudgeVersion.objects.filter(judge=v2.judge).count() == 2


def test_planner_figures_of_the_new_version_exclude_its_evidence(corpus, people):
    lead, _ = people
    v2 = saved_draft(corpus, lead)
    copy_verdicts(corpus.v1, v2)
    old = {c.language: c.cell.labelled for c in plan_cells(version=corpus.v1).cells}
    new = plan_cells(version=v2)
    assert new.excluded == 5
    assert {c.language: c.cell.labelled for c in new.cells} == {"fr": old["fr"] - 3, "ja": old["ja"] - 2}


def test_the_proof_sweeps_both_versions_and_a_rerun_and_beats_noise(
    corpus, people, llm, eager_celery, django_capture_on_commit_callbacks
):
    lead, _ = people
    v2 = saved_draft(corpus, lead)
    with django_capture_on_commit_callbacks(execute=True):
        run = proof_start(version=v2, user=lead, dispatch=sweep_queue)
    assert run.main_sweeps.count() == 1 and run.rerun_sweeps.count() == 1
    main = run.main_sweeps.get()
    assert set(main.judge_versions.all()) == {corpus.v1, v2}
    assert list(run.rerun_sweeps.get().judge_versions.all()) == [corpus.v1]
    proof = proof_comparison(run=ProofRun.objects.get(pk=run.pk), n_boot=200)
    assert proof.status == "done"
    assert proof.excluded_gold == 5
    assert proof.compared == 16  # the held-out turns only
    rows = {r.language: r for r in proof.rows}
    assert (rows["fr"].n, rows["fr"].a_right, rows["fr"].b_right) == (8, 4, 8)
    assert (rows["ja"].n, rows["ja"].a_right, rows["ja"].b_right) == (8, 4, 8)
    assert proof.noise.noise_moved == 0 and proof.noise.version_moved == 8
    assert proof.noise.exceeds_noise
    assert proof.moved_total == 8
    assert all(m.gold == "fail" and m.before == "pass" and m.after == "fail" for m in proof.moved)
    # Wilson, not bootstrap, for accuracy: statsmodels on 4 of 8.
    from statsmodels.stats.proportion import proportion_confint

    assert rows["fr"].a_wilson == pytest.approx(proportion_confint(4, 8, alpha=0.05, method="wilson"))


def test_pages_full_fragment_and_forbidden(client, corpus, people, make_user):
    lead, reviewers = people
    judge = corpus.v1.judge
    urls = [
        reverse("draft_new", args=[judge.slug]) + f"?version={corpus.v1.pk}",
        reverse("version_list", args=[judge.slug]),
        reverse("draft_version", args=[judge.slug, corpus.v1.pk]),
        reverse("plan_page", args=[judge.slug]),
        reverse("coverage_page", args=[judge.slug]),
    ]
    client.force_login(reviewers[0])
    for url in urls:
        assert client.get(url).status_code == 403, url
    client.force_login(lead)
    for url in urls:
        full = client.get(url)
        assert full.status_code == 200, url
        assert b"<html" in full.content
        fragment = client.get(url, headers={"HX-Request": "true"})
        assert fragment.status_code == 200 and b"<html" not in fragment.content, url
    page = client.get(urls[0]).content.decode()
    assert "5 items used as examples or quoted" in page.replace("\n", " ")
    quality = client.get(reverse("quality_judge", args=[judge.slug])).content.decode()
    assert reverse("draft_new", args=[judge.slug]) in quality


def test_saving_from_the_page_redirects_to_the_version(client, corpus, people):
    lead, _ = people
    judge = corpus.v1.judge
    client.force_login(lead)
    url = reverse("draft_new", args=[judge.slug])
    draft = draft_from_corrections(version=corpus.v1)
    data = {"version": corpus.v1.pk, "label": "1.1", "note": "glosses"}
    data.update({f"guidance_{lang.language}": lang.proposed_guidance for lang in draft.languages})
    response = client.post(url, data)
    v2 = JudgeVersion.objects.get(judge=judge, version="1.1")
    assert response.status_code == 302 and response.url == reverse("draft_version", args=[judge.slug, v2.pk])
    page = client.get(response.url).content.decode()
    assert "5</span> targets excluded" in page and "Start the proof" in page
    assert "5 targets left out of this version's gold." in page and "Not swept yet" in page
    again = client.post(url, data)
    assert again.status_code == 400 and "already has a version" in again.content.decode()


class RewritingLLM:
    def __init__(self):
        self.prompts = []

    def complete(self, *, model, system, user, params=None):
        from scoring.llm import LLMReply

        self.prompts.append(user)
        language = user.split("## Current guidance (", 1)[1].split(")", 1)[0]
        return LLMReply(f"## Rewritten guidance ({language})\nGlosses are defects.", 10, 5, 5, 1, "")


def test_llm_drafting_rewrites_each_block_and_archives_the_calls(client, corpus, people, monkeypatch):
    from reviewapp.models import JudgeCall

    lead, _ = people
    client.force_login(lead)
    url = reverse("draft_new", args=[corpus.v1.judge.slug])
    monkeypatch.setattr("reviewapp.judging.services.sweeps.llm_client", lambda: None)
    off = client.post(url, {"version": corpus.v1.pk, "action": "llm"}).content.decode()
    assert "LLM drafting is off" in off and not JudgeCall.objects.exists()

    llm = RewritingLLM()
    monkeypatch.setattr("reviewapp.judging.services.sweeps.llm_client", lambda: llm)
    page = client.post(url, {"version": corpus.v1.pk, "action": "llm"}).content.decode()
    calls = list(JudgeCall.objects.order_by("pk"))
    assert len(calls) == 2 and {c.judge_version_id for c in calls} == {corpus.v1.pk}
    assert all(c.sweep_id is None and c.raw_response.startswith("## Rewritten guidance") for c in calls)
    assert "## Rewritten guidance (fr)" in page and "## Rewritten guidance (ja)" in page
    assert f"archived call {calls[0].pk}" in page
    assert "Le mot anglais entre parenthèses est lu deux fois (0)." in llm.prompts[0]
    assert not JudgeVersion.objects.filter(judge=corpus.v1.judge).exclude(pk=corpus.v1.pk).exists()


def test_draft_reads_do_not_grow_with_the_evidence(corpus, people):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as first:
        draft_from_corrections(version=corpus.v1)
    lead, reviewers = people
    scenarios.add_adjudicated_glosses(lead, reviewers, corpus)
    with CaptureQueriesContext(connection) as second:
        draft = draft_from_corrections(version=corpus.v1)
    assert draft.disagreements == 7
    assert len(second) == len(first)


def test_proof_page_full_fragment_forbidden_and_running(client, corpus, people, monkeypatch):
    lead, reviewers = people
    v2 = saved_draft(corpus, lead)
    monkeypatch.setattr("reviewapp.judging.tasks.sweeps.sweep_dispatch.delay", lambda sweep_id: None)
    run = proof_start(version=v2, user=lead, dispatch=sweep_queue)
    url = reverse("proof_detail", args=[v2.judge.slug, run.pk])
    client.force_login(reviewers[0])
    assert client.get(url).status_code == 403
    client.force_login(lead)
    page = client.get(url).content.decode()
    assert "Sweeps running." in page and 'hx-trigger="every 2s"' in page and f'href="{url}"' in page
    fragment = client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in fragment and 'id="proof"' in fragment
    assert client.get(reverse("proof_detail", args=["other", run.pk])).status_code == 404
    start = reverse("proof_start", args=[v2.judge.slug, corpus.v1.pk])
    refused = client.post(start)
    assert refused.status_code == 400 and "has no parent version" in refused.content.decode()


def test_quality_and_compare_pages_leave_the_drafting_evidence_out_of_the_new_version_gold(client, corpus, people):
    from reviewapp.quality.selectors.comparisons import version_comparison
    from reviewapp.quality.selectors.quality import judge_quality, judge_versions

    lead, _ = people
    v2 = saved_draft(corpus, lead)
    copy_verdicts(corpus.v1, v2)
    judge = v2.judge
    versions = judge_versions(judge=judge)
    old = judge_quality(judge=judge, version=versions[0], versions=versions, n_boot=0).selected
    new = judge_quality(judge=judge, version=versions[1], versions=versions, n_boot=0).selected
    assert (old.overall.n, old.excluded_gold) == (21, 0)
    assert (new.overall.n, new.excluded_gold) == (16, 5)
    comparison = version_comparison(a=versions[0], b=versions[1], n_boot=0)
    assert comparison.excluded_gold == 5
    assert comparison.gold_rows[0]["n"] == 16

    client.force_login(lead)
    page = client.get(reverse("quality_judge", args=[judge.slug]) + f"?version={v2.pk}").content.decode()
    assert "5</span> gold targets left out" in page
    compare = client.get(reverse("compare_versions", args=[judge.slug]) + f"?a={corpus.v1.pk}&b={v2.pk}")
    assert "5</span> gold targets left out" in compare.content.decode()
