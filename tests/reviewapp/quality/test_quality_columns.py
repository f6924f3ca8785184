"""The quality pages' column-wise figures are the per-pair ones, to the last bit.

`quality.version_quality` states every figure pair by pair; the pages compute them column-wise
(selectors/quality_columns.py, reading through selectors/quality_reads.py: on PostgreSQL whole columns,
elsewhere tuples). Here both run on one mixture (ordinal, binary, weighted and open-label judges, a
conversation-level one; several versions, one drafted from corrections; sweeps of one and three runs
over the same targets, some runs missing; resolved, unresolved, failed and unrated verdicts; imported,
unanimous, adjudicated and excluded gold; refused and converted labels; QA-sampled, disputed and
adjudicated items) and every figure of every version on several slices must come out the same,
floating-point sums and bootstrap intervals included.

The per-pair side reads as the pages read before they computed column-wise: a model instance per gold
label and `as_gold`, a dict per verdict and `observation_of`.
"""

import dataclasses
import random
from collections.abc import Iterator

import pytest
from django.db import connection
from django.urls import reverse

from reviewapp.models import (
    Adjudication,
    Conversation,
    Dataset,
    EdgeCase,
    EdgeCaseTag,
    GoldLabel,
    Judge,
    JudgeVersion,
    Review,
    ReviewItem,
    Role,
    Sweep,
    Turn,
    Verdict,
    VersionProvenance,
)
from reviewapp.quality.selectors import leakage, quality, quality_pairs, quality_reads, quality_slice
from reviewapp.quality.selectors.coverage import coverage_matrix
from reviewapp.quality.selectors.gold import winning_gold
from reviewapp.triage.selectors.planner import plan_cells

pytestmark = pytest.mark.django_db

LANGUAGES = ["fr", "fr-CA", "ja", "hi"]


# --- the mixture ---------------------------------------------------------------------------------------


def _answer(judge: Judge, rng: random.Random) -> dict:
    """A verdict's fields for this judge: mostly valid, sometimes refused, converted or unresolved."""
    roll = rng.random()
    if roll < 0.1:
        return {"status": Verdict.Status.UNRESOLVED}
    if roll < 0.15:
        return {"status": Verdict.Status.ERROR}
    if roll < 0.18:
        return {"status": Verdict.Status.NOT_RATED}
    if judge.scale == Judge.Scale.BINARY:
        return rng.choice(
            [{"passed": True}, {"passed": False}, {"rating": 1.0}, {"label": "FAIL"}, {"passed": True, "rating": 0.0}]
        )
    if judge.scale == Judge.Scale.WEIGHTED:
        scores = {"clarity": rng.choice([40.0, 75.5, 90.0]), "accuracy": rng.choice([10.0, 99.0])}
        return rng.choice([{"passed": True}, {"passed": False}, {"rating": 71.0}]) | {"sub_scores": scores}
    if judge.scale == "label":
        return rng.choice([{"label": "greeting"}, {"label": "refund"}, {"label": "unresolved"}, {"rating": 2.0}])
    if judge.scale_min is None:  # an ordinal judge with no bounds: ratings are labels, -0.0 one of them
        return {"rating": rng.choice([1.0, 2.5, 0.0, -0.0, 3.0])}
    return rng.choice([{"rating": 1.0}, {"rating": 2.0}, {"rating": 3.0}, {"label": "3"}, {"rating": 7.0}])


def _gold_value(judge: Judge, rng: random.Random) -> dict:
    if judge.scale == Judge.Scale.BINARY:
        return rng.choice([{"passed": True}, {"passed": False}, {"rating": 0.0}, {"label": "pass"}, {"rating": 0.5}])
    if judge.scale == Judge.Scale.WEIGHTED:
        given = {"sub_scores": {"clarity": rng.choice([50.0, 80.0]), "accuracy": 95.0}} if rng.random() < 0.6 else {}
        return {"passed": rng.random() < 0.6, "metadata": given}
    if judge.scale == "label":
        return {"label": rng.choice(["greeting", "refund", "unresolved"])}
    if judge.scale_min is None:
        return {"rating": rng.choice([1.0, 2.5, 0.0, -0.0])}
    return rng.choice([{"rating": 1.0}, {"rating": 2.0}, {"rating": 3.0}, {"passed": True}, {"label": "2"}])


def _label(judge: Judge, rng: random.Random) -> dict:
    """A review's or an adjudication's label: gold's, without gold's metadata."""
    value = _gold_value(judge, rng)
    value.pop("metadata", None)
    return value


@pytest.fixture
def mixture(make_user):
    rng = random.Random(7)
    lead = make_user("lea", role=Role.LEAD)
    reviewers = [make_user(f"rev{i}", languages=LANGUAGES) for i in range(3)]
    calls, other = Dataset.objects.create(name="calls"), Dataset.objects.create(name="other")
    judges = [
        Judge.objects.create(slug="brief", scale=Judge.Scale.ORDINAL, scale_min=1, scale_max=3),
        Judge.objects.create(slug="speaks", scale=Judge.Scale.BINARY, scale_min=0, scale_max=1),
        Judge.objects.create(slug="scored", scale=Judge.Scale.WEIGHTED, scale_min=0, scale_max=100),
        Judge.objects.create(slug="topic", scale="label"),
        Judge.objects.create(slug="loose", scale=Judge.Scale.ORDINAL),
        Judge.objects.create(
            slug="whole", level=Judge.Level.CONVERSATION, scale=Judge.Scale.ORDINAL, scale_min=1, scale_max=3
        ),
    ]
    conversations, turns = [], []
    for c in range(16):
        conversation = Conversation.objects.create(
            dataset=calls if c % 4 else other, external_id=f"c{c}", language=LANGUAGES[c % 4]
        )
        conversations.append(conversation)
        for p in range(1 + c % 4):
            turns.append(Turn.objects.create(conversation=conversation, position=p, role="agent", text=f"t{c}.{p}"))
    for judge in judges:
        targets = (
            [(c, None) for c in conversations]
            if judge.level == Judge.Level.CONVERSATION
            else [(t.conversation, t) for t in turns]
        )
        v1 = JudgeVersion.objects.create(judge=judge, version="v1", spec={}, spec_hash=f"{judge.slug}-1")
        v2 = JudgeVersion.objects.create(
            judge=judge, version="v2", spec={"pass_threshold": 2}, spec_hash=f"{judge.slug}-2"
        )
        v3 = JudgeVersion.objects.create(judge=judge, version="v3", spec={}, spec_hash=f"{judge.slug}-3")
        drafted = [[c.pk, t.pk if t else None] for c, t in targets[:3]]
        VersionProvenance.objects.create(version=v3, parent=v2, approved_by=lead, excluded=drafted)
        imported = Sweep.objects.create(kind=Sweep.Kind.IMPORT, dataset=calls, status="done")
        three = Sweep.objects.create(dataset=calls, status="done", repeats=3)
        later = Sweep.objects.create(dataset=calls, status="done")
        for version, sweep, runs, share in ((v1, imported, 1, 1.0), (v2, three, 3, 1.0), (v2, later, 1, 0.3)):
            for conversation, turn in targets:
                if rng.random() > share:
                    continue
                for run in range(runs):
                    if runs > 1 and run == 2 and rng.random() < 0.2:
                        continue  # a run that missed this target: dropped from the run comparison
                    Verdict.objects.create(
                        sweep=sweep, judge_version=version, conversation=conversation, turn=turn,
                        run_index=run, tier="imported", flags=["gloss"] if rng.random() < 0.3 else [],
                        explanation=f"run {run}", **({"status": Verdict.Status.RESOLVED} | _answer(judge, rng)),
                    )  # fmt: skip
        for conversation, turn in targets[::3]:  # v3 scored only some targets, once
            Verdict.objects.create(
                sweep=later, judge_version=v3, conversation=conversation, turn=turn, tier="imported",
                **({"status": Verdict.Status.RESOLVED} | _answer(judge, rng)),
            )  # fmt: skip
        for index, (conversation, turn) in enumerate(targets):
            if index % 7 == 6:
                continue  # no gold
            modes = ["gloss"] if rng.random() < 0.3 else []
            GoldLabel.objects.create(
                judge=judge, conversation=conversation, turn=turn, source="imported", failure_modes=modes,
                **_gold_value(judge, rng),
            )  # fmt: skip
            if index % 5 == 1:
                GoldLabel.objects.create(
                    judge=judge, conversation=conversation, turn=turn, source="unanimous", **_gold_value(judge, rng)
                )
            if index % 6 == 2:
                GoldLabel.objects.create(
                    judge=judge, conversation=conversation, turn=turn, source="adjudicated", excluded=index % 12 == 2,
                    **_gold_value(judge, rng),
                )  # fmt: skip
            if index % 3 == 0:
                continue  # no item
            reasons = rng.choice([["qa_sample"], ["gold_disagrees"], ["qa_sample", "runs_disagree"], ["uncertain"]])
            item = ReviewItem.objects.create(
                judge=judge, conversation=conversation, turn=turn, dataset=conversation.dataset,
                language=conversation.language, reasons=reasons, sample_weight=rng.choice([1.0, 4.0, 1 / 0.3]),
                reviews_required=2,
            )  # fmt: skip
            if index % 4 == 1:
                Adjudication.objects.create(item=item, lead=lead, rationale="decided", **_label(judge, rng))
            for reviewer in reviewers[: 1 + index % 3]:
                Review.objects.create(item=item, reviewer=reviewer, **_label(judge, rng))
    if connection.vendor == "postgresql":
        # The ORM writes -0.0 as 0 (an import's COPY keeps it): half the zeros of the open-rating judge become -0.
        loose = judges[4]
        verdicts = list(Verdict.objects.filter(judge_version__judge=loose, rating=0).order_by("pk").values_list("pk"))
        gold = list(GoldLabel.objects.filter(judge=loose, rating=0).order_by("pk").values_list("pk"))
        with connection.cursor() as cursor:
            for table, rows in (("reviewapp_verdict", verdicts), ("reviewapp_goldlabel", gold)):
                ids = [pk for (pk,) in rows[::2]]
                cursor.execute(f"UPDATE {table} SET rating = '-0'::float8 WHERE id = ANY(%s)", [ids])  # noqa: S608
    return {"judges": judges, "calls": calls, "three": Sweep.objects.filter(repeats=3).first()}


# --- the per-pair figures, read as the pages read before ---------------------------------------------------------


def by_pairs_gold(judge: Judge, slice: quality_slice.Slice) -> dict:
    labels = winning_gold(judge=judge, language=slice.language, dataset_ids=slice.dataset_ids)
    return {target: quality_slice.as_gold(judge, label) for target, label in labels.items()}


def by_pairs_verdicts(judge: Judge, version_ids: list[int], slice: quality_slice.Slice) -> dict:
    out: dict = {pk: {} for pk in version_ids}
    rows = (
        Verdict.objects.filter(slice.verdict_q(), judge_version_id__in=version_ids, status__in=quality_slice.RATED)
        .order_by("judge_version_id", "conversation_id", "turn_id", "-sweep_id", "run_index")
        .values(*quality_pairs.VERDICT_FIELDS)
    )
    for v in rows:
        target = out[v["judge_version_id"]].setdefault(
            quality_slice.target_key(v), quality_pairs.TargetVerdicts(v["conversation__language"])
        )
        target.runs.append(quality_pairs.observation_of(judge, v))
    return out


def by_pairs(judge, version, versions, slice, n_boot):
    gold = by_pairs_gold(judge, slice)
    items = quality_pairs.slice_items(judge, slice)
    verdicts = by_pairs_verdicts(judge, [v.pk for v in versions], slice)

    def figures(v, n, detail):
        held = leakage.held_out(gold, leakage.excluded_of(v))
        return quality.version_quality(
            version=v, targets=verdicts.get(v.pk, {}), gold=held, items=items, n_boot=n, slice=slice, detail=detail
        )

    selected = figures(version, n_boot, True)
    selected.excluded_gold = sum(1 for t in leakage.excluded_of(version) if t in gold)
    return [figures(v, 0, False) for v in versions], selected


def plain(value):
    """Every field, floats as their repr (to the last bit), dict keys in their order."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return [[plain(k), plain(v)] for k, v in value.items()]
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, float):
        return repr(value)
    if hasattr(value, "item"):  # a numpy scalar
        return plain(value.item())
    if hasattr(value, "pk"):
        return f"{type(value).__name__} {value.pk}"
    return value


def figures_of(quality_figures, *, detail: bool) -> dict:
    out = plain(quality_figures)
    scored = quality_figures.scored
    out["scored"] = plain(
        [scored.targets, scored.unresolved, scored.failed, scored.without_gold, scored.refused, scored.conversions]
    )
    if not detail:
        del out["accuracy"]  # the overview and the trend show no accuracy under both conventions
    return out


def slices(mixture) -> Iterator[tuple[str, quality_slice.Slice]]:
    yield "everything", quality_slice.Slice()
    yield "fr and fr-CA", quality_slice.Slice(language="fr")
    yield "unresolved wrong", quality_slice.Slice(unresolved="wrong")
    yield "one sweep", quality_slice.Slice(sweep_id=mixture["three"].pk)
    yield "one dataset", quality_slice.Slice(dataset_ids=(mixture["calls"].pk,), dataset_names=("calls",))


@pytest.fixture(params=["database columns", "rows"])
def lane(request, monkeypatch):
    """On PostgreSQL the reads take whole columns (and must have, here); "rows" makes them read tuples, as
    every other database does."""
    if request.param == "rows":
        monkeypatch.setattr(quality_reads, "_postgres", lambda: False)
        yield request.param
        return
    if connection.vendor != "postgresql":
        pytest.skip("whole-column reads are PostgreSQL's")
    read = quality_reads._columns
    taken = []

    def counted(*args, **kwargs):
        found = read(*args, **kwargs)
        taken.append(found is not None)
        return found

    monkeypatch.setattr(quality_reads, "_columns", counted)
    yield request.param
    assert taken and all(taken)


# --- the same figures ---------------------------------------------------------------------------------------------


def test_a_judge_page_gives_the_per_pair_figures_of_every_version_on_every_slice(mixture, lane):
    compared = 0
    for judge in mixture["judges"]:
        versions = quality.judge_versions(judge=judge)
        for name, slice in slices(mixture):
            for version in versions:
                n_boot = 200 if version == versions[1] else 0
                report = quality.judge_quality(
                    judge=judge, version=version, versions=versions, slice=slice, n_boot=n_boot
                )
                trend, selected = by_pairs(judge, version, versions, slice, n_boot)
                where = f"{judge.slug} {version.version} on {name}"
                assert figures_of(report.selected, detail=True) == figures_of(selected, detail=True), where
                assert [figures_of(t, detail=False) for t in report.trend] == [
                    figures_of(t, detail=False) for t in trend
                ], where
                compared += 1
    assert compared == 6 * 5 * 3


def test_the_mixture_has_what_the_figures_must_get_right(mixture):
    """Guards the comparison above against a mixture that would not exercise it."""
    selected = {
        j.slug: quality.judge_quality(judge=j, version=quality.judge_versions(judge=j)[1], n_boot=0).selected
        for j in mixture["judges"]
    }
    assert all(s.overall.n > 5 and s.scored.unresolved for s in selected.values())
    assert sum(s.scored.failed for s in selected.values())
    assert all(len(s.runs.rows) == 3 and s.runs.dropped for s in selected.values())
    assert selected["brief"].scored.refused and selected["brief"].scored.conversions
    assert selected["speaks"].scored.refused and selected["speaks"].scored.conversions
    assert selected["scored"].sub_scores and selected["brief"].pass_rates
    assert {source for s in selected.values() for source in s.gold_sources} == {"imported", "unanimous", "adjudicated"}
    assert selected["brief"].qa.with_gold and selected["brief"].disputed.n
    assert "unresolved" in selected["topic"].overall.labels
    if connection.vendor == "postgresql":  # SQLite keeps no sign on a zero
        assert "-0" in selected["loose"].overall.labels
    v3 = quality.judge_quality(judge=mixture["judges"][0], n_boot=0).selected
    assert v3.version.version == "v3" and v3.excluded_gold


def test_the_overview_gives_the_per_pair_point_estimates(mixture, lane):
    overview = dict(quality.quality_overview())
    for judge in mixture["judges"]:
        gold = by_pairs_gold(judge, quality_slice.Slice())
        items = quality_pairs.slice_items(judge, quality_slice.Slice())
        versions = quality.judge_versions(judge=judge)
        verdicts = by_pairs_verdicts(judge, [v.pk for v in versions], quality_slice.Slice())
        expected = [
            quality.version_quality(version=v, targets=verdicts[v.pk], gold=gold, items=items, n_boot=0, detail=False)
            for v in versions
        ]
        got = next(trend for j, trend in overview.items() if j.pk == judge.pk)
        assert [figures_of(v, detail=False) for v in got] == [figures_of(v, detail=False) for v in expected]


def test_gold_and_a_comparisons_verdicts_read_as_before(mixture):
    for judge in mixture["judges"]:
        versions = [v.pk for v in quality.judge_versions(judge=judge)]
        for _, slice in slices(mixture):
            assert quality_slice.judge_gold(judge=judge, slice=slice) == by_pairs_gold(judge, slice)
            expected = by_pairs_verdicts(judge, versions, slice)
            got = quality_pairs.slice_verdicts(judge, versions, slice)
            assert plain(got) == plain(expected)


def test_the_planner_counts_what_it_counted(mixture, lane):
    for judge in mixture["judges"]:
        for version in quality.judge_versions(judge=judge):
            gold = leakage.without_excluded(
                by_pairs_gold(judge, quality_slice.Slice()), leakage.excluded_targets(version)
            )
            latest: dict = {}
            for v in (
                Verdict.objects.filter(judge_version=version)
                .order_by("conversation_id", "turn_id", "-sweep_id", "run_index")
                .values("conversation_id", "turn_id", "status", "rating", "passed", "label", "conversation__language")
            ):
                latest.setdefault((v["conversation_id"], v["turn_id"]), v)
            expected: dict = {}
            for target, v in latest.items():
                cell = expected.setdefault(v["conversation__language"], [0, 0, 0])
                cell[0] += 1
                label = gold.get(target)
                said = quality_slice.outcome(judge, rating=v["rating"], passed=v["passed"], label=v["label"])
                if label is None or v["status"] != Verdict.Status.RESOLVED or said is None:
                    continue
                cell[1] += 1
                cell[2] += int(said == label.outcome)
            plan = plan_cells(version=version, budget=50)
            got = {c.language: [c.cell.population, c.cell.labelled, c.cell.correct] for c in plan.cells}
            assert got == dict(sorted(expected.items())), f"{judge.slug} {version.version}"


# --- a fixed number of queries ------------------------------------------------------------------------------------


def _grow(mixture, size: int) -> None:
    """More targets with verdicts, gold and items for every judge."""
    judge = mixture["judges"][0]
    conversation = Conversation.objects.create(dataset=mixture["calls"], external_id=f"more{size}", language="ja")
    turns = Turn.objects.bulk_create(
        Turn(conversation=conversation, position=p, role="agent", text="more") for p in range(size)
    )
    version = quality.judge_versions(judge=judge)[-1]
    sweep = Sweep.objects.create(kind=Sweep.Kind.IMPORT, dataset=mixture["calls"], status="done")
    Verdict.objects.bulk_create(
        Verdict(sweep=sweep, judge_version=version, conversation=conversation, turn=t, tier="imported",
                status="resolved", rating=1 + i % 3)
        for i, t in enumerate(turns)
    )  # fmt: skip
    GoldLabel.objects.bulk_create(
        GoldLabel(judge=judge, conversation=conversation, turn=t, source="imported", rating=2) for t in turns
    )
    ReviewItem.objects.bulk_create(
        ReviewItem(judge=judge, conversation=conversation, turn=t, dataset=mixture["calls"], language="ja",
                   reasons=["qa_sample"], sample_weight=2.0)
        for t in turns
    )  # fmt: skip


def test_the_index_planner_and_coverage_pages_run_a_fixed_number_of_queries(
    mixture, client, make_user, django_assert_num_queries
):
    judge = mixture["judges"][0]
    case = EdgeCase.objects.create(judge=judge, position=1, case="A caller asks twice", criteria=[])
    EdgeCaseTag.objects.create(edge_case=case, conversation=Conversation.objects.first(), source="hand")
    client.force_login(make_user("lee", role=Role.LEAD))
    pages = {
        reverse("quality_index"): 5,  # session with its user; judges, versions, gold, verdicts
        reverse(
            "plan_page", args=[judge.slug]
        ): 6,  # session with its user; judge, versions; verdicts, exclusions, gold
        # session with its user; judge; version, cases, tags, turns, verdicts, gold, exclusions
        reverse("coverage_page", args=[judge.slug]): 9,
    }
    for size in (5, 60):
        _grow(mixture, size)
        for url, queries in pages.items():
            with django_assert_num_queries(queries):
                assert client.get(url).status_code == 200
    assert coverage_matrix(judge=judge).rows
