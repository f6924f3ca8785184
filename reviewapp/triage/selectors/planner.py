"""The label planner's cells for one judge version: per language the targets scored, the gold-labelled
ones and how often the version was right, with Wilson intervals, labels needed and a budget split."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db.models import Q

from reviewapp.models import JudgeVersion
from reviewapp.quality.selectors import quality_columns as columns
from reviewapp.quality.selectors import quality_reads as reads
from reviewapp.quality.selectors.leakage import excluded_targets
from reviewapp.quality.selectors.quality_slice import Slice
from scoring import planner
from scoring.lazy import lazy_import

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_import("numpy")

DEFAULT_BUDGET = 200


@dataclass
class PlanCell:
    cell: planner.Cell
    need_5: int
    need_3: int
    allocated: int

    @property
    def language(self) -> str:
        return self.cell.key

    @property
    def interval(self):
        return self.cell.interval if self.cell.sufficient else None

    @property
    def accuracy(self):
        return self.cell.accuracy if self.cell.sufficient else None

    def as_dict(self) -> dict[str, Any]:
        c = self.cell
        return {
            "language": c.key,
            "population": c.population,
            "n": c.labelled,
            "correct": c.correct,
            "accuracy": self.accuracy if c.sufficient else planner.INSUFFICIENT,
            "interval": list(self.interval) if self.interval else planner.INSUFFICIENT,
            "labels_needed_5": self.need_5,
            "labels_needed_3": self.need_3,
            "allocated": self.allocated,
            "sufficient": c.sufficient,
        }


@dataclass
class Plan:
    version: JudgeVersion
    budget: int
    cells: list[PlanCell]
    excluded: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "judge": self.version.judge.slug,
            "version": self.version.version,
            "budget": self.budget,
            "evidence_floor": planner.EVIDENCE_FLOOR,
            "excluded_from_gold": self.excluded,
            "cells": [c.as_dict() for c in self.cells],
        }


def plan_cells(*, version: JudgeVersion, budget: int = DEFAULT_BUDGET) -> Plan:
    """A fixed number of queries: the version's verdicts, gold, its excluded targets.

    A target's verdict is the first run of its latest sweep, whatever its status; it is labelled when
    it is resolved with an outcome and the target's gold (the version's drafting evidence left out) gives
    one. Read and counted as columns (quality_reads, quality_columns): a cell counts 100k targets."""
    judge = version.judge
    labels = columns.Labels()
    answers = columns.Answers(judge, labels)
    verdicts = reads.read_verdicts(Q(), [version.pk], lambda _: answers, rated_only=False)[version.pk]
    excluded = excluded_targets(version)
    gold = reads.read_gold([judge], Slice(), {judge.pk: labels})[judge.pk]
    status, value, _, _ = answers.arrays()
    said, truth = value[verdicts.answer], gold.code[gold.rows(verdicts, excluded)]
    labelled = (status[verdicts.answer] == 0) & (said >= 0) & (truth >= 0)
    right = labelled & (said == truth)
    size = len(verdicts.languages)
    population = np.bincount(verdicts.language, minlength=size).tolist()
    labelled_n = np.bincount(verdicts.language[labelled], minlength=size).tolist()
    correct = np.bincount(verdicts.language[right], minlength=size).tolist()
    cells = [
        planner.Cell(name, population[code], labelled_n[code], correct[code])
        for name, code in sorted((name, code) for code, name in enumerate(verdicts.languages) if population[code])
    ]
    split = planner.neyman_allocation(cells, budget)
    return Plan(
        version=version,
        budget=budget,
        cells=[PlanCell(c, c.labels_needed(0.05), c.labels_needed(0.03), split[c.key]) for c in cells],
        excluded=len(excluded),
    )
