"""One click to the proof: sweep a drafted version and its parent on the datasets that hold the held-out
gold (gold minus the targets the draft was made from), plus a second sweep of the parent alone, whose
verdicts are the noise baseline (what rerunning the same version moves)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from django.db import transaction

from reviewapp.judging.services.sweeps import sweep_start
from reviewapp.models import Conversation, JudgeVersion, ProofRun
from reviewapp.quality.selectors.leakage import excluded_targets, without_excluded
from reviewapp.quality.selectors.quality_slice import judge_gold
from scoring.errors import TribunalError


class ProofError(TribunalError, ValueError):
    """A proof that cannot start."""


def held_out_gold(version: JudgeVersion, parent: JudgeVersion) -> dict:
    """The judge's gold without either version's drafting evidence."""
    return without_excluded(judge_gold(judge=version.judge), excluded_targets(version) | excluded_targets(parent))


@transaction.atomic
def proof_start(*, version: JudgeVersion, user, dispatch: Callable[[int], None] | None = None) -> ProofRun:
    provenance = getattr(version, "provenance", None)
    if provenance is None:
        raise ProofError(f"{version} has no parent version to be proven against.")
    parent = provenance.parent
    gold = held_out_gold(version, parent)
    if not gold:
        raise ProofError(f"{version.judge.slug} has no held-out gold: label more turns first.")
    by_dataset: dict[int, set[str]] = {}
    for dataset_id, language in Conversation.objects.filter(pk__in={c for c, _ in gold}).values_list(
        "dataset_id", "language"
    ):
        by_dataset.setdefault(dataset_id, set()).add(language)
    proof = ProofRun.objects.create(version=version, parent=parent, started_by=user)
    datasets = {
        c.dataset_id: c.dataset
        for c in Conversation.objects.filter(pk__in={c for c, _ in gold}).select_related("dataset")
    }
    for dataset_id, languages in sorted(by_dataset.items()):
        dataset = datasets[dataset_id]
        language = next(iter(languages)) if len(languages) == 1 else ""
        start = partial(
            sweep_start,
            dataset=dataset,
            repeats=1,
            variance_sample=0,
            qa_sample=0,
            language=language,
            user=user,
            dispatch=dispatch,
        )
        main = start(
            judge_versions=[parent, version],
            name=f"proof {proof.pk}: {parent.version} vs {version.version} on {dataset.name}",
        )
        rerun = start(
            judge_versions=[parent], name=f"proof {proof.pk}: noise rerun of {parent.version} on {dataset.name}"
        )
        proof.main_sweeps.add(main)
        proof.rerun_sweeps.add(rerun)
    return proof
