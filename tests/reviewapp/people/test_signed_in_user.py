"""The signed-in user of each request is read with their profile in one statement, as the ORM would read
them; a user without a profile has none, and asking for it reads nothing more."""

import pytest
from django.contrib.auth import get_user_model

from reviewapp import access
from reviewapp.models import Role
from reviewapp.people.auth_backends import ProfileModelBackend, signed_in_user
from tests.factories import user as make_user

pytestmark = pytest.mark.django_db


def test_the_user_comes_with_their_profile_in_one_statement(django_assert_num_queries):
    ana = make_user("ana", role=Role.LEAD, languages=["fr", "de-CH"])
    expected = get_user_model().objects.select_related("profile").get(pk=ana.pk)
    with django_assert_num_queries(1):
        read = ProfileModelBackend().get_user(str(ana.pk))
        assert access.is_lead(read) and access.assigned_languages(read) == ["fr", "de-CH"]
        assert read.profile.user is read
    for field in get_user_model()._meta.concrete_fields:
        assert getattr(read, field.attname) == getattr(expected, field.attname), field.name
    assert (read.profile.pk, read.profile.role) == (expected.profile.pk, "lead")


def test_a_user_without_a_profile_has_none_and_inactive_or_missing_users_are_nobody(django_assert_num_queries):
    bare = get_user_model().objects.create_user("bare", password="x" * 12)
    with django_assert_num_queries(1):
        read = signed_in_user(bare.pk)
        assert access.profile_of(read) is None and access.assigned_languages(read) == []
    assert signed_in_user(bare.pk + 100) is None
    bare.is_active = False
    bare.save()
    assert ProfileModelBackend().get_user(bare.pk) is None
