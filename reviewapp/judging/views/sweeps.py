from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_http_methods

from reviewapp import access, listings
from reviewapp.judging.forms.sweeps import SweepForm, scope_label
from reviewapp.judging.selectors import signatures as signature_selectors
from reviewapp.judging.selectors import sweeps as sweep_selectors
from reviewapp.judging.services import sweep_scope
from reviewapp.judging.services import sweeps as sweeps_service
from reviewapp.models import Sweep
from reviewapp.rendering import form_write, render_page


@require_GET
@login_required
def sweep_list(request):
    chosen = listings.query_filters(request, "status")
    context = {
        "sweeps": listings.sweeps_listed(user=request.user, **chosen),
        "statuses": Sweep.Status.choices,
        "can_start": access.is_lead(request.user),
        **chosen,
    }
    return render_page(request, "sweeps/list.html", "rows", context)


@require_http_methods(["GET", "POST"])
@login_required
def sweep_new(request):
    access.check_lead(request.user, "Only leads and admins start sweeps.")
    form = SweepForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        # The task (and Celery) load when one is first queued, not with the URLconf.
        from reviewapp.judging.tasks.sweeps import sweep_queue

        data = form.cleaned_data
        sweep = form_write(
            form,
            sweeps_service.sweep_start,
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
        if sweep is not None:
            return redirect("sweep_detail", sweep_id=sweep.pk)
    return render_page(request, "sweeps/new.html", "", {"form": form})


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
        "scope_label": scope_label(scope),
        # Full page only: the progress fragment polls every two seconds.
        "signature_versions": [] if request.htmx else signature_selectors.sweep_signature_versions(sweep=sweep),
    }
    return render_page(request, "sweeps/detail.html", "progress", context)
