from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from .. import access
from ..models import Dataset
from ..selectors import corpus
from .rendering import render_page

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
    dataset = access.check_dataset(request.user, get_object_or_404(Dataset, pk=dataset_id))
    language = request.GET.get("language", "").strip()
    conversations = corpus.dataset_conversations(user=request.user, dataset=dataset, language=language)
    page = Paginator(conversations, CONVERSATIONS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "dataset": dataset,
        "page": page,
        "languages": corpus.visible_languages(user=request.user, dataset=dataset),
        "language": language,
        "can_triage": access.is_lead(request.user),
    }
    return render_page(request, "datasets/detail.html", "conversations", context)
