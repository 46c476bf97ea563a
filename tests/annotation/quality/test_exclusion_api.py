"""The exclusions API: admins exclude a rater's ratings and undo it; others may not."""

import pytest

from annotation.models import ExclusionState, Rating, RatingStatus
from tests.factories import SplitFactory, UserFactory
from tests.support.exclusion_support import pair_problems
from tests.support.queue_support import claim, client_for, queue_pairs, rater, submit

pytestmark = [pytest.mark.django_db, pytest.mark.sql_paths]


@pytest.fixture
def rated():
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3, ratings_per_pair=2)
    bad = rater()
    for number in range(3):
        submit(bad, split.dataset, claim(bad, split.dataset).slot_id, f"k{number}")
    return split.dataset, bad


def url(dataset, *rest):
    return "/".join([f"/api/datasets/{dataset.name}/exclusions", *map(str, rest), ""])


def test_an_admin_excludes_a_rater_and_undoes_it(admin_api, rated, django_capture_on_commit_callbacks):
    dataset, bad = rated
    with django_capture_on_commit_callbacks(execute=True):
        answer = admin_api.post(url(dataset), {"rater": bad.username, "reason": "clicked through"}, format="json")
    assert answer.status_code == 202, answer.json()
    body = answer.json()
    assert (body["rater"], body["reason"], body["state"]) == (bad.username, "clicked through", "applying")
    detail = admin_api.get(url(dataset, body["id"])).json()
    assert (detail["state"], detail["ratings_excluded"], detail["slots_reopened"]) == ("applied", 3, 3)
    assert [row["id"] for row in admin_api.get(url(dataset)).json()] == [body["id"]]
    assert set(Rating.objects.filter(rater=bad).values_list("status", flat=True)) == {RatingStatus.EXCLUDED}
    with django_capture_on_commit_callbacks(execute=True):
        undone = admin_api.post(url(dataset, body["id"], "undo"), {"reason": "wrong rater"}, format="json")
    assert undone.status_code == 202
    detail = admin_api.get(url(dataset, body["id"])).json()
    assert (detail["state"], detail["ratings_restored"], detail["undo_reason"]) == (
        ExclusionState.UNDONE,
        3,
        "wrong rater",
    )
    again = admin_api.post(url(dataset, body["id"], "undo"), {}, format="json")
    assert again.status_code == 409
    assert again.json() == {
        "detail": f"exclusion #{body['id']} is undone; only an applied exclusion can be undone",
        "code": "conflict",
    }
    assert pair_problems(dataset.id) == []


@pytest.mark.parametrize(
    ("payload", "status", "detail"),
    [
        ({"rater": "nobody", "reason": "x"}, 404, "no user named 'nobody'"),
        ({"rater": "BAD", "reason": " "}, 400, None),
        (
            {
                "rater": "BAD",
                "reason": "x",
                "window_start": "2001-01-02T00:00:00Z",
                "window_end": "2001-01-01T00:00:00Z",
            },
            400,
            "window_start must be before window_end",
        ),
        ({"rater": "BAD", "reason": "x", "window_end": "2001-01-01T00:00:00Z"}, 400, "has no valid ratings in"),
    ],
)
def test_bad_requests_are_refused_naming_the_problem(admin_api, rated, payload, status, detail):
    dataset, bad = rated
    payload = {key: bad.username if value == "BAD" else value for key, value in payload.items()}
    answer = admin_api.post(url(dataset), payload, format="json")
    assert answer.status_code == status
    if detail is not None:
        assert detail in answer.json()["detail"]
    assert not Rating.objects.exclude(status=RatingStatus.VALID).exists()


def test_unknown_dataset_and_exclusion_are_not_found(admin_api, rated):
    dataset, _ = rated
    assert admin_api.get("/api/datasets/no-such/exclusions/").json()["detail"] == "no dataset named 'no-such'"
    assert admin_api.get(url(dataset, 999)).status_code == 404


@pytest.mark.parametrize("role", ["rater", "researcher"])
def test_only_admins_may_exclude(rated, role):
    dataset, bad = rated
    client = client_for(UserFactory(roles=[role]))
    assert client.get(url(dataset)).status_code == 403
    assert client.post(url(dataset), {"rater": bad.username, "reason": "x"}, format="json").status_code == 403
