"""One gold everywhere, and the quality, comparison and triage pages three ways with their query counts.

A target carrying imported, unanimous and adjudicated gold is judged against the adjudication on the
conversation page, the quality page, the comparison page and in exports alike."""

import re

import pytest
from django.urls import reverse
from sklearn.metrics import accuracy_score

from reviewapp.corpus.selectors import corpus
from reviewapp.exports.selectors.export_filters import ExportFilters
from reviewapp.exports.selectors.export_rows import export_rows
from reviewapp.models import (
    Conversation,
    Dataset,
    GoldLabel,
    Judge,
    JudgeVersion,
    ReviewItem,
    Role,
    Sweep,
    Turn,
    Verdict,
)
from reviewapp.quality.selectors import comparisons, quality, quality_slice
from tests.factories import HTMX, VerdictFactory

pytestmark = pytest.mark.django_db

# Six agent turns of an ordinal 1..3 judge. Turn 0 has all three gold sources, turn 1 imported + unanimous.
IMPORTED = [1, 1, 2, 3, 3, 1]
UNANIMOUS = {0: 2, 1: 2}
ADJUDICATED = {0: 3}
V1 = [3, 2, 2, 3, 1, 1]
V1_RERUN = [3, 2, 1, 3, 1, 2]
V2 = [2, 2, 3, 3, 2, 1]


def winning(index: int) -> int:
    return ADJUDICATED.get(index, UNANIMOUS.get(index, IMPORTED[index]))


def make_turns(dataset: Dataset, count: int, language: str) -> list[Turn]:
    conversation = Conversation.objects.create(
        dataset=dataset, external_id=f"{dataset.name}-{Conversation.objects.count()}", language=language
    )
    return list(
        Turn.objects.bulk_create(
            Turn(conversation=conversation, position=p, role="agent", text=f"Turn {p} <b>bold</b>")
            for p in range(count)
        )
    )


def verdicts(version: JudgeVersion, sweep: Sweep, turns: list[Turn], ratings: list[int], run: int = 0) -> None:
    """Resolved imported verdicts, one rating per turn."""
    Verdict.objects.bulk_create(
        VerdictFactory.build(sweep=sweep, judge_version=version, turn=t, run_index=run, rating=r)
        for t, r in zip(turns, ratings, strict=True)
    )


@pytest.fixture
def scored():
    judge = Judge.objects.create(slug="brevity", scale=Judge.Scale.ORDINAL, scale_min=1, scale_max=3)
    dataset = Dataset.objects.create(name="calls")
    turns = make_turns(dataset, 3, "fr") + make_turns(dataset, 3, "fr-CA")
    v1 = JudgeVersion.objects.create(judge=judge, version="v1", spec={}, spec_hash="brevity-v1")
    v2 = JudgeVersion.objects.create(judge=judge, version="v2", spec={}, spec_hash="brevity-v2")
    first = Sweep.objects.create(kind=Sweep.Kind.IMPORT, dataset=dataset, status="done")
    verdicts(v1, first, turns, V1)
    verdicts(v1, first, turns, V1_RERUN, run=1)
    verdicts(v2, Sweep.objects.create(kind=Sweep.Kind.IMPORT, dataset=dataset, status="done"), turns, V2)
    for source, ratings in (
        ("imported", dict(enumerate(IMPORTED))),
        ("unanimous", UNANIMOUS),
        ("adjudicated", ADJUDICATED),
    ):
        GoldLabel.objects.bulk_create(
            GoldLabel(judge=judge, conversation=turns[i].conversation, turn=turns[i], source=source, rating=r)
            for i, r in ratings.items()
        )
    # An excluded adjudication never wins: turn 1's gold stays the unanimous one.
    GoldLabel.objects.create(
        judge=judge, conversation=turns[1].conversation, turn=turns[1], source="adjudicated", rating=3, excluded=True
    )
    return {"judge": judge, "dataset": dataset, "turns": turns, "v1": v1, "v2": v2}


def test_conversation_quality_comparison_and_exports_agree_on_which_gold_wins(scored, client, make_user):
    judge, turns, v1, v2 = scored["judge"], scored["turns"], scored["v1"], scored["v2"]
    expected = [str(winning(i)) for i in range(6)]
    sources = {0: "adjudicated", 1: "unanimous"}

    # 1. The conversation page: the agreement mark is against the adjudication on turn 0.
    conversation = corpus.conversation_detail(conversation=turns[0].conversation)
    turn0 = conversation.turn_list[0]
    mark = {(v.judge_version.version, v.run_index): (v.agrees, v.gold_source) for v in turn0.judged}
    assert mark[("v1", 0)] == (V1[0] == winning(0), "adjudicated")
    assert mark[("v2", 0)] == (V2[0] == winning(0), "adjudicated")
    assert [g.source for g in turn0.gold if g.wins] == ["adjudicated"]
    client.force_login(make_user("lea", role=Role.LEAD))
    html = client.get(reverse("conversation_detail", args=[turns[0].conversation_id])).content.decode()
    assert "counts as gold" in html and 'title="Same value as the adjudicated gold label"' in html

    # 2. The quality figures.
    selected = quality.judge_quality(judge=judge, version=v1, n_boot=0).selected
    assert selected.gold_sources == {"adjudicated": 1, "unanimous": 1, "imported": 4}
    assert selected.overall.accuracy.value == pytest.approx(accuracy_score(expected, [str(r) for r in V1]))
    page = client.get(reverse("quality_judge", args=["brevity"]), {"version": v1.pk}).content.decode()
    assert "adjudicated: 1" in page and "unanimous: 1" in page and "imported: 4" in page

    # 3. The comparison on gold.
    comparison = comparisons.version_comparison(a=v1, b=v2, n_boot=0)
    overall = comparison.gold_rows[0]
    assert overall["a"].accuracy.value == pytest.approx(accuracy_score(expected, [str(r) for r in V1]))
    assert overall["b"].accuracy.value == pytest.approx(accuracy_score(expected, [str(r) for r in V2]))

    # 4. Exports.
    rows = [row for chunk in export_rows(judge=judge, filters=ExportFilters()) for row in chunk]
    by_turn = {row.turn.pk: row.gold for row in rows}
    assert {i: by_turn[turns[i].pk].source for i in (0, 1)} == sources
    assert [int(by_turn[t.pk].rating) for t in turns] == [winning(i) for i in range(6)]


def test_comparison_counts_ordinal_moves_up_and_down_against_the_rerun_per_language(scored):
    comparison = comparisons.version_comparison(a=scored["v1"], b=scored["v2"], n_boot=0)
    up = sum(1 for a, b in zip(V1, V2, strict=True) if b > a)
    down = sum(1 for a, b in zip(V1, V2, strict=True) if b < a)
    noise_up = sum(1 for a, b in zip(V1, V1_RERUN, strict=True) if b > a)
    noise_down = sum(1 for a, b in zip(V1, V1_RERUN, strict=True) if b < a)
    d = comparison.directions
    assert (d.version.up, d.version.down, d.noise.up, d.noise.down) == (up, down, noise_up, noise_down)
    fr = next(v for lang, v, _ in d.by_language if lang == "fr")
    assert (fr.up, fr.down) == (
        sum(1 for a, b in zip(V1[:3], V2[:3], strict=True) if b > a),
        sum(1 for a, b in zip(V1[:3], V2[:3], strict=True) if b < a),
    )
    assert d.statement == f"{up} up / {down} down from A to B, vs {noise_up} / {noise_down} between two runs of A."


def _grow(scored, size: int) -> None:
    """More verdicts, gold and items: the pages' query counts must not change."""
    turns = make_turns(scored["dataset"], size, "ja")
    sweep = Sweep.objects.create(kind=Sweep.Kind.IMPORT, dataset=scored["dataset"], status="done")
    verdicts(scored["v1"], sweep, turns, [1 + i % 3 for i in range(size)])
    verdicts(scored["v2"], sweep, turns, [1 + (i + 1) % 3 for i in range(size)])
    GoldLabel.objects.bulk_create(
        GoldLabel(judge=scored["judge"], conversation=t.conversation, turn=t, source="imported", rating=1 + i % 2)
        for i, t in enumerate(turns)
    )
    for t in turns[:3]:
        ReviewItem.objects.create(
            judge=scored["judge"],
            conversation=t.conversation,
            turn=t,
            dataset=scored["dataset"],
            language="ja",
            reasons=["qa_sample"],
            sample_weight=4.0,
        )


QUALITY_QUERIES = 8  # the same whatever the number of verdicts, gold labels and items
COMPARE_QUERIES = 9


def test_quality_page_full_fragment_forbidden_and_a_fixed_number_of_queries(
    scored, client, make_user, django_assert_num_queries
):
    client.force_login(make_user("lea", role=Role.LEAD))
    url = reverse("quality_judge", args=["brevity"])
    html = client.get(url, {"version": scored["v1"].pk, "unresolved": "wrong", "dataset": "calls"}).content.decode()
    for text in ("Wilson", "conversation-level bootstrap", "classes present", "Hajek", "unresolved counted wrong"):
        assert text in html
    assert 'id="per-run"' in html and 'id="conventions"' in html and 'class="intervalchart"' in html
    assert "Insufficient evidence" in html and "labels in all" in html
    assert not re.search(r"\sstyle=", html) and "<script>" not in html and "<b>bold</b>" not in html

    fragment = client.get(url, {"language": "fr"}, **HTMX).content.decode()
    assert fragment.lstrip().startswith('<section id="quality-report"') and "<html" not in fragment
    bad = client.get(url, {"dataset": "nowhere"}, **HTMX)
    assert bad.status_code == 400 and "Select a valid choice" in bad.content.decode()
    assert client.get(url, {"version": "nope"}).status_code == 404

    for size in (4, 40):
        _grow(scored, size)
        with django_assert_num_queries(QUALITY_QUERIES):
            assert client.get(url, {"version": scored["v1"].pk}).status_code == 200
        with django_assert_num_queries(QUALITY_QUERIES):
            assert client.get(url, {"language": "ja"}, **HTMX).status_code == 200

    client.force_login(make_user("ana", languages=["fr"]))
    assert client.get(url).status_code == 403
    assert client.get(url, **HTMX).status_code == 403


def test_compare_page_full_fragment_forbidden_and_a_fixed_number_of_queries(
    scored, client, make_user, django_assert_num_queries
):
    client.force_login(make_user("lea", role=Role.LEAD))
    url = reverse("compare_versions", args=["brevity"])
    params = {"a": scored["v1"].pk, "b": scored["v2"].pk}
    html = client.get(url, params).content.decode()
    assert 'id="directions"' in html and "up /" in html and "the rerun's split" in html
    fragment = client.get(url, params, **HTMX).content.decode()
    assert fragment.lstrip().startswith('<section id="comparison"') and "<html" not in fragment
    for size in (4, 40):
        _grow(scored, size)
        with django_assert_num_queries(COMPARE_QUERIES):
            assert client.get(url, params).status_code == 200
    client.force_login(make_user("ana", languages=["fr"]))
    assert client.get(url, params).status_code == 403


def test_dataset_triage_button_full_fragment_and_forbidden(scored, client, make_user):
    dataset = scored["dataset"]
    detail = reverse("dataset_detail", args=[dataset.pk])
    url = reverse("dataset_triage", args=[dataset.pk])
    ana = make_user("ana", languages=["fr"])
    client.force_login(ana)
    assert url not in client.get(detail).content.decode()
    assert client.post(url, {"qa_rate": "0.5"}).status_code == 403
    assert not ReviewItem.objects.exists()

    client.force_login(make_user("lea", role=Role.LEAD))
    assert f'hx-post="{url}"' in client.get(detail).content.decode()
    page = client.post(url, {"qa_rate": "0.5"})
    assert page.status_code == 200 and "<html" in page.content.decode()
    items = list(ReviewItem.objects.all())
    qa = [i for i in items if "qa_sample" in i.reasons]
    # Two languages of three turns each: ceil(0.5 * 3) = 2 sampled in each, probability 2/3.
    assert len(qa) == 4 and all(i.sample_weight == pytest.approx(1.5) for i in qa)
    assert {i.turn_id for i in items if "gold_disagrees" in i.reasons} == {
        t.pk
        for i, t in enumerate(scored["turns"])
        if V1[i] != winning(i) or V2[i] != winning(i) or V1_RERUN[i] != winning(i)
    }
    fragment = client.post(url, {"qa_rate": "0.5"}, **HTMX).content.decode()
    assert fragment.lstrip().startswith('<section id="triage-result"') and "0 items queued" in fragment
    assert ReviewItem.objects.count() == len(items)
    bad = client.post(url, {"qa_rate": "2"}, **HTMX)
    assert bad.status_code == 400 and "Nothing was queued" in bad.content.decode()


def test_comparison_works_for_a_conversation_level_judge(client, make_user):
    judge = Judge.objects.create(
        slug="whole-call", level=Judge.Level.CONVERSATION, scale=Judge.Scale.ORDINAL, scale_min=1, scale_max=3
    )
    dataset = Dataset.objects.create(name="calls")
    conversations = [Conversation.objects.create(dataset=dataset, external_id=f"c{i}", language="fr") for i in range(4)]
    a = JudgeVersion.objects.create(judge=judge, version="a", spec={}, spec_hash="whole-a")
    b = JudgeVersion.objects.create(judge=judge, version="b", spec={}, spec_hash="whole-b")
    sweep = Sweep.objects.create(kind=Sweep.Kind.IMPORT, dataset=dataset, status="done")
    for version, ratings in ((a, [1, 2, 3, 3]), (b, [2, 2, 1, 3])):
        Verdict.objects.bulk_create(
            Verdict(sweep=sweep, judge_version=version, conversation=c, tier="imported", status="resolved", rating=r)
            for c, r in zip(conversations, ratings, strict=True)
        )
    GoldLabel.objects.bulk_create(
        GoldLabel(judge=judge, conversation=c, source="imported", rating=r)
        for c, r in zip(conversations, [2, 2, 3, 3], strict=True)
    )
    comparison = comparisons.version_comparison(a=a, b=b, n_boot=0)
    assert comparison.compared == 4 and comparison.movement.moved == 2
    assert (comparison.directions.version.up, comparison.directions.version.down) == (1, 1)
    assert comparison.gold_rows[0]["a"].accuracy.value == pytest.approx(3 / 4)
    assert comparison.gold_rows[0]["b"].accuracy.value == pytest.approx(3 / 4)
    client.force_login(make_user("lea", role=Role.LEAD))
    html = client.get(reverse("compare_versions", args=["whole-call"]), {"a": a.pk, "b": b.pk}).content.decode()
    assert "1 up / 1 down" in html


def test_compare_page_takes_a_dataset_slice(scored, client, make_user):
    other = Dataset.objects.create(name="other")
    turns = make_turns(other, 4, "fr")
    sweep = Sweep.objects.create(kind=Sweep.Kind.IMPORT, dataset=other, status="done")
    verdicts(scored["v1"], sweep, turns, [1, 1, 1, 1])
    verdicts(scored["v2"], sweep, turns, [3, 3, 3, 3])
    everything = comparisons.version_comparison(a=scored["v1"], b=scored["v2"], n_boot=0)
    only_calls = comparisons.version_comparison(
        a=scored["v1"], b=scored["v2"], n_boot=0, slice=quality_slice.slice_for(datasets=["calls"])
    )
    assert (everything.compared, only_calls.compared) == (10, 6)
    assert everything.directions.version.up == only_calls.directions.version.up + 4
    client.force_login(make_user("lea", role=Role.LEAD))
    url = reverse("compare_versions", args=["brevity"])
    params = {"a": scored["v1"].pk, "b": scored["v2"].pk}
    html = client.get(url, {**params, "dataset": "calls"}).content.decode()
    assert f"{only_calls.movement.moved} of 6 targets moved" in html
    bad = client.get(url, {**params, "dataset": "nowhere"}, **HTMX)
    assert bad.status_code == 400 and "Select a valid choice" in bad.content.decode()
