"""Judge quality on EVA's real conciseness set, with the mixture a real team has: two versions, three runs,
an unrelated dataset of pass/fail gold for the same judge, a QA sample. Every expected figure is computed
here from the arrays the test wrote, with scikit-learn, statistics and the binomial variance."""

import json
import math
import random
import statistics
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score
from statsmodels.stats.proportion import proportion_confint

from reviewapp.corpus.services.imports import dataset_import
from reviewapp.models import Conversation, Dataset, GoldLabel, Judge, JudgeVersion, ReviewItem, Sweep, Turn, Verdict
from tests.factories import VerdictFactory

REPO = Path(__file__).resolve().parents[3]
CONCISENESS = (
    REPO / ".." / "shared" / "data" / "eva" / "docs" / "metrics" / "judge_validation_datasets" / "conciseness.jsonl"
)

pytestmark = pytest.mark.django_db


def _answer(rng: random.Random, gold: int, *, right: float, unresolved: float) -> int | None:
    """A judge's rating for a turn whose gold is `gold`: right with probability `right`, else another point."""
    if rng.random() < unresolved:
        return None
    if rng.random() < right:
        return gold
    return rng.choice([r for r in (1, 2, 3) if r != gold])


def _write_runs(version: JudgeVersion, sweep: Sweep, labels: list[GoldLabel], runs: list[list[int | None]]) -> None:
    Verdict.objects.bulk_create(
        Verdict(
            sweep=sweep,
            judge_version=version,
            conversation_id=g.conversation_id,
            turn_id=g.turn_id,
            run_index=run_index,
            tier=Verdict.Tier.IMPORTED,
            status=Verdict.Status.RESOLVED if rating is not None else Verdict.Status.UNRESOLVED,
            rating=rating,
            raw_text="" if rating is not None else "I cannot tell.",
        )
        for run_index, ratings in enumerate(runs)
        for g, rating in zip(labels, ratings, strict=True)
    )


@pytest.fixture
def eva():
    """EVA's 479 labelled turns, v1's three runs in one sweep (a few unresolved), nothing else yet."""
    dataset_import(path=CONCISENESS, fmt="auto", dataset_name=None, language=None, skip_invalid=False)
    judge = Judge.objects.get(slug="conciseness")
    labels = list(GoldLabel.objects.filter(judge=judge).order_by("conversation_id", "turn__position"))
    assert len(labels) == 479
    gold = [int(g.rating) for g in labels]
    rng = random.Random(9)
    v1 = JudgeVersion.objects.create(judge=judge, version="v1", spec={}, spec_hash="eva-conciseness-v1")
    sweep = Sweep.objects.create(kind=Sweep.Kind.IMPORT, dataset=labels[0].conversation.dataset, status="done")
    runs = [[_answer(rng, g, right=0.74, unresolved=0.03) for g in gold] for _ in range(3)]
    _write_runs(v1, sweep, labels, runs)
    return {"judge": judge, "labels": labels, "gold": gold, "v1": v1, "sweep": sweep, "runs": runs, "rng": rng}


def _other_imports(eva) -> None:
    """A second version that answers 3 far too often, and an unrelated 20-turn dataset with pass/fail gold."""
    judge, labels, rng = eva["judge"], eva["labels"], eva["rng"]
    v2 = JudgeVersion.objects.create(judge=judge, version="v2", spec={}, spec_hash="eva-conciseness-v2")
    sweep = Sweep.objects.create(kind=Sweep.Kind.IMPORT, dataset=labels[0].conversation.dataset, status="done")
    _write_runs(v2, sweep, labels, [[3 if rng.random() < 0.6 else g for g in eva["gold"]]])

    other = Dataset.objects.create(name="unrelated-pass-fail")
    conversation = Conversation.objects.create(dataset=other, external_id="u-1", language="en")
    turns = Turn.objects.bulk_create(
        Turn(conversation=conversation, position=p, role="agent", text=f"Turn {p}.") for p in range(20)
    )
    GoldLabel.objects.bulk_create(
        GoldLabel(judge=judge, conversation=conversation, turn=t, source="imported", passed=p % 3 != 0)
        for p, t in enumerate(turns)
    )
    unrelated = Sweep.objects.create(kind=Sweep.Kind.IMPORT, dataset=other, status="done")
    Verdict.objects.bulk_create(
        VerdictFactory.build(sweep=unrelated, judge_version=eva["v1"], turn=t, rating=3, passed=True) for t in turns
    )


def report(*args) -> dict:
    out = StringIO()
    call_command("judge_report", "--json", "--judge", "conciseness", "--bootstrap", "100", *args, stdout=out)
    return json.loads(out.getvalue())


def _v1_pairs(eva) -> tuple[list[str], list[str]]:
    """v1's own pairs: its first run on EVA's turns, unresolved answers left out."""
    pairs = [(str(g), str(j)) for g, j in zip(eva["gold"], eva["runs"][0], strict=True) if j is not None]
    return [g for g, _ in pairs], [j for _, j in pairs]


def _assert_sklearn(result: dict, y_true: list[str], y_pred: list[str]) -> None:
    assert result["n"] == len(y_true)
    assert result["accuracy"]["value"] == pytest.approx(accuracy_score(y_true, y_pred), abs=1e-4)
    assert result["macro_f1"]["value"] == pytest.approx(f1_score(y_true, y_pred, average="macro"), abs=1e-4)
    assert result["kappa"]["value"] == pytest.approx(cohen_kappa_score(y_true, y_pred), abs=1e-4)
    for key in ("accuracy", "macro_f1", "kappa"):
        assert result[key]["low"] < result[key]["value"] < result[key]["high"]


def test_a_version_gets_exactly_scikit_learns_figures_on_its_own_pairs_before_and_after_other_imports(eva):
    y_true, y_pred = _v1_pairs(eva)
    before = report("--version", "v1")
    _assert_sklearn(before, y_true, y_pred)
    assert before["labels"] == ["1", "2", "3"] and before["refused"]["n"] == 0

    _other_imports(eva)
    after = report("--version", "v1")
    _assert_sklearn(after, y_true, y_pred)
    for key in ("accuracy", "macro_f1", "kappa", "labels", "per_class_f1"):
        assert after[key] == before[key]
    # The unrelated dataset's pass/fail gold is on another field: its 20 pairs are refused and counted.
    assert after["refused"]["n"] == 20
    (reason,) = after["refused"]["reasons"]
    assert "passed" in reason and "rating" in reason
    # A slice of the EVA dataset alone gives the same figures and refuses nothing.
    only_eva = report("--version", "v1", "--dataset", "conciseness")
    _assert_sklearn(only_eva, y_true, y_pred)
    assert only_eva["refused"]["n"] == 0 and only_eva["slice"]["datasets"] == ["conciseness"]
    # v2's figures are v2's own: its ratings against the same gold.
    v2 = report("--version", "v2")
    assert v2["n"] == 479 and v2["accuracy"]["value"] != after["accuracy"]["value"]


def test_unresolved_wrong_reproduces_evas_figure_from_three_runs(eva):
    result = report("--version", "v1", "--unresolved", "wrong", "--sweep", str(eva["sweep"].pk))
    per_run = [sum(1 for g, j in zip(eva["gold"], run, strict=True) if j == g) / 479 for run in eva["runs"]]
    assert result["runs_accuracy"]["runs"] == 3
    assert result["runs_accuracy"]["mean"] == pytest.approx(statistics.mean(per_run), abs=1e-4)
    assert result["runs_accuracy"]["std"] == pytest.approx(statistics.stdev(per_run), abs=1e-4)
    runs = result["runs"]["per_run"]
    assert [r["n"] for r in runs] == [479, 479, 479]
    assert [r["unresolved"] for r in runs] == [sum(j is None for j in run) for run in eva["runs"]]
    assert result["runs"]["unresolved_after_first_run"] == sum(j is None for run in eva["runs"][1:] for j in run)
    # The other convention, side by side: unresolved answers out of the denominator.
    excluded = [
        sum(1 for g, j in zip(eva["gold"], run, strict=True) if j == g) / sum(j is not None for j in run)
        for run in eva["runs"]
    ]
    assert result["runs_accuracy_excluded"]["mean"] == pytest.approx(statistics.mean(excluded), abs=1e-4)
    right = sum(1 for g, j in zip(eva["gold"], eva["runs"][0], strict=True) if j == g)
    assert result["accuracy_wrong"]["n"] == 479
    assert result["accuracy_wrong"]["value"] == pytest.approx(right / 479, abs=1e-4)
    assert result["accuracy_excluded"]["value"] == pytest.approx(right / (479 - eva["runs"][0].count(None)), abs=1e-4)


def test_triage_queues_a_qa_sample_whose_disagreement_rate_matches_the_population(eva):
    _other_imports(eva)
    rate = 0.25
    out = StringIO()
    call_command("triage", "--dataset", "conciseness", "--qa-rate", str(rate), "--judge", "conciseness", stdout=out)
    assert "qa_sample" in out.getvalue() and "gold_disagrees" in out.getvalue()

    items = list(ReviewItem.objects.filter(judge=eva["judge"]))
    qa = [item for item in items if "qa_sample" in item.reasons]
    sampled = {item.turn_id for item in qa}
    n, population = len(sampled), 479
    assert n == math.ceil(rate * population)  # one language: ceil(0.25 * 479) turns
    assert all(item.sample_weight == pytest.approx(population / n) for item in qa)
    wrong = {g.turn_id: g.rating != j for g, j in zip(eva["labels"], eva["runs"][0], strict=True) if j is not None}
    p = sum(wrong.values()) / len(wrong)
    in_sample = [wrong[t] for t in sampled if t in wrong]
    p_sample = sum(in_sample) / len(in_sample)
    # Within sampling error (3 standard errors, finite population corrected); an agreement-picked
    # sample would have a disagreement rate of 0.
    se = math.sqrt(p * (1 - p) / len(in_sample) * (1 - len(in_sample) / len(wrong)))
    assert abs(p_sample - p) < 3 * se
    # Every disagreement with gold is queued too, sampled or not.
    disagreeing = {item.turn_id for item in items if "gold_disagrees" in item.reasons}
    assert {t for t, w in wrong.items() if w} <= disagreeing

    # The quality page's Hajek estimate reads the sample and says how much gold is missing (none: EVA's gold).
    result = report("--version", "v1", "--dataset", "conciseness")
    qa_sample = result["qa_sample"]
    assert qa_sample["estimator"] == "hajek" and qa_sample["missing"] == 0
    # Sampled turns whose answer is unresolved are outside the population of resolved answers.
    assert qa_sample["sampled"] == len(in_sample) and qa_sample["with_gold"] == len(in_sample)
    assert qa_sample["accuracy"]["value"] == pytest.approx(1 - p_sample, abs=1e-4)
    # Its interval is Wilson's (statsmodels) at the sample's effective size, from the textbook variance of
    # a mean drawn at the rate n / population: (1 - rate) s^2 / m. Whether the interval covers the
    # population's own rate depends on the draw (a 95% interval misses one draw in twenty; the draw
    # follows the ids the database gave), so that is not asserted of one draw: the 3-standard-error
    # check above is the draw's.
    accuracy = [0.0 if w else 1.0 for w in in_sample]
    variance = (1 - n / population) * statistics.variance(accuracy) / len(accuracy)
    mean = statistics.mean(accuracy)
    n_eff = mean * (1 - mean) / variance
    low, high = proportion_confint(mean * n_eff, n_eff, method="wilson")
    assert (qa_sample["accuracy"]["low"], qa_sample["accuracy"]["high"]) == pytest.approx((low, high), abs=1e-4)
    assert qa_sample["accuracy"]["low"] < qa_sample["accuracy"]["value"] < qa_sample["accuracy"]["high"]
