"""Where labels are needed next: Wilson intervals per cell, labels needed for a target precision, and a
review budget split across cells by Neyman allocation.

A cell is one judge version in one language: N targets scored (the population), n of them with gold,
k of those where the judge was right. Its accuracy interval is the 95% Wilson score interval. The
labels needed for +-h points is the smallest total n' whose Wilson half-width (half the interval's
width) at the current accuracy is at most h (agreement.labels_needed), minus the n already labelled.
The evidence rule is agreement.evidence's, the same everywhere: fewer than 30 pairs, or an interval
wider than +-10 points, is "insufficient evidence"; the accuracy is then no claim and the arithmetic
plans with p = 0.5, the widest case.

Neyman allocation gives cell h the share N_h * S_h / sum(N_j * S_j) of the budget, S_h = sqrt(p_h (1 - p_h))
on the current estimate (0.5 below the floor); the integer split keeps the largest remainders.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scoring import agreement

EVIDENCE_FLOOR = agreement.MIN_EVIDENCE_N
Z95 = 1.959963984540054
TARGETS = (0.05, 0.03)
INSUFFICIENT = "insufficient evidence"


def wilson_interval(k: int, n: int) -> tuple[float, float] | None:
    """The 95% Wilson score interval of k successes in n (statsmodels), None when n is 0."""
    if n <= 0:
        return None
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    return float(low), float(high)


def wilson_half_width(p: float, n: int, z: float = Z95) -> float:
    """Half the width of the Wilson interval at observed proportion p with n trials (closed form)."""
    if n <= 0:
        return math.inf
    return (z / (1 + z * z / n)) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))


def labels_for_half_width(p: float, half_width: float) -> int:
    """The smallest n whose Wilson interval at rate p is within +-half_width (agreement.labels_needed)."""
    if not 0 < half_width < 0.5:
        raise ValueError(f"a half-width is between 0 and 0.5, not {half_width}")
    return agreement.labels_needed(p, half_width)


def sufficient(correct: int, labelled: int) -> bool:
    """The one evidence rule (agreement.evidence): enough pairs and an interval narrow enough for a claim."""
    return labelled > 0 and agreement.evidence(labelled, correct).sufficient


@dataclass(frozen=True)
class Cell:
    key: str  # language code (or any label of the cell)
    population: int  # N: targets the version scored
    labelled: int  # n: targets with gold
    correct: int  # k: of those, the judge was right

    @property
    def sufficient(self) -> bool:
        return sufficient(self.correct, self.labelled)

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.labelled if self.labelled else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.correct, self.labelled)

    @property
    def planning_p(self) -> float:
        """The proportion the arithmetic plans with: the estimate, or 0.5 below the evidence floor."""
        return self.accuracy if self.sufficient and self.accuracy is not None else 0.5

    def labels_needed(self, half_width: float) -> int:
        return max(0, labels_for_half_width(self.planning_p, half_width) - self.labelled)


def neyman_allocation(cells: Sequence[Cell], budget: int) -> dict[str, int]:
    """Split `budget` labels across cells in proportion to N_h * sqrt(p_h (1 - p_h)); integers that sum
    to the budget (largest remainders; ties to the earlier cell). A cell with no spread anywhere (every
    estimate 0 or 1) falls back to proportional allocation."""
    if budget < 0:
        raise ValueError("a budget is zero or more labels")
    weights = [c.population * math.sqrt(c.planning_p * (1 - c.planning_p)) for c in cells]
    if sum(weights) <= 0:
        weights = [float(c.population) for c in cells]
    total = sum(weights)
    if total <= 0 or budget == 0:
        return {c.key: 0 for c in cells}
    exact = [budget * w / total for w in weights]
    whole = [math.floor(x) for x in exact]
    left = budget - sum(whole)
    order = sorted(range(len(cells)), key=lambda i: (-(exact[i] - whole[i]), i))
    for i in order[:left]:
        whole[i] += 1
    return {c.key: whole[i] for i, c in enumerate(cells)}
