"""Edge cases of a rubric judge: the coverage matrix, tagging rules, and tags on one conversation."""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from reviewapp import access
from reviewapp.corpus.views.conversations import conversation_or_404
from reviewapp.models import EdgeCase
from reviewapp.quality.selectors import edge_cases as tag_selectors
from reviewapp.quality.selectors.coverage import coverage_matrix
from reviewapp.quality.services import edge_cases as service
from reviewapp.quality.views.judges import judge_for_lead
from reviewapp.rendering import render_page


class RuleForm(forms.Form):
    pattern = forms.CharField(label="Pattern (regular expression, any turn)", max_length=500)


@require_GET
@login_required
def coverage_page(request, judge_slug: str):
    judge = judge_for_lead(request, judge_slug)
    return render_page(request, "coverage/index.html", "matrix", {"judge": judge, "m": coverage_matrix(judge=judge)})


@require_POST
@login_required
def edge_case_rule(request, judge_slug: str, case_id: int):
    judge = judge_for_lead(request, judge_slug)
    case = get_object_or_404(EdgeCase, pk=case_id, judge=judge)
    form = RuleForm(request.POST)
    error = ""
    if form.is_valid():
        try:
            service.edge_case_rule_apply(edge_case=case, pattern=form.cleaned_data["pattern"])
        except service.EdgeCaseError as exc:
            error = str(exc)
    else:
        error = "; ".join(e for errors in form.errors.values() for e in errors)
    if error:
        context = {"judge": judge, "m": coverage_matrix(judge=judge), "rule_error": error, "rule_case": case.pk}
        return render_page(request, "coverage/index.html", "matrix", context, status=400)
    return redirect("coverage_page", judge.slug)


class TagForm(forms.Form):
    edge_case = forms.ModelChoiceField(label="Edge case", queryset=EdgeCase.objects.none())
    action = forms.ChoiceField(choices=[("tag", "tag"), ("untag", "untag")], initial="tag")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["edge_case"].queryset = EdgeCase.objects.select_related("judge")


@require_http_methods(["GET", "POST"])
@login_required
def conversation_edge_cases(request, conversation_id: int):
    """The edge-case tags of one conversation (a fragment the conversation page loads); leads tag by hand."""
    conversation = conversation_or_404(request, conversation_id)
    is_lead = access.is_lead(request.user)
    form = TagForm(request.POST or None)
    status = 200
    if request.method == "POST":
        access.check_lead(request.user)
        if form.is_valid():
            case = form.cleaned_data["edge_case"]
            if form.cleaned_data["action"] == "untag":
                service.edge_case_untag(edge_case=case, conversation=conversation)
            else:
                service.edge_case_tag(edge_case=case, conversation=conversation, user=request.user)
            if not request.htmx:
                return redirect("conversation_edge_cases", conversation.pk)
            form = TagForm()
        else:
            status = 400
    context = {
        "conversation": conversation,
        "tags": tag_selectors.conversation_tags(conversation=conversation),
        "cases": tag_selectors.taggable_cases() if is_lead else [],
        "form": form,
        "is_lead": is_lead,
    }
    return render_page(request, "edge_cases/conversation.html", "tags", context, status=status)
