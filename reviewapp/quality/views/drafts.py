"""Leads turn reviewers' corrections into a new judge version, then prove it against the old one."""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from reviewapp.judging.services.judges import is_placeholder
from reviewapp.models import JudgeVersion
from reviewapp.quality.selectors import drafts as selectors
from reviewapp.quality.selectors import proofs as proof_selectors
from reviewapp.quality.selectors.quality import judge_versions
from reviewapp.quality.selectors.versions import pick_version
from reviewapp.quality.services import drafts as service
from reviewapp.quality.services import proofs as proof_service
from reviewapp.quality.views.judges import judge_for_lead
from reviewapp.rendering import form_write, found_or_404, render_page
from reviewapp.triage.selectors.planner import plan_cells
from scoring.planner import EVIDENCE_FLOOR


class DraftForm(forms.Form):
    label = forms.CharField(label="New version label", max_length=service.MAX_LABEL)
    note = forms.CharField(label="Note (why this version)", widget=forms.Textarea(attrs={"rows": 2}), required=False)

    def __init__(self, *args, draft: selectors.Draft, **kwargs):
        super().__init__(*args, **kwargs)
        self.languages = [lang.language for lang in draft.languages]
        for lang in draft.languages:
            self.fields[f"guidance_{lang.language}"] = forms.CharField(
                label=f"Guidance for {lang.language}",
                widget=forms.Textarea(attrs={"rows": 14, "class": "mono"}),
                initial=lang.proposed_guidance,
                required=False,
                strip=False,
            )
        if not self.is_bound:
            self.fields["label"].initial = f"{draft.parent.version}-corrected"

    def guidance(self) -> dict[str, str]:
        return {lang: self.cleaned_data.get(f"guidance_{lang}", "") for lang in self.languages}


def _evidence(draft: selectors.Draft) -> dict:
    return {
        lang.language: {
            "disagreements": len(lang.disagreements),
            "examples": [d.item_id for d in lang.examples],
            "categories": dict(lang.categories),
        }
        for lang in draft.languages
    }


@require_http_methods(["GET", "POST"])
@login_required
def draft_new(request, judge_slug: str):
    """'New version from corrections': the evidence per language, the drafted guidance as a diff, an editor."""
    judge = judge_for_lead(request, judge_slug)
    parent = pick_version(judge_versions(judge=judge), (request.POST or request.GET).get("version", "").strip())
    if parent is None:
        raise Http404("This judge has no version yet.")
    if is_placeholder(parent):
        # An imported version holds verdicts but no prompt: there is nothing to add guidance to.
        context = {"judge": judge, "parent": parent, "imported": True}
        return render_page(
            request, "drafts/new.html", "editor", context, status=400 if request.method == "POST" else 200
        )
    draft = selectors.draft_from_corrections(version=parent)
    llm_notes: list[str] = []
    if request.method == "POST" and request.POST.get("action") == "llm":
        llm_notes = service.draft_guidance_from_llm(parent=parent, draft=draft)
        form = DraftForm(draft=draft)
    else:
        form = DraftForm(request.POST or None, draft=draft)
    if request.method == "POST" and request.POST.get("action") != "llm" and form.is_valid():
        version = _save_draft(request, form=form, parent=parent, draft=draft)
        if version is not None:
            return redirect("draft_version", judge.slug, version.pk)
    languages = [(lang, form[f"guidance_{lang.language}"]) for lang in draft.languages]
    context = {
        "judge": judge,
        "parent": parent,
        "draft": draft,
        "form": form,
        "languages": languages,
        "llm_notes": llm_notes,
    }
    return render_page(request, "drafts/new.html", "editor", context, status=400 if form.errors else 200)


def _save_draft(request, *, form: DraftForm, parent, draft):
    """The drafted version saved, or None with the service's reason added to the form."""
    return form_write(
        form,
        service.draft_version_save,
        parent=parent,
        label=form.cleaned_data["label"],
        guidance=form.guidance(),
        item_ids=draft.item_ids,
        comment_ids=draft.comment_ids,
        user=request.user,
        evidence=_evidence(draft),
        note=form.cleaned_data["note"],
    )


@require_GET
@login_required
def version_list(request, judge_slug: str):
    judge = judge_for_lead(request, judge_slug)
    return render_page(
        request, "drafts/versions.html", "versions", {"judge": judge, "rows": selectors.version_lineage(judge=judge)}
    )


def _version_for_lead(request, judge_slug: str, version_id: int) -> JudgeVersion:
    judge = judge_for_lead(request, judge_slug)
    return get_object_or_404(JudgeVersion.objects.select_related("judge"), pk=version_id, judge=judge)


def _version_page(request, version: JudgeVersion, *, status: int = 200, **extra):
    """A drafted version with its lineage and its label plan (and, after a refused proof, why)."""
    detail = selectors.version_detail(version=version)
    context = {"judge": version.judge, "d": detail, "plan": plan_cells(version=version), **extra}
    return render_page(request, "drafts/version.html", "detail", context, status=status)


@require_GET
@login_required
def draft_version(request, judge_slug: str, version_id: int):
    return _version_page(request, _version_for_lead(request, judge_slug, version_id))


@require_POST
@login_required
def proof_start(request, judge_slug: str, version_id: int):
    """One click: sweep both versions and rerun the old one on the held-out gold, then open the proof."""
    # The task (and Celery) load when one is first queued, not with the URLconf.
    from reviewapp.judging.tasks.sweeps import sweep_queue

    version = _version_for_lead(request, judge_slug, version_id)
    try:
        proof = proof_service.proof_start(version=version, user=request.user, dispatch=sweep_queue)
    except (proof_service.ProofError, ValueError) as exc:
        return _version_page(request, version, status=400, proof_error=str(exc))
    return redirect("proof_detail", version.judge.slug, proof.pk)


@require_GET
@login_required
def proof_detail(request, judge_slug: str, proof_id: int):
    judge = judge_for_lead(request, judge_slug)
    run = found_or_404(proof_selectors.proof_for, "No such proof.", proof_id=proof_id)
    if run.version.judge_id != judge.pk:
        raise Http404("No such proof for this judge.")
    proof = proof_selectors.proof_comparison(run=run)
    context = {"judge": judge, "p": proof, "floor": EVIDENCE_FLOOR}
    return render_page(request, "drafts/proof.html", "proof", context)
