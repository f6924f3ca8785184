"""Tier-1 signature pages, for leads: the list with precision on gold, a create form, the evidence."""

from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from .. import access
from ..forms_signatures import SignatureForm
from ..models import Judge, Signature
from ..services.signatures import SignatureError, signature_check_all, signature_create
from .rendering import form_success, render_page


def check_lead(user) -> None:
    access.check_lead(user, "Signatures are managed by leads.")


@require_GET
@login_required
def signature_list(request):
    check_lead(request.user)
    judge_slug = request.GET.get("judge", "").strip()
    language = request.GET.get("language", "").strip()
    signatures = (
        Signature.objects.select_related("judge")
        .annotate(evidence_count=Count("evidence", distinct=True))
        .order_by("judge__slug", "language", "-active", "id")
    )
    if judge_slug:
        signatures = signatures.filter(judge__slug=judge_slug)
    if language:
        signatures = signatures.filter(language__iexact=language)
    context = {
        "checks": signature_check_all(signatures),
        "judges": Judge.objects.order_by("slug").values_list("slug", flat=True),
        "languages": Signature.objects.order_by("language").values_list("language", flat=True).distinct(),
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
        data = form.cleaned_data
        try:
            signature = signature_create(
                judge=data["judge"],
                language=data["language"],
                intent=data["intent"],
                kind=data["kind"],
                pattern=data["pattern"],
                evidence=data["evidence"],
                negation_guards=data["negation_guards"],
                label=data.get("label", ""),
                rating=data.get("rating"),
                passed=data.get("passed"),
                criterion=data.get("criterion", ""),
                created_by=request.user,
            )
        except SignatureError as exc:
            form.add_error(None, str(exc))
        else:
            return form_success(request, reverse("signature_detail", args=[signature.pk]))
    status = 400 if request.method == "POST" else 200
    return render_page(request, "signatures/create.html", "form", {"form": form}, status=status)


@require_GET
@login_required
def signature_detail(request, signature_id: int):
    check_lead(request.user)
    signature = get_object_or_404(Signature.objects.select_related("judge", "created_by"), pk=signature_id)
    evidence = signature.evidence.select_related("conversation", "conversation__dataset").order_by(
        "conversation_id", "position"
    )
    (check,) = signature_check_all([signature])
    context = {"signature": signature, "evidence": evidence, "check": check}
    return render_page(request, "signatures/detail.html", "evidence", context)
