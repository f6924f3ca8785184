"""The label planner's cells for one judge version: per language the targets scored, the gold-labelled
ones and how often the version was right, with Wilson intervals, labels needed and a budget split."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from reviewapp.models import JudgeVersion, Verdict
from reviewapp.quality.selectors.leakage import excluded_targets, without_excluded
from reviewapp.quality.selectors.quality_slice import judge_gold, outcome
from scoring import planner

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
    """A fixed number of queries: the version's verdicts, gold, its excluded targets."""
    judge = version.judge
    latest: dict[tuple[int, int | None], dict] = {}
    rows = (
        Verdict.objects.filter(judge_version=version)
        .order_by("conversation_id", "turn_id", "-sweep_id", "run_index")
        .values("conversation_id", "turn_id", "status", "rating", "passed", "label", "conversation__language")
    )
    for v in rows.iterator(chunk_size=5000):
        latest.setdefault((v["conversation_id"], v["turn_id"]), v)
    excluded = excluded_targets(version)
    gold = without_excluded(judge_gold(judge=judge), excluded)
    population: dict[str, int] = defaultdict(int)
    labelled: dict[str, int] = defaultdict(int)
    correct: dict[str, int] = defaultdict(int)
    for target, v in latest.items():
        language = v["conversation__language"]
        population[language] += 1
        label = gold.get(target)
        if label is None or v["status"] != Verdict.Status.RESOLVED:
            continue
        said = outcome(judge, rating=v["rating"], passed=v["passed"], label=v["label"])
        if said is None:
            continue
        labelled[language] += 1
        correct[language] += int(said == label.outcome)
    cells = [planner.Cell(lang, population[lang], labelled[lang], correct[lang]) for lang in sorted(population)]
    split = planner.neyman_allocation(cells, budget)
    return Plan(
        version=version,
        budget=budget,
        cells=[PlanCell(c, c.labels_needed(0.05), c.labels_needed(0.03), split[c.key]) for c in cells],
        excluded=len(excluded),
    )
