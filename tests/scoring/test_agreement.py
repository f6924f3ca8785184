"""Agreement statistics, cross-checked against scikit-learn and krippendorff on EVA's real conciseness labels."""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score, confusion_matrix, f1_score

from scoring import agreement, before_after, classification

EVA_CONCISENESS = (
    Path(__file__).resolve().parents[3] / "shared/data/eva/docs/metrics/judge_validation_datasets/conciseness.jsonl"
)


@pytest.fixture(scope="module")
def eva_gold() -> list[str]:
    """The human conciseness rating (1-3) of every labelled agent turn in EVA's validation set."""
    labels = []
    for line in EVA_CONCISENESS.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        for turn in record["conv_turns"]:
            if turn.get("expected_rating") is not None:
                labels.append(str(turn["expected_rating"]))
    assert len(labels) == 479
    return labels


def noisy_judge(gold: list[str], *, error_rate: float, seed: int) -> list[str]:
    """A synthetic judge: right except on a known share of turns, where it picks another rating."""
    rng = np.random.default_rng(seed)
    out = []
    for label in gold:
        if rng.random() < error_rate:
            out.append(str(rng.choice([r for r in ("1", "2", "3") if r != label])))
        else:
            out.append(label)
    return out


@pytest.mark.parametrize("error_rate", [0.0, 0.1, 0.35])
def test_metrics_equal_scikit_learn_on_eva_conciseness(eva_gold, error_rate):
    judge = noisy_judge(eva_gold, error_rate=error_rate, seed=7)
    report = classification.classification_report(eva_gold, judge, n_boot=400)
    labels = ["1", "2", "3"]

    assert report.n == 479
    assert report.labels == labels
    assert report.accuracy.value == pytest.approx(accuracy_score(eva_gold, judge))
    assert report.macro_f1.value == pytest.approx(f1_score(eva_gold, judge, average="macro", labels=labels))
    assert report.kappa.value == pytest.approx(cohen_kappa_score(eva_gold, judge, labels=labels))
    per_class = f1_score(eva_gold, judge, average=None, labels=labels, zero_division=0)
    assert [report.per_class_f1[label] for label in labels] == pytest.approx(list(per_class))
    assert report.confusion == confusion_matrix(eva_gold, judge, labels=labels).tolist()
    # The injected error rate is recovered, and the 95% interval holds the point estimate.
    assert report.accuracy.value == pytest.approx(1 - error_rate, abs=0.05)
    for estimate in (report.accuracy, report.macro_f1, report.kappa):
        if error_rate == 0.0:
            assert estimate.value == pytest.approx(1.0)
        else:
            assert estimate.low < estimate.value < estimate.high
            assert estimate.high - estimate.low < 0.2


def test_bootstrap_reads_each_resample_like_scikit_learn(eva_gold):
    """The vectorised readings used for resamples equal scikit-learn on any confusion matrix, weighted or not."""
    judge = noisy_judge(eva_gold, error_rate=0.25, seed=3)
    labels = ["1", "2", "3"]
    rng = np.random.default_rng(11)
    for _ in range(20):
        index = rng.integers(0, len(eva_gold), len(eva_gold))
        weights = rng.uniform(0.5, 20, len(eva_gold))
        gold = [eva_gold[i] for i in index]
        pred = [judge[i] for i in index]
        for w in (None, weights):
            matrix = confusion_matrix(gold, pred, labels=labels, sample_weight=w)
            read = classification.metrics_from_confusion(matrix)
            assert float(read["accuracy"]) == pytest.approx(accuracy_score(gold, pred, sample_weight=w))
            # Macro-F1 over the classes present, scikit-learn's default when not given `labels`.
            assert float(read["macro_f1"]) == pytest.approx(
                f1_score(gold, pred, average="macro", sample_weight=w, zero_division=0)
            )
            assert float(read["kappa"]) == pytest.approx(cohen_kappa_score(gold, pred, labels=labels, sample_weight=w))


def test_weighted_report_equals_scikit_learn_with_sample_weight(eva_gold):
    judge = noisy_judge(eva_gold, error_rate=0.2, seed=5)
    weights = [1.0 if label == "3" else 12.5 for label in eva_gold]
    report = classification.classification_report(eva_gold, judge, weights=weights, n_boot=200)
    assert report.weighted
    assert report.accuracy.value == pytest.approx(accuracy_score(eva_gold, judge, sample_weight=weights))
    assert report.macro_f1.value == pytest.approx(f1_score(eva_gold, judge, average="macro", sample_weight=weights))
    assert report.kappa.value == pytest.approx(cohen_kappa_score(eva_gold, judge, sample_weight=weights))


def test_bootstrap_is_reproducible_and_seeded(eva_gold):
    judge = noisy_judge(eva_gold, error_rate=0.2, seed=1)
    first = classification.classification_report(eva_gold, judge, n_boot=300, seed=4)
    again = classification.classification_report(eva_gold, judge, n_boot=300, seed=4)
    other = classification.classification_report(eva_gold, judge, n_boot=300, seed=5)
    assert first.macro_f1 == again.macro_f1 and first.kappa == again.kappa
    assert (first.macro_f1.low, first.macro_f1.high) != (other.macro_f1.low, other.macro_f1.high)
    # Accuracy's interval is Wilson: no resampling, so the seed does not move it.
    assert first.accuracy == other.accuracy


def test_weighted_accuracy_corrects_a_biased_sample():
    """A QA sample that over-draws the easy stratum: the plain mean is biased, the weighted one is not.

    Population: 10,000 easy turns (judge right 95%) and 10,000 hard turns (judge right 55%), so the judge
    is right on 75% of turns. The sample takes half of the easy turns and 2% of the hard ones.
    """
    rng = np.random.default_rng(2024)
    correct, weights = [], []
    for size, right, rate in ((10_000, 0.95, 0.5), (10_000, 0.55, 0.02)):
        taken = rng.random(size) < rate
        outcomes = rng.random(size) < right
        correct.extend(bool(o) for o in outcomes[taken])
        weights.extend([1 / rate] * int(taken.sum()))
    population_accuracy = 0.75

    unweighted = float(np.mean(correct))
    weighted = classification.weighted_accuracy(correct, weights, n_boot=500)

    assert unweighted > 0.9  # biased towards the easy stratum
    assert weighted.value == pytest.approx(population_accuracy, abs=0.04)
    assert weighted.low < population_accuracy < weighted.high
    assert not (weighted.low < unweighted < weighted.high)


def test_krippendorff_alpha_equals_the_krippendorff_package(eva_gold):
    """Three synthetic reviewers built from the real gold, each noisy, each missing some items."""
    rng = np.random.default_rng(9)
    reviewers = [noisy_judge(eva_gold, error_rate=rate, seed=seed) for rate, seed in ((0.1, 1), (0.2, 2), (0.3, 3))]
    present = rng.random((3, len(eva_gold))) < 0.8
    matrix = np.full((3, len(eva_gold)), np.nan)
    units = []
    for item in range(len(eva_gold)):
        unit = []
        for r in range(3):
            if present[r, item]:
                matrix[r, item] = float(reviewers[r][item])
                unit.append(reviewers[r][item])
        units.append(unit)

    for level in ("nominal", "ordinal", "interval"):
        expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level)
        assert agreement.krippendorff_alpha(units, level=level) == pytest.approx(expected)
    # Perfect agreement is 1; a single value used everywhere leaves alpha undefined.
    assert agreement.krippendorff_alpha([[g, g] for g in eva_gold]) == pytest.approx(1.0)
    assert agreement.krippendorff_alpha([["3", "3"], ["3", "3"]]) is None


def test_mean_std_over_runs():
    spread = agreement.mean_std([0.8, 0.9, None, 0.85])
    assert spread.runs == 3
    assert spread.mean == pytest.approx(0.85)
    assert spread.std == pytest.approx(np.std([0.8, 0.9, 0.85], ddof=1))
    assert agreement.mean_std([0.7]).std is None


def test_movement_matrix_counts_each_move():
    before = ["pass", "pass", "pass", "fail", "fail", "pass"]
    after = ["fail", "fail", "pass", "fail", "pass", "pass"]
    movement = before_after.movement_matrix(before, after)
    assert movement.labels == ["pass", "fail"]
    assert movement.matrix == [[2, 2], [1, 1]]
    assert movement.moves == {("pass", "fail"): 2, ("fail", "pass"): 1}
    assert movement.moved == 3 and movement.n == 6


def test_movement_larger_than_noise_is_called_so():
    # 300 targets: B moves 40 of them, a rerun of A moves 6 (2 of those also move under B).
    version = [i < 40 for i in range(300)]
    noise = [i in (0, 1, 100, 101, 102, 103) for i in range(300)]
    result = before_after.movement_vs_noise(version, noise)
    assert (result.version_moved, result.noise_moved, result.only_version, result.only_noise) == (40, 6, 38, 4)
    assert result.p_value < 1e-6 and result.exceeds_noise
    assert "is larger than run-to-run noise" in result.statement("v1", "v2")

    same = before_after.movement_vs_noise([i < 6 for i in range(300)], [150 <= i < 157 for i in range(300)])
    assert not same.exceeds_noise
    assert "not distinguishable from run-to-run noise" in same.statement()


def test_mcnemar_exact_matches_the_binomial_definition():
    assert before_after.mcnemar_exact(0, 0) == 1.0
    assert before_after.mcnemar_exact(10, 0) == pytest.approx(2 * 0.5**10)
    assert before_after.mcnemar_exact(5, 5) == pytest.approx(1.0)


@pytest.fixture(scope="module")
def eva_conversations() -> list[str]:
    """The conversation of each labelled agent turn, in the order of `eva_gold`."""
    ids = []
    for line in EVA_CONCISENESS.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        ids.extend(record["conversation_id"] for t in record["conv_turns"] if t.get("expected_rating") is not None)
    return ids


def test_a_slice_is_scored_on_its_own_pairs_whatever_else_is_in_the_label_set(eva_gold, eva_conversations):
    """Other versions' answers or another dataset's pass/fail gold in the label set leave V's figures alone."""
    v1 = noisy_judge(eva_gold, error_rate=0.2, seed=21)
    leaky = ["1", "2", "3", "4", "pass", "fail"]
    own = classification.classification_report(eva_gold, v1, labels=["1", "2", "3"], clusters=eva_conversations)
    wide = classification.classification_report(eva_gold, v1, labels=leaky, clusters=eva_conversations)
    for report in (own, wide):
        assert report.accuracy.value == pytest.approx(accuracy_score(eva_gold, v1))
        assert report.macro_f1.value == pytest.approx(f1_score(eva_gold, v1, average="macro"))
        assert report.kappa.value == pytest.approx(cohen_kappa_score(eva_gold, v1))
        assert report.clusters == 100
    assert own.kappa_quadratic.value == pytest.approx(
        cohen_kappa_score(eva_gold, v1, labels=["1", "2", "3"], weights="quadratic")
    )
    assert wide.kappa_quadratic is None  # "pass" in the label set: no numeric scale to weigh by
    assert (own.macro_f1.low, own.macro_f1.high) == (wide.macro_f1.low, wide.macro_f1.high)
    assert own.evidence.sufficient
