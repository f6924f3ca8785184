"""The proof of a drafted version: its parent (A) and the draft (B) on the held-out gold of each language,
against the noise of rerunning A.

Targets: every turn both A and B resolved in the proof's main sweeps. Noise: A in the main sweeps against
A in the rerun sweeps. Gold: adjudicated > unanimous > imported, without the targets either version was
drafted from (selectors/leakage.py); the page says how many gold targets that leaves out.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from reviewapp.judging.selectors.sweeps import GateReport, gate_report
from reviewapp.models import Judge, ProofRun, Review, Sweep, Turn, Verdict
from reviewapp.quality.selectors.leakage import TargetKey, excluded_targets
from reviewapp.quality.selectors.quality_slice import judge_gold, outcome, scale_labels
from scoring import agreement, before_after, classification, planner
from scoring.records import record_dict

N_BOOT = 1000
MOVED_SHOWN = 200


@dataclass
class ProofRow:
    language: str
    n: int
    a: classification.ClassificationReport
    b: classification.ClassificationReport
    a_wilson: tuple[float, float] | None
    b_wilson: tuple[float, float] | None
    a_right: int
    b_right: int
    a_only: int
    b_only: int
    p_value: float

    @property
    def sufficient(self) -> bool:
        return planner.sufficient(self.a_right, self.n) and planner.sufficient(self.b_right, self.n)


@dataclass
class Moved:
    target: TargetKey
    language: str
    before: str
    after: str
    gold: str | None
    text: str
    categories: list[str]


@dataclass
class Proof:
    run: ProofRun
    status: str  # running | done | failed
    sweeps: list[Sweep]
    compared: int = 0
    excluded_gold: int = 0
    excluded_total: int = 0
    noise: before_after.NoiseComparison | None = None
    statement: str = ""
    rows: list[ProofRow] = field(default_factory=list)
    moved: list[Moved] = field(default_factory=list)
    moved_total: int = 0
    gates: list[GateReport] = field(default_factory=list)

    @property
    def done(self) -> bool:
        return self.status == "done"

    def as_dict(self) -> dict[str, Any]:
        return {
            "proof": self.run.pk,
            "status": self.status,
            "a": self.run.parent.version,
            "b": self.run.version.version,
            "compared": self.compared,
            "excluded_gold": self.excluded_gold,
            "noise": None
            if self.noise is None
            else record_dict(self.noise, "n", "version_moved", "noise_moved", "p_value", "exceeds_noise"),
            "languages": [
                {
                    "language": r.language,
                    "n": r.n,
                    "accuracy_a": r.a.accuracy.as_dict(),
                    "accuracy_b": r.b.accuracy.as_dict(),
                    "wilson_a": r.a_wilson,
                    "wilson_b": r.b_wilson,
                    "macro_f1_a": r.a.macro_f1.as_dict(),
                    "macro_f1_b": r.b.macro_f1.as_dict(),
                    "mcnemar_p": r.p_value,
                }
                for r in self.rows
            ],
        }


def proof_for(*, proof_id: int) -> ProofRun:
    return ProofRun.objects.select_related("version__judge", "parent").get(pk=proof_id)


def _outcomes(judge: Judge, sweep_ids: list[int], version_id: int) -> dict[TargetKey, str | None]:
    out: dict[TargetKey, str | None] = {}
    for v in Verdict.objects.filter(sweep_id__in=sweep_ids, judge_version_id=version_id, run_index=0).values(
        "conversation_id", "turn_id", "status", "rating", "passed", "label"
    ):
        resolved = v["status"] == Verdict.Status.RESOLVED
        said = outcome(judge, rating=v["rating"], passed=v["passed"], label=v["label"]) if resolved else None
        out[(v["conversation_id"], v["turn_id"])] = said
    return out


def proof_comparison(*, run: ProofRun, n_boot: int = N_BOOT) -> Proof:
    """A fixed number of queries: sweeps, languages, three verdict reads, gold (two), exclusions (two),
    categories, turn texts, and the gate per main sweep."""
    judge = run.version.judge
    main = list(run.main_sweeps.select_related("dataset").order_by("id"))
    rerun = list(run.rerun_sweeps.select_related("dataset").order_by("id"))
    sweeps = main + rerun
    statuses = {s.status for s in sweeps}
    if statuses & {Sweep.Status.FAILED, Sweep.Status.CANCELLED}:
        return Proof(run=run, status="failed", sweeps=sweeps)
    if statuses != {Sweep.Status.DONE}:
        return Proof(run=run, status="running", sweeps=sweeps)

    a = _outcomes(judge, [s.pk for s in main], run.parent_id)
    b = _outcomes(judge, [s.pk for s in main], run.version_id)
    a_again = _outcomes(judge, [s.pk for s in rerun], run.parent_id)
    excluded = excluded_targets(run.version) | excluded_targets(run.parent)
    all_gold = judge_gold(judge=judge)
    gold = {t: g for t, g in all_gold.items() if t not in excluded and g.outcome is not None}
    common = sorted(t for t in set(a) & set(b) if a[t] is not None and b[t] is not None and t in gold)
    languages = dict(
        Turn.objects.filter(pk__in=[t for _, t in common if t is not None]).values_list("pk", "conversation__language")
    )
    proof = Proof(
        run=run,
        status="done",
        sweeps=sweeps,
        compared=len(common),
        excluded_gold=sum(1 for t in excluded if t in all_gold),
        excluded_total=len(excluded),
    )
    noise_targets = [t for t in common if a_again.get(t) is not None]
    proof.noise = before_after.movement_vs_noise(
        [a[t] != b[t] for t in noise_targets], [a[t] != a_again[t] for t in noise_targets]
    )
    proof.statement = proof.noise.statement(f"{judge.slug}@{run.parent.version}", f"{judge.slug}@{run.version.version}")
    labels = scale_labels(judge)
    labels += [
        x
        for x in agreement.label_order(
            [gold[t].outcome for t in common], [a[t] or "" for t in common], [b[t] or "" for t in common]
        )
        if x not in labels
    ]

    by_language: dict[str, list[TargetKey]] = defaultdict(list)
    for t in common:
        by_language[languages.get(t[1], "")].append(t)
    for language, targets in [("", common), *sorted(by_language.items())]:
        g = [gold[t].outcome for t in targets]
        right_a = [a[t] == gold[t].outcome for t in targets]
        right_b = [b[t] == gold[t].outcome for t in targets]
        a_only = sum(1 for x, y in zip(right_a, right_b, strict=True) if x and not y)
        b_only = sum(1 for x, y in zip(right_a, right_b, strict=True) if y and not x)
        proof.rows.append(
            ProofRow(
                language=language,
                n=len(targets),
                a=classification.classification_report(g, [a[t] or "" for t in targets], labels=labels, n_boot=n_boot),
                b=classification.classification_report(g, [b[t] or "" for t in targets], labels=labels, n_boot=n_boot),
                a_wilson=planner.wilson_interval(sum(right_a), len(targets)),
                b_wilson=planner.wilson_interval(sum(right_b), len(targets)),
                a_right=sum(right_a),
                b_right=sum(right_b),
                a_only=a_only,
                b_only=b_only,
                p_value=before_after.mcnemar_exact(b_only, a_only),
            )
        )

    moved = [
        t
        for t in sorted(set(a) & set(b))
        if a[t] is not None and b[t] is not None and a[t] != b[t] and t not in excluded
    ]
    proof.moved_total = len(moved)
    shown = moved[:MOVED_SHOWN]
    categories: dict[TargetKey, Counter] = defaultdict(Counter)
    for row in Review.categories.through.objects.filter(
        review__item__judge=judge, review__item__turn_id__in=[t for _, t in shown if t is not None]
    ).values("review__item__conversation_id", "review__item__turn_id", "category__slug"):
        categories[(row["review__item__conversation_id"], row["review__item__turn_id"])][row["category__slug"]] += 1
    texts = dict(Turn.objects.filter(pk__in=[t for _, t in shown if t is not None]).values_list("pk", "text"))
    shown_languages = dict(
        Turn.objects.filter(pk__in=[t for _, t in shown if t is not None]).values_list("pk", "conversation__language")
    )
    for t in shown:
        label = gold.get(t)
        proof.moved.append(
            Moved(
                target=t,
                language=shown_languages.get(t[1], ""),
                before=a[t] or "",
                after=b[t] or "",
                gold=label.outcome if label else None,
                text=texts.get(t[1], ""),
                categories=[slug for slug, _ in categories[t].most_common()],
            )
        )
    proof.gates = [gate_report(sweep=s) for s in main]
    return proof
