"""The rating page's hot path: a token client, a rated dataset, a submit-and-claim
cycle and the prepared statements each round trip runs."""

from django.db import connection
from django.test.utils import CaptureQueriesContext
from knox.models import AuthToken
from rest_framework.test import APIClient

from annotation.apis.fields import rater_id_decode
from annotation.models import QualitySettings
from tests.factories import SplitFactory, UserFactory
from tests.support.crowd_support import gold_upload
from tests.support.queue_support import queue_pairs


def token_client(user) -> APIClient:
    _, key = AuthToken.objects.create(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


# Every token request looks its token up first, in a round trip of its own: its user,
# roles and expiry in one statement. Then the claim statement: in a dataset without
# active gold pairs the one without the gold half; in one with them (once the process has
# seen one there, and its gold rate) the one that resumes a held gold item when the
# process did not draw gold's turn, the one that also takes the turn when it did.
LOOKUP = "auth_knox_token_roles"


BODY = {"score": 2.5, "time_on_item_ms": 4000, "time_to_first_move_ms": 600, "adjustments": 1}


def statement_names(queries) -> list[str]:
    """Each captured round trip as the names of the prepared statements it runs (without
    their version), joined by "+", or its SQL's first word."""
    names = []
    for query in queries:
        if "EXECUTE " not in query["sql"]:
            names.append(query["sql"].split()[0].upper())
            continue
        words = [part.split()[0].strip("(") for part in query["sql"].split("EXECUTE ")[1:]]
        names.append("+".join(word.rsplit("_v", 1)[0] for word in words))
    return names


def cycle(client, dataset: str, key: str) -> tuple[list[str], list[str], int]:
    """One claim and one submit: the statements of each, and the claimed slot's id (in
    the database)."""
    with CaptureQueriesContext(connection) as claimed:
        response = client.post(f"/api/rate/{dataset}/claim/", {"kind": "SIS"}, format="json")
    assert response.status_code == 200, response.content
    opaque_id = response.json()["slot_id"]
    body = BODY
    with CaptureQueriesContext(connection) as submitted:
        stored = client.post(
            f"/api/rate/{dataset}/slots/{opaque_id}/submit/", {**body, "idempotency_key": key}, format="json"
        )
    assert stored.status_code == 201, stored.content
    slot_id = rater_id_decode("slot", str(opaque_id))
    return statement_names(claimed.captured_queries), statement_names(submitted.captured_queries), slot_id


def rated_dataset(settings, tmp_path, *, gold_one_in: int | None, gold_pairs: int = 4):
    """Six SIS pairs (three ratings each), with ``gold_pairs`` gold pairs served one in
    ``gold_one_in`` items when it is given, and a qualified rater's token client."""
    settings.SQL_PATHS = "postgres"
    settings.DB_PREPARED_STATEMENTS = True
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=6, ratings_per_pair=3)
    if gold_one_in is not None:
        gold_upload(split, "SIS", gold_pairs, tmp_path)
        QualitySettings.objects.create(dataset=split.dataset, gold_one_in=gold_one_in)
    client = token_client(UserFactory(roles=["rater"], qualified_for=["SIS"]))
    # Prepares the statements once per connection; the first claim with the gold half
    # also reads the dataset's gold rate, with which the second draws the turn.
    cycle(client, split.dataset.name, "warm")
    cycle(client, split.dataset.name, "warm again")
    return split.dataset.name, client


PAGE = {"progress_tz": "Europe/Berlin"}
