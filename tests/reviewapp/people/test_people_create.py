"""Admins add people and their languages from /people/: a form with errors in place, a service, audit."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from reviewapp.models import AuditEvent, Role
from tests.factories import HTMX

pytestmark = pytest.mark.django_db
GOOD = {"username": "noor", "password": "a-long-pass-phrase-42", "role": "reviewer", "languages": ["ar", "fr-CA"]}


def test_admin_adds_a_reviewer_who_can_then_log_in(client, make_user):
    admin = make_user("root", role=Role.ADMIN)
    client.force_login(admin)
    assert 'id="person-create-form"' in client.get(reverse("people_list")).content.decode()

    response = client.post(reverse("person_new"), GOOD, **HTMX)

    assert response.status_code == 200 and response["HX-Redirect"] == reverse("people_list") + "?added=noor"
    noor = get_user_model().objects.get(username="noor")
    assert noor.profile.role == Role.REVIEWER and noor.profile.languages == ["ar", "fr-CA"]
    event = AuditEvent.objects.get(action="person.create")
    assert event.actor == admin and event.after == {
        "username": "noor",
        "role": "reviewer",
        "languages": ["ar", "fr-CA"],
        "email": "",
    }
    assert "a-long-pass-phrase-42" not in str(event.after)
    assert "Added noor." in client.get(response["HX-Redirect"]).content.decode()
    client.logout()
    assert client.login(username="noor", password="a-long-pass-phrase-42")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"languages": '"><svg onload=1>'}, "is not a BCP 47 language code"),
        ({"languages": []}, "A reviewer needs at least one language"),
        ({"username": "root"}, "is called"),
        ({"username": "bad name!"}, "A username is"),
        ({"password": "123"}, "too short"),
        ({"role": "owner"}, "Select a valid choice"),
    ],
)
def test_bad_people_are_refused_in_place_and_nothing_is_written(client, make_user, changes, message):
    client.force_login(make_user("root", role=Role.ADMIN))
    before = get_user_model().objects.count()
    response = client.post(reverse("person_new"), {**GOOD, **changes}, **HTMX)
    html = response.content.decode().replace("&#x27;", "'").replace("&quot;", '"')
    assert response.status_code == 400 and "<html" not in html and 'id="person-create-form"' in html
    assert message in html
    assert get_user_model().objects.count() == before
    assert not AuditEvent.objects.filter(action="person.create").exists()


def test_only_admins_add_people(client, make_user):
    client.force_login(make_user("lea", role=Role.LEAD))
    assert client.post(reverse("person_new"), GOOD).status_code == 403
    assert not get_user_model().objects.filter(username="noor").exists()


def test_before_any_import_an_admin_types_the_languages_a_reviewer_will_review(client, make_user):
    """With no conversations there is nothing to tick: the codes go in "Other languages", checked too."""
    client.force_login(make_user("root", role=Role.ADMIN))
    page = client.get(reverse("people_list")).content.decode()
    assert 'name="other_languages"' in page and 'type="checkbox" name="languages"' not in page

    refused = client.post(reverse("person_new"), {**GOOD, "languages": [], "other_languages": "ja, x y"}, **HTMX)
    assert refused.status_code == 400 and "x y: not a BCP 47 language code" in refused.content.decode()
    assert not get_user_model().objects.filter(username="noor").exists()

    added = client.post(reverse("person_new"), {**GOOD, "languages": [], "other_languages": "ja, pt-BR,ja"}, **HTMX)
    assert added["HX-Redirect"] == reverse("people_list") + "?added=noor"
    assert get_user_model().objects.get(username="noor").profile.languages == ["ja", "pt-BR"]
