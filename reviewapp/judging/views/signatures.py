"""Tier-1 signature pages, for leads: the list with precision on gold, create, edit, switch off, history."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from reviewapp import access, listings
from reviewapp.judging.forms.signatures import SignatureActiveForm, SignatureEditForm, SignatureForm
from reviewapp.judging.selectors import signatures as signature_selectors
from reviewapp.judging.services.signature_checks import signature_check_all
from reviewapp.judging.services.signatures import signature_create, signature_update
from reviewapp.models import Signature
from reviewapp.rendering import form_success, form_write, render_page


def check_lead(user) -> None:
    access.check_lead(user, "Signatures are managed by leads.")


def _done(request, signature: Signature):
    """After a successful form: the signature's page, a real navigation for htmx too (see form_success)."""
    return form_success(request, reverse("signature_detail", args=[signature.pk]))


def _form_status(request) -> int:
    # htmx swaps only 2xx answers: its form comes back in place with its errors; a plain POST says 400.
    if request.method != "POST":
        return 200
    return 200 if request.htmx else 400


@require_GET
@login_required
def signature_list(request):
    check_lead(request.user)
    judge_slug = request.GET.get("judge", "").strip()
    language = request.GET.get("language", "").strip()
    signatures = signature_selectors.signatures_listed(judge_slug=judge_slug, language=language)
    context = {
        "checks": signature_check_all(signatures),
        "judges": listings.judge_slugs(),
        "languages": listings.signature_languages(),
        "judge_slug": judge_slug,
        "language": language,
    }
    return render_page(request, "signatures/list.html", "rows", context)


@require_http_methods(["GET", "POST"])
@login_required
def signature_new(request):
    check_lead(request.user)
    form = SignatureForm(request.POST or None, initial={"judge": request.GET.get("judge", "")})
    if request.method == "POST" and form.is_valid():
        signature = form_write(form, signature_create, created_by=request.user, **form.cleaned_data)
        if signature is not None:
            return _done(request, signature)
    return render_page(request, "signatures/create.html", "form", {"form": form}, status=_form_status(request))


def _signature_for_lead(request, signature_id: int) -> Signature:
    check_lead(request.user)
    return get_object_or_404(Signature.objects.select_related("judge", "created_by"), pk=signature_id)


def _detail_context(signature: Signature, active_form: SignatureActiveForm | None = None) -> dict:
    evidence = listings.signature_evidence(signature=signature)
    (check,) = signature_check_all([signature])
    return {
        "signature": signature,
        "evidence": evidence,
        "check": check,
        "history": signature_selectors.signature_history(signature=signature),
        "active_form": active_form or SignatureActiveForm(initial={"active": "0" if signature.active else "1"}),
    }


@require_GET
@login_required
def signature_detail(request, signature_id: int):
    signature = _signature_for_lead(request, signature_id)
    return render_page(request, "signatures/detail.html", "evidence", _detail_context(signature))


@require_http_methods(["GET", "POST"])
@login_required
def signature_edit(request, signature_id: int):
    signature = _signature_for_lead(request, signature_id)
    form = SignatureEditForm.for_signature(signature, request.POST or None)
    if request.method == "POST" and form.is_valid():
        saved = form_write(form, signature_update, signature=signature, actor=request.user, **form.cleaned_data)
        if saved is not None:
            return _done(request, signature)
    context = {"signature": signature, "form": form}
    return render_page(request, "signatures/edit.html", "form", context, status=_form_status(request))


@require_POST
@login_required
def signature_active(request, signature_id: int):
    """Switch a signature off or back on; errors come back on its page."""
    signature = _signature_for_lead(request, signature_id)
    form = SignatureActiveForm(request.POST)
    if form.is_valid():
        saved = form_write(form, signature_update, signature=signature, actor=request.user, **form.cleaned_data)
        if saved is not None:
            return _done(request, signature)
    signature.refresh_from_db()
    context = _detail_context(signature, form)
    return render_page(request, "signatures/detail.html", "switch", context, status=_form_status(request))
