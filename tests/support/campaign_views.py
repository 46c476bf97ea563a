"""The campaign pages over HTTP: a client with roles and the raters of the rated campaign."""

from django.test import Client

from tests.factories import UserFactory

RATER_NAMES = ["ann", "ben", "cat", "dan", "eve"]


def client_for(*roles, staff=False) -> Client:
    client = Client()
    client.force_login(UserFactory(roles=list(roles), is_staff=staff))
    return client
