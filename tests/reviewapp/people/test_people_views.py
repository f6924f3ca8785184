"""The People page: admins set roles and languages; every change is audited."""

import pytest
from django.urls import reverse

from reviewapp.models import AuditEvent, Role
from tests.factories import HTMX

pytestmark = pytest.mark.django_db


def test_admin_lists_people_and_filters_by_role(client, make_user):
    admin = make_user("root", role=Role.ADMIN)
    make_user("ana", languages=["fr", "de"])
    make_user("lea", role=Role.LEAD)
    client.force_login(admin)

    html = client.get(reverse("people_list")).content.decode()
    assert "ana" in html and '<span class="lang">de</span>' in html and "all languages" in html
    fragment = client.get(reverse("people_list"), {"role": "lead"}, **HTMX)
    assert "<html" not in fragment.content.decode()
    assert [p.username for p in fragment.context["people"]] == ["lea"]


def test_admin_edits_role_and_languages_with_an_audit_event(client, make_user):
    admin = make_user("root", role=Role.ADMIN)
    ana = make_user("ana", languages=["fr"])
    client.force_login(admin)
    assert client.get(reverse("person_edit", args=[ana.pk])).status_code == 200

    response = client.post(
        reverse("person_edit", args=[ana.pk]),
        {"role": "reviewer", "languages": ["fr", "ja", "ko", "fr"], "is_active": "on"},
    )

    assert response.status_code == 302
    ana.profile.refresh_from_db()
    assert ana.profile.languages == ["fr", "ja", "ko"]
    event = AuditEvent.objects.get(action="profile.update")
    assert (
        event.actor == admin and event.before["languages"] == ["fr"] and event.after["languages"] == ["fr", "ja", "ko"]
    )

    bad = client.post(reverse("person_edit", args=[ana.pk]), {"role": "reviewer", "languages": "french!"})
    assert bad.status_code == 400 and "not a BCP 47" in bad.content.decode()
    itself = client.post(reverse("person_edit", args=[admin.pk]), {"role": "reviewer", "languages": []})
    assert itself.status_code == 400 and "admin role from yourself" in itself.content.decode()


def test_reviewers_and_leads_cannot_manage_people(client, make_user):
    ana = make_user("ana", languages=["fr"])
    for user in (ana, make_user("lea", role=Role.LEAD)):
        client.force_login(user)
        assert client.get(reverse("people_list")).status_code == 403
        assert client.get(reverse("people_list"), **HTMX).status_code == 403
        assert client.post(reverse("person_edit", args=[ana.pk]), {"role": "admin", "languages": ""}).status_code == 403
    ana.profile.refresh_from_db()
    assert ana.profile.role == Role.REVIEWER


@pytest.mark.parametrize("size", [2, 30])
def test_people_page_runs_a_fixed_number_of_queries(client, make_user, django_assert_max_num_queries, size):
    client.force_login(make_user("root", role=Role.ADMIN))
    for n in range(size):
        make_user(f"user{n}", languages=["fr"])
    with django_assert_max_num_queries(6):
        assert client.get(reverse("people_list")).status_code == 200
