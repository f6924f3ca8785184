from functools import partial

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from reviewapp import access
from reviewapp.corpus.selectors import corpus
from reviewapp.models import Category, Comment, Judge, Turn
from reviewapp.rendering import render_page
from reviewapp.review.selectors import comments as comment_selectors
from reviewapp.review.selectors import review_screen
from reviewapp.review.selectors.comments import active_categories
from reviewapp.review.services import comments as comments_services
from reviewapp.review.views.posting import posted_form
from reviewapp.triage.services import claims


def turn_or_404(request, turn_id: int) -> Turn:
    turn = get_object_or_404(Turn.objects.select_related("conversation__dataset"), pk=turn_id)
    return access.turn_for_user(request.user, turn)


class CommentForm(forms.Form):
    body = forms.CharField(widget=forms.Textarea, max_length=10_000)
    categories = forms.ModelMultipleChoiceField(queryset=Category.objects.filter(active=True), required=False)
    parent = forms.IntegerField(required=False)
    judge = forms.ModelChoiceField(queryset=Judge.objects.all(), required=False, to_field_name="slug")
    quoted_span = forms.CharField(required=False, max_length=2_000)
    flagged_for_lead = forms.BooleanField(required=False)


def render_thread(request, turn: Turn, *, form=None, error: str = "", status: int = 200):
    context = {
        "turn": turn,
        "comments": review_screen.turn_comments(turn_id=turn.pk, user=request.user),
        "categories": active_categories(),
        "comment_form": form,
        "comment_error": error,
    }
    return render_page(request, "comments/thread.html", "thread", context, status=status)


@require_http_methods(["GET", "POST"])
@login_required
def turn_comments(request, turn_id: int):
    """A turn's comment threads (GET) and a new comment or reply (POST); htmx swaps the thread."""
    turn = turn_or_404(request, turn_id)
    form, shown = posted_form(
        request, CommentForm, partial(render_thread, request, turn), invalid="A comment needs some text."
    )
    if shown is not None:
        return shown
    data = form.cleaned_data
    parent = Comment.objects.filter(pk=data["parent"], turn=turn).first() if data["parent"] else None
    try:
        comments_services.comment_create(
            author=request.user,
            turn=turn,
            body=data["body"],
            categories=list(data["categories"]),
            parent=parent,
            judge=data["judge"],
            quoted_span=data["quoted_span"],
            flagged_for_lead=data["flagged_for_lead"],
        )
    except claims.ReviewError as exc:
        return render_thread(request, turn, form=form, error=str(exc), status=409)
    if request.htmx:
        return render_thread(request, turn)
    return redirect(reverse("turn_comments", args=[turn.pk]))


@require_POST
@login_required
def comment_flag(request, comment_id: int):
    comment = get_object_or_404(Comment.objects.select_related("turn__conversation__dataset"), pk=comment_id)
    access.comment_for_user(request.user, comment)
    comments_services.comment_flag(comment=comment, user=request.user, flagged=request.POST.get("flagged") == "1")
    if request.htmx:
        return render_thread(request, comment.turn)
    return redirect(access.safe_next(request, reverse("turn_comments", args=[comment.turn_id])))


@require_GET
@login_required
def comment_list(request):
    filters = comment_selectors.CommentFilters.from_query(request.GET)
    after = comment_selectors.comment_cursor(request.GET.get("after", ""))
    page = comment_selectors.comment_page(user=request.user, filters=filters, after=after)
    next_query = urlencode({**filters.as_query(), "after": page.next_after}) if page.next_after else ""
    context = {
        "page": page,
        "next_query": next_query,
        "filters": filters,
        "languages": corpus.visible_languages(user=request.user),
        "categories": list(Category.objects.order_by("name")),
        "judges": list(Judge.objects.order_by("slug")),
        "datasets": comment_selectors.datasets_with_comments(user=request.user),
        "query": filters.as_query_string(),
    }
    return render_page(request, "comments/list.html", "results", context)


class CategoryForm(forms.Form):
    slug = forms.SlugField(max_length=100, required=False)
    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea)
    active = forms.BooleanField(required=False)


def _category_save(request, form: CategoryForm) -> str:
    """Create a category, or update the one the form names; the reason when it cannot, else ""."""
    if not form.is_valid():
        return "Check the form: " + "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items())
    data = form.cleaned_data
    category_id = request.POST.get("category", "")
    try:
        if category_id.isdigit():
            category = get_object_or_404(Category, pk=int(category_id))
            comments_services.category_update(
                actor=request.user,
                category=category,
                name=data["name"],
                description=data["description"],
                active=data["active"],
            )
        else:
            comments_services.category_create(
                actor=request.user, slug=data["slug"], name=data["name"], description=data["description"]
            )
    except claims.ReviewError as exc:
        return str(exc)
    return ""


@require_http_methods(["GET", "POST"])
@login_required
def category_list(request):
    """The failure taxonomy. Leads and admins add, rename, describe and retire categories."""
    can_edit = access.is_lead(request.user)
    error, form = "", None
    if request.method == "POST":
        if not can_edit:
            raise PermissionDenied("Only leads and admins edit the taxonomy.")
        form = CategoryForm(request.POST)
        error = _category_save(request, form)
        if not error:
            return redirect("category_list")
    context = {
        "categories": comment_selectors.categories_with_use(),
        "can_edit": can_edit,
        "error": error,
        "form": form,
    }
    return render_page(request, "comments/categories.html", "", context, status=400 if error else 200)
