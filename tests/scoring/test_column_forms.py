"""The column forms of the reports (pairs as label positions, samples as arrays) give the same figures,
bootstrap draws and floating-point sums included, as the forms that take one Python value per pair."""

import dataclasses
import random

import numpy as np
import pytest

from scoring import classification, estimates


def _identical(a, b) -> bool:
    return repr(dataclasses.asdict(a)) == repr(dataclasses.asdict(b))


SCALES = [["1", "2", "3"], ["pass", "fail"], ["10", "2", "1"], ["a", "b", "c", "d"], ["3", "1", "2", "unresolved"]]


@pytest.mark.parametrize("trial", range(60))
def test_coded_report_is_the_report(trial):
    rng = random.Random(trial)
    labels = rng.choice(SCALES)
    n = rng.choice([0, 1, 2, 7, 40, 400])
    gold = [rng.choice(labels) for _ in range(n)]
    judge = [g if rng.random() < 0.5 else rng.choice(labels) for g in gold]
    weights = [rng.choice([1.0, 1 / 0.07, 1.5, 10.0]) for _ in range(n)] if trial % 3 == 0 else None
    # One pair per conversation, or several: both ways of finding the kinds of clusters are taken.
    per = rng.choice([1, 1, 2, 5])
    clusters = [1000 + 7 * rng.randrange(max(1, n // per)) for _ in range(n)] if trial % 4 else None
    options = {"n_boot": rng.choice([0, 200, 1000]), "seed": trial % 2}
    expected = classification.classification_report(
        gold, judge, labels=labels, weights=weights, clusters=clusters, **options
    )
    index = {label: i for i, label in enumerate(labels)}
    coded = classification.coded_classification_report(
        np.array([index[g] for g in gold], dtype=int),
        np.array([index[j] for j in judge], dtype=int),
        labels=labels,
        weights=None if weights is None else np.array(weights),
        clusters=None if clusters is None else np.array(clusters),
        **options,
    )
    assert _identical(coded, expected)


def test_coded_report_refuses_positions_outside_the_labels():
    with pytest.raises(ValueError, match="outside the label set"):
        classification.coded_classification_report(np.array([0, 2]), np.array([0, 1]), labels=["pass", "fail"])


@pytest.mark.parametrize("per_cluster", [1, 3])
def test_distinct_cluster_counts_are_numpys_unique_rows(per_cluster):
    rng = np.random.default_rng(per_cluster)
    n, k = 3000, 3
    cluster = np.sort(rng.integers(0, n // per_cluster, n)) if per_cluster > 1 else rng.permutation(n)
    cell = rng.integers(0, k * k, n)
    weights = rng.choice([1.0, 1 / 0.07, 1.5], n)
    counts = np.zeros((cluster.max() + 1, k * k))
    np.add.at(counts, (cluster, cell), weights)
    kinds, how_many = np.unique(counts, axis=0, return_counts=True)
    found = (
        classification._distinct_cells(cell, weights, k * k)
        if per_cluster == 1
        else classification._distinct_rows(counts)
    )
    assert np.array_equal(found[0], kinds) and np.array_equal(found[1], how_many)


def test_integer_cluster_ids_are_numbered_in_order_of_first_appearance():
    ids = [30, 10, 30, 20, 10, 40]
    codes, count = classification._cluster_codes(np.array(ids), len(ids))
    assert count == 4 and codes.tolist() == [0, 1, 0, 2, 1, 3]
    assert classification._cluster_codes(ids, len(ids))[0].tolist() == codes.tolist()


@pytest.mark.parametrize("trial", range(40))
def test_proportion_estimate_columns_is_the_estimate(trial):
    rng = random.Random(trial)
    n = rng.choice([0, 1, 3, 30, 500])
    strata = [rng.choice(["fr", "ja", "hi"][: rng.randint(1, 3)]) for _ in range(n)]
    probability = [rng.choice([1.0, 0.1, 1 / 3, 0.07]) for _ in range(n)]
    value = [rng.choice([True, False, None]) for _ in range(n)]
    options = {"estimator": "hajek", "design": rng.choice(["stratified", "poisson"])}
    expected = estimates.proportion_estimate(
        [estimates.SampleItem(s, p, v) for s, p, v in zip(strata, probability, value, strict=True)], **options
    )
    columns = estimates.proportion_estimate_columns(
        strata,
        np.array(probability),
        np.array([bool(v) for v in value]),
        np.array([v is not None for v in value]),
        **options,
    )
    assert repr(columns) == repr(expected)
    with pytest.raises(ValueError, match=r"item 0: inclusion probability 0\.0"):
        estimates.proportion_estimate_columns(["fr"], np.array([0.0]), np.array([True]), np.array([True]))


def test_prediction_powered_rate_takes_boolean_arrays():
    rng = np.random.default_rng(2)
    human, labelled, unlabelled = rng.random(40) < 0.6, rng.random(40) < 0.7, rng.random(300) < 0.65
    as_lists = estimates.prediction_powered_rate(human.tolist(), labelled.tolist(), unlabelled.tolist())
    assert repr(estimates.prediction_powered_rate(human, labelled, unlabelled)) == repr(as_lists)
