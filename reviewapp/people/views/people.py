from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods

from reviewapp import access, listings
from reviewapp.models import Role
from reviewapp.people.forms.people import PersonCreateForm, PersonForm
from reviewapp.people.services import people
from reviewapp.rendering import form_success, form_write, render_page

require_admin = access.check_admin


def _people_context(request, create_form=None) -> dict:
    role = request.GET.get("role", "")
    return {
        "people": listings.people_listed(role=role),
        "role": role,
        "roles": Role.choices,
        "create_form": create_form or PersonCreateForm(),
        "added": request.GET.get("added", "")[:150],
    }


@require_GET
@login_required
def people_list(request):
    require_admin(request.user)
    return render_page(request, "people/list.html", "rows", _people_context(request))


@require_http_methods(["POST"])
@login_required
def person_new(request):
    """An admin adds a person from the People page; the form shows its errors in place."""
    require_admin(request.user)
    form = PersonCreateForm(request.POST)
    if form.is_valid():
        added = form.cleaned_data["username"].strip()
        created = form_write(form, people.person_create, actor=request.user, **form.cleaned_data)
        if created is not None:
            return form_success(request, reverse("people_list") + "?" + urlencode({"added": added}))
    return render_page(request, "people/list.html", "create", _people_context(request, form), status=400)


@require_http_methods(["GET", "POST"])
@login_required
def person_edit(request, user_id: int):
    require_admin(request.user)
    person = get_object_or_404(get_user_model().objects.select_related("profile"), pk=user_id)
    form = PersonForm.for_person(person, access.profile_of(person), request.POST or None)
    if request.method == "POST" and form.is_valid():
        saved = form_write(form, people.profile_update, actor=request.user, user=person, **form.cleaned_data)
        if saved is not None:
            return redirect("people_list")
    status = 400 if request.method == "POST" else 200
    return render_page(request, "people/edit.html", "", {"person": person, "form": form}, status=status)
