"""The edge-case coverage matrix of a rubric judge: for each tagged case and each criterion, how many agent
turns the case has, the criterion's pass rate on them (Wilson interval) and how many are human-labelled."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from reviewapp.judging.services import judges
from reviewapp.models import EdgeCase, EdgeCaseTag, Judge, JudgeVersion, Turn, Verdict
from reviewapp.quality.selectors.gold import winning_gold_values
from reviewapp.quality.selectors.leakage import excluded_targets, without_excluded
from reviewapp.quality.selectors.quality_slice import gold_fields, gold_kinds
from scoring import planner
from scoring.records import record_dict
from scoring.specs import Criterion


@dataclass
class CoverageCell:
    criterion: str
    targeted: bool  # the case names this criterion
    turns: int
    scored: int
    passed: int
    labelled: int

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.scored if self.scored else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return planner.wilson_interval(self.passed, self.scored)

    @property
    def sufficient(self) -> bool:
        return planner.sufficient(self.passed, self.scored)

    def as_dict(self) -> dict[str, Any]:
        return {
            **record_dict(self, "criterion", "targeted", "turns", "scored", "passed", "pass_rate", "interval"),
            "evidence": "sufficient" if self.sufficient else planner.INSUFFICIENT,
            "human_labelled": self.labelled,
        }


@dataclass
class CoverageRow:
    case: EdgeCase
    conversations: int
    cells: list[CoverageCell] = field(default_factory=list)


@dataclass
class Coverage:
    judge: Judge
    version: JudgeVersion | None
    criteria: list[Criterion]
    titles: dict[str, str]
    rows: list[CoverageRow]

    def as_dict(self) -> dict[str, Any]:
        return {
            "judge": self.judge.slug,
            "version": self.version.version if self.version else None,
            "criteria": [c.name for c in self.criteria],
            "cases": [
                {
                    "position": r.case.position,
                    "case": r.case.case,
                    "criteria": r.case.criteria,
                    "conversations": r.conversations,
                    "cells": [c.as_dict() for c in r.cells],
                }
                for r in self.rows
            ],
        }


def coverage_matrix(*, judge: Judge, version: JudgeVersion | None = None) -> Coverage:
    """A fixed number of queries whatever the number of cases: version, cases, tags, turns, verdicts, gold,
    exclusions."""
    if version is None:
        version = JudgeVersion.objects.filter(judge=judge).order_by("-created_at", "-pk").first()
    # An imported version has no spec to name criteria: its verdicts still count, under no criterion.
    spec = judges.judge_version_spec(version) if version and not judges.is_placeholder(version) else None
    criteria = list(spec.criteria) if spec else []
    titles = dict((spec.params or {}).get("criterion_titles") or {}) if spec else {}
    cases = list(EdgeCase.objects.filter(judge=judge).order_by("position"))
    by_case: dict[int, set[int]] = defaultdict(set)
    for case_id, conversation_id in EdgeCaseTag.objects.filter(edge_case__judge=judge).values_list(
        "edge_case_id", "conversation_id"
    ):
        by_case[case_id].add(conversation_id)
    conversations = set().union(*by_case.values()) if by_case else set()
    # The tagged conversations as a subquery: only their turns, verdicts and gold are read, whatever the
    # size of the judge's gold, and no list of ids goes to the database.
    tagged = EdgeCaseTag.objects.filter(edge_case__judge=judge).values("conversation_id")
    turns_by_conversation: dict[int, list[int]] = defaultdict(list)
    if conversations:
        agent_turns = Turn.objects.filter(conversation_id__in=tagged, role=Turn.Role.AGENT)
        for turn_id, conversation_id in agent_turns.values_list("id", "conversation_id"):
            turns_by_conversation[conversation_id].append(turn_id)
    scores: dict[int, dict[str, float]] = {}
    if version is not None and conversations:
        for turn_id, status, sub_scores in (
            Verdict.objects.filter(judge_version=version, run_index=0, turn__isnull=False)
            .filter(conversation_id__in=tagged)
            .order_by("turn_id", "-sweep_id")
            .values_list("turn_id", "status", "sub_scores")
        ):
            if turn_id not in scores:
                scores[turn_id] = dict(sub_scores or {}) if status == Verdict.Status.RESOLVED else {}
    weighted = judge.scale == Judge.Scale.WEIGHTED
    rows = winning_gold_values(judge=judge, fields=gold_fields(weighted=weighted), conversation_ids=tagged)
    gold = without_excluded(
        gold_kinds(judge, rows[judge.pk]).as_dict(), excluded_targets(version) if version else set()
    )
    labelled_turns = {t for _, t in gold if t is not None}
    rows = []
    for case in cases:
        turn_ids = [t for c in sorted(by_case[case.pk]) for t in turns_by_conversation[c]]
        row = CoverageRow(case=case, conversations=len(by_case[case.pk]))
        for criterion in criteria:
            scored = [scores[t][criterion.name] for t in turn_ids if criterion.name in scores.get(t, {})]
            row.cells.append(
                CoverageCell(
                    criterion=criterion.name,
                    targeted=criterion.name in case.criteria,
                    turns=len(turn_ids),
                    scored=len(scored),
                    passed=sum(1 for s in scored if float(s) >= criterion.threshold),
                    labelled=sum(1 for t in turn_ids if t in labelled_turns),
                )
            )
        rows.append(row)
    return Coverage(judge=judge, version=version, criteria=criteria, titles=titles, rows=rows)
