from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from .. import access
from ..models import Category, Dataset, Sweep
from ..selectors import signatures as signature_selectors
from ..selectors import sweeps as sweep_selectors
from ..services import sweep_scope
from ..services import sweeps as sweeps_service
from ..tasks.sweeps import sweep_queue
from .rendering import render_page

SWEEPS_SHOWN = 200


class JudgeVersionChoices(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj) -> str:
        return f"{obj.judge.slug}@{obj.version}" + (f" ({obj.source})" if obj.source else "")


SCOPES = [
    ("", "Every target"),
    ("commented", "What reviewers commented on"),
    ("gold", "Gold-labelled targets"),
    ("moved", "What moved between two versions"),
]
SCOPE_LABELS = {"all": "every target", **{kind: label for kind, label in SCOPES if kind}}


class SweepForm(forms.Form):
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.order_by("name"))
    judge_versions = JudgeVersionChoices(
        queryset=sweep_selectors.judge_versions_for_form(), widget=forms.CheckboxSelectMultiple
    )
    repeats = forms.IntegerField(min_value=1, max_value=sweeps_service.MAX_REPEATS, initial=1)
    variance_sample = forms.FloatField(
        min_value=0, max_value=1, initial=0.1, help_text="Share of LLM targets run `repeats` times."
    )
    qa_sample = forms.FloatField(
        min_value=0, max_value=1, initial=0.05, help_text="Share of resolved items sent to QA."
    )
    language = forms.CharField(required=False, max_length=35, help_text="Empty: every language of the dataset.")
    scope = forms.ChoiceField(choices=SCOPES, required=False, help_text="Re-score only part of the dataset.")
    category = forms.ModelChoiceField(
        queryset=Category.objects.filter(active=True),
        to_field_name="slug",
        required=False,
        help_text="With 'commented': only comments with this category.",
    )
    moved = forms.CharField(
        required=False, max_length=140, help_text="With 'moved': two version labels of the swept judge, A,B."
    )

    def clean(self):
        data = super().clean()
        kind = data.get("scope") or ""
        text = f"moved:{data.get('moved') or ''}" if kind == "moved" else kind
        category = data.get("category")
        try:
            data["scope_value"] = sweep_scope.scope_parse(text, category=category.slug if category else "")
        except sweep_scope.ScopeError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return data


@require_GET
@login_required
def sweep_list(request):
    sweeps = sweep_selectors.sweeps_visible(user=request.user)
    status = request.GET.get("status", "").strip()
    if status in Sweep.Status.values:
        sweeps = sweeps.filter(status=status)
    context = {
        "sweeps": list(sweeps[:SWEEPS_SHOWN]),
        "status": status,
        "statuses": Sweep.Status.choices,
        "can_start": access.is_lead(request.user),
    }
    return render_page(request, "sweeps/list.html", "rows", context)


@require_http_methods(["GET", "POST"])
@login_required
def sweep_new(request):
    if not access.is_lead(request.user):
        raise PermissionDenied("Only leads and admins start sweeps.")
    form = SweepForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            sweep = sweeps_service.sweep_start(
                dataset=data["dataset"],
                judge_versions=list(data["judge_versions"]),
                repeats=data["repeats"],
                variance_sample=data["variance_sample"],
                qa_sample=data["qa_sample"],
                language=data["language"],
                user=request.user,
                scope=data["scope_value"],
                dispatch=sweep_queue,
            )
        except sweeps_service.SweepError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("sweep_detail", sweep_id=sweep.pk)
    return render(request, "sweeps/new.html", {"form": form})


@require_GET
@login_required
def sweep_detail(request, sweep_id: int):
    sweep = get_object_or_404(Sweep.objects.select_related("dataset", "created_by"), pk=sweep_id)
    sweep_selectors.check_sweep(request.user, sweep)
    scope = sweep_scope.scope_from_params(sweep.params.get("scope"))
    context = {
        "sweep": sweep,
        "progress": sweep_selectors.sweep_progress(sweep=sweep),
        "judge_versions": sweep.judge_versions.select_related("judge").order_by("judge__slug", "id"),
        "scope_label": SCOPE_LABELS.get(scope.kind, scope.kind)
        + (f" ({scope.category})" if scope.category else "")
        + (f": {scope.versions[0]} → {scope.versions[1]}" if scope.versions else ""),
        # Full page only: the progress fragment polls every two seconds.
        "signature_versions": [] if request.htmx else signature_selectors.sweep_signature_versions(sweep=sweep),
    }
    return render_page(request, "sweeps/detail.html", "progress", context)
