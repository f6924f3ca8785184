"""The label planner's arithmetic against statsmodels' Wilson interval, found by brute-force search."""

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from scoring.planner import (
    EVIDENCE_FLOOR,
    Cell,
    labels_for_half_width,
    neyman_allocation,
    wilson_half_width,
    wilson_interval,
)


def half_width_statsmodels(p: float, n: int) -> float:
    low, high = proportion_confint(round(p * n), n, alpha=0.05, method="wilson")
    return (high - low) / 2


def needed_by_search(p: float, h: float) -> int:
    """Smallest n whose statsmodels Wilson interval at k = p*n (p*n an integer) is within +-h."""
    n = 1
    while True:
        low, high = proportion_confint(p * n, n, alpha=0.05, method="wilson")
        if (high - low) / 2 <= h:
            return n
        n += 1


@pytest.mark.parametrize("p", [0.5, 0.8, 0.9, 0.95])
@pytest.mark.parametrize("h", [0.05, 0.03])
def test_labels_needed_matches_a_search_over_statsmodels_wilson(p, h):
    assert labels_for_half_width(p, h) == needed_by_search(p, h)


def test_known_value_for_a_coin_at_five_points():
    # The Wilson interval at p = 0.5 is within +-5 points from n = 381 (the Wald rule of thumb says 385).
    assert labels_for_half_width(0.5, 0.05) == needed_by_search(0.5, 0.05) == 381


def test_cell_interval_is_statsmodels_wilson_and_labels_needed_subtracts_what_exists():
    cell = Cell("fr", population=500, labelled=100, correct=80)
    low, high = proportion_confint(80, 100, alpha=0.05, method="wilson")
    assert cell.interval == pytest.approx((low, high))
    assert cell.labels_needed(0.05) == needed_by_search(0.8, 0.05) - 100
    assert Cell("fr", 500, 1000, 800).labels_needed(0.05) == 0


def test_below_the_floor_the_plan_assumes_the_widest_case():
    cell = Cell("ja", population=50, labelled=EVIDENCE_FLOOR - 1, correct=EVIDENCE_FLOOR - 1)
    assert not cell.sufficient
    assert cell.planning_p == 0.5
    assert cell.labels_needed(0.05) == needed_by_search(0.5, 0.05) - (EVIDENCE_FLOOR - 1)
    assert wilson_interval(0, 0) is None


def test_neyman_allocation_follows_population_times_spread():
    cells = [Cell("fr", 1000, 100, 90), Cell("ja", 1000, 100, 60), Cell("hi", 0, 0, 0)]
    split = neyman_allocation(cells, 100)
    weights = {"fr": 1000 * math.sqrt(0.9 * 0.1), "ja": 1000 * math.sqrt(0.6 * 0.4)}
    expected_fr = 100 * weights["fr"] / (weights["fr"] + weights["ja"])
    assert split["hi"] == 0
    assert sum(split.values()) == 100
    assert abs(split["fr"] - expected_fr) < 1
    assert split["ja"] > split["fr"]


def test_neyman_allocation_without_spread_is_proportional():
    cells = [Cell("a", 300, 40, 40), Cell("b", 100, 40, 40)]
    assert neyman_allocation(cells, 8) == {"a": 6, "b": 2}
    assert neyman_allocation(cells, 0) == {"a": 0, "b": 0}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cells=st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 200), st.floats(0, 1)), min_size=1, max_size=8),
    budget=st.integers(0, 10_000),
)
def test_neyman_allocation_spends_the_whole_budget_and_never_less_than_zero(cells, budget):
    built = [Cell(f"c{i}", population=n, labelled=k, correct=round(k * p)) for i, (n, k, p) in enumerate(cells)]
    split = neyman_allocation(built, budget)
    assert all(v >= 0 for v in split.values())
    if any(c.population for c in built):
        assert sum(split.values()) == budget
    assert all(split[c.key] == 0 for c in built if c.population == 0)


@settings(deadline=None)
@given(p=st.floats(0.01, 0.99), h=st.sampled_from([0.1, 0.05, 0.03]))
def test_labels_needed_is_the_smallest_n_within_the_half_width(p, h):
    n = labels_for_half_width(p, h)
    assert wilson_half_width(p, n) <= h
    assert n == 1 or wilson_half_width(p, n - 1) > h
