from django import forms
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from reviewapp import access
from reviewapp.corpus.selectors import corpus
from reviewapp.corpus.services import datasets as dataset_service
from reviewapp.models import Dataset
from reviewapp.rendering import form_success, form_write, render_page

CONVERSATIONS_PER_PAGE = 50


@require_GET
@login_required
def dataset_list(request):
    language = request.GET.get("language", "").strip()
    search = request.GET.get("q", "").strip()
    context = {
        "datasets": corpus.dataset_rows(user=request.user, language=language, search=search),
        "languages": corpus.visible_languages(user=request.user),
        "language": language,
        "search": search,
    }
    return render_page(request, "datasets/list.html", "rows", context)


@require_GET
@login_required
def dataset_detail(request, dataset_id: int):
    dataset = access.dataset_for_user(request.user, get_object_or_404(Dataset, pk=dataset_id))
    language = request.GET.get("language", "").strip()
    conversations = corpus.dataset_conversations(user=request.user, dataset=dataset, language=language)
    page = corpus.conversation_page(
        conversations,
        after=request.GET.get("after", ""),
        before=request.GET.get("before", ""),
        size=CONVERSATIONS_PER_PAGE,
        count=corpus.dataset_conversation_count(user=request.user, dataset=dataset, language=language),
    )
    context = {
        "dataset": dataset,
        "page": page,
        "languages": corpus.visible_languages(user=request.user, dataset=dataset),
        "language": language,
        "can_edit_settings": access.is_lead(request.user),
        "can_triage": access.is_lead(request.user),
    }
    return render_page(request, "datasets/detail.html", "conversations", context)


class DatasetSettingsForm(forms.Form):
    blind_review = forms.BooleanField(
        required=False,
        label="Blind review",
        help_text="Reviewers see no verdict, gold or other reviewer's label or comment until they have labelled.",
    )
    reviews_required = forms.IntegerField(
        min_value=1,
        max_value=dataset_service.MAX_REVIEWS_REQUIRED,
        label="Reviews per item (k)",
        help_text="Items nobody has reviewed yet take the new k; QA-sample items always need at least 2.",
    )


@require_http_methods(["GET", "POST"])
@login_required
def dataset_settings(request, dataset_id: int):
    """A lead sets blind mode and k for a dataset; htmx swaps the form with its errors, or redirects."""
    dataset = access.dataset_for_lead(request.user, get_object_or_404(Dataset, pk=dataset_id))
    initial = {"blind_review": dataset.blind_review, "reviews_required": dataset.reviews_required}
    form = DatasetSettingsForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        saved = form_write(
            form, dataset_service.dataset_settings_update, actor=request.user, dataset=dataset, **form.cleaned_data
        )
        if saved is not None:
            return form_success(request, reverse("dataset_detail", args=[dataset.pk]) + "?saved=1")
    status = 400 if request.method == "POST" else 200
    return render_page(request, "datasets/settings.html", "form", {"dataset": dataset, "form": form}, status=status)
