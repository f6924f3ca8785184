"""Before / after: how labels moved between two judge versions, against the movement of a rerun, and McNemar's exact test."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scoring.lazy import lazy_import

# numpy is loaded by the first statistic computed, not by every page or command that imports this.
if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_import("numpy")

from scoring.agreement import label_order
from scoring.records import record_dict

# --- before/after ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Movement:
    labels: list[str]
    matrix: list[list[int]]  # rows: before (A), columns: after (B)
    n: int
    moved: int
    moves: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.moved / self.n if self.n else 0.0


def movement_matrix(before: Sequence[str], after: Sequence[str], *, labels: Sequence[str] | None = None) -> Movement:
    """How each target's label moved from A to B: a labels x labels count matrix and the off-diagonal moves."""
    if len(before) != len(after):
        raise ValueError(f"{len(before)} labels before and {len(after)} after")
    labels = list(labels) if labels is not None else label_order(before, after)
    from sklearn.metrics import confusion_matrix

    matrix = confusion_matrix(list(before), list(after), labels=labels) if before else np.zeros((len(labels),) * 2)
    moves = {
        (a, b): int(matrix[i][j]) for i, a in enumerate(labels) for j, b in enumerate(labels) if i != j and matrix[i][j]
    }
    return Movement(
        labels=labels,
        matrix=[[int(x) for x in row] for row in np.asarray(matrix).tolist()],
        n=len(before),
        moved=sum(moves.values()),
        moves=moves,
    )


@dataclass(frozen=True)
class NoiseComparison:
    """B's movement against a rerun of A on the same targets (paired, exact McNemar test)."""

    n: int
    version_moved: int
    noise_moved: int
    only_version: int  # moved from A to B but not between A's two runs
    only_noise: int  # moved between A's runs but not from A to B
    p_value: float
    alpha: float
    exceeds_noise: bool

    @property
    def version_rate(self) -> float:
        return self.version_moved / self.n if self.n else 0.0

    @property
    def noise_rate(self) -> float:
        return self.noise_moved / self.n if self.n else 0.0

    def statement(self, a: str = "A", b: str = "B") -> str:
        if self.n == 0:
            return f"No target has both a rerun of {a} and a verdict of {b}: the noise baseline cannot be measured."
        head = (
            f"{b} moved {self.version_moved} of {self.n} targets ({self.version_rate:.1%}); "
            f"rerunning {a} with no change moved {self.noise_moved} ({self.noise_rate:.1%}). "
        )
        test = (
            f"Exact McNemar test on the {self.only_version + self.only_noise} targets that moved in only one of "
            f"the two ({self.only_version} vs {self.only_noise}): p = {self.p_value:.3g}. "
        )
        if self.exceeds_noise:
            verdict = f"The change from {a} to {b} is larger than run-to-run noise (p < {self.alpha:g})."
        else:
            verdict = f"The change from {a} to {b} is not distinguishable from run-to-run noise (p >= {self.alpha:g})."
        return head + test + verdict

    def as_dict(self) -> dict[str, Any]:
        return record_dict(
            self, "n", "version_moved", "noise_moved", "only_version", "only_noise", "p_value", "exceeds_noise"
        )


def movement_vs_noise(
    version_moved: Sequence[bool], noise_moved: Sequence[bool], *, alpha: float = 0.05
) -> NoiseComparison:
    """Is B's movement larger than what rerunning A moves? One pair of booleans per target.

    Exact McNemar test: among targets that moved in exactly one comparison, under "B moves no more than
    noise" each is equally likely to be a version-only or a noise-only move; a one-sided binomial
    test on the version-only count says whether B moves more.
    """
    if len(version_moved) != len(noise_moved):
        raise ValueError(f"{len(version_moved)} version flags and {len(noise_moved)} noise flags")
    only_version = sum(1 for v, r in zip(version_moved, noise_moved, strict=True) if v and not r)
    only_noise = sum(1 for v, r in zip(version_moved, noise_moved, strict=True) if r and not v)
    discordant = only_version + only_noise
    from scipy.stats import binomtest

    p_value = float(binomtest(only_version, discordant, 0.5, alternative="greater").pvalue) if discordant else 1.0
    return NoiseComparison(
        n=len(version_moved),
        version_moved=sum(bool(v) for v in version_moved),
        noise_moved=sum(bool(r) for r in noise_moved),
        only_version=only_version,
        only_noise=only_noise,
        p_value=p_value,
        alpha=alpha,
        exceeds_noise=p_value < alpha,
    )


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b and c discordant pairs (e.g. pass->fail vs fail->pass)."""
    if b + c == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(b, b + c, 0.5, alternative="two-sided").pvalue)
