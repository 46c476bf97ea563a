"""The gold pairs and quality settings API (admins only)."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import GoldPair, QualitySettings
from tests.factories import ImageFactory, SplitFactory, UserFactory
from tests.support.queue_support import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def split():
    return SplitFactory()


def gold_csv(split, rows=3, score="2.5") -> SimpleUploadedFile:
    images = [ImageFactory(split=split, dataset=split.dataset) for _ in range(rows + 1)]
    lines = ["image1,image2,gold_score,explanation"]
    lines += [f"{images[i].key},{images[i + 1].key},{score},why {i}" for i in range(rows)]
    return SimpleUploadedFile("gold.csv", ("\n".join(lines) + "\n").encode(), content_type="text/csv")


def test_upload_list_and_filter(admin_api, split):
    base = f"/api/datasets/{split.dataset.name}/gold/"
    answer = admin_api.post(base, {"file": gold_csv(split)}, format="multipart")
    assert answer.status_code == 201 and answer.json() == {"created": 3}
    listed = admin_api.get(base).json()
    assert [row["explanation"] for row in listed] == ["why 0", "why 1", "why 2"]
    assert listed[0]["kind"] == "SIS" and listed[0]["ratings"] == 0 and listed[0]["item1"].endswith(".jpg")
    assert admin_api.get(base + "?kind=STS").json() == []
    assert len(admin_api.get(base + "?active=true").json()) == 3
    assert admin_api.get(base + "?active=maybe").status_code == 400


def test_a_bad_file_names_the_problem_and_adds_nothing(admin_api, split):
    answer = admin_api.post(
        f"/api/datasets/{split.dataset.name}/gold/", {"file": gold_csv(split, score="9")}, format="multipart"
    )
    assert answer.status_code == 400
    assert answer.json()["detail"] == "gold.csv: line 2, column gold_score: 9 is not between 0 and 5"
    assert not GoldPair.objects.exists()


def test_quality_settings_default_then_set(admin_api, split):
    url = f"/api/datasets/{split.dataset.name}/quality/"
    assert admin_api.get(url).json() == {
        "gold_one_in": 20,
        "auto_pause": False,
        "pause_window": 5,
        "pause_max_error": 1.0,
        "flag_loo_below": 0.3,
        "flag_gold_error_above": 1.0,
        "flag_fast_share_above": 0.5,
        "flag_gold_skip_share_above": 0.5,
        "flag_noise_above": 1.5,
    }
    payload = {"gold_one_in": 10, "auto_pause": True, "pause_window": 4, "pause_max_error": 0.8}
    flags = {"flag_loo_below": 0.3, "flag_gold_error_above": 1.0, "flag_fast_share_above": 0.5}
    assert admin_api.put(url, payload, format="json").json() == {
        **payload,
        **flags,
        "flag_gold_skip_share_above": 0.5,
        "flag_noise_above": 1.5,
    }
    assert QualitySettings.objects.get(dataset=split.dataset).gold_one_in == 10
    assert admin_api.put(url, {**payload, "pause_window": 0}, format="json").status_code == 400


@pytest.mark.parametrize("role", ["rater", "researcher"])
def test_only_admins(split, role):
    client = client_for(UserFactory(roles=[role]))
    assert client.get(f"/api/datasets/{split.dataset.name}/gold/").status_code == 403
    assert client.get(f"/api/datasets/{split.dataset.name}/quality/").status_code == 403


def test_a_pair_already_gold_is_refused_naming_its_line(admin_api, split):
    a, b, c = (ImageFactory(split=split, dataset=split.dataset) for _ in range(3))
    base = f"/api/datasets/{split.dataset.name}/gold/"
    first = SimpleUploadedFile("first.csv", f"image1,image2,gold_score\n{a.key},{b.key},2\n".encode())
    assert admin_api.post(base, {"file": first}, format="multipart").status_code == 201
    again = f"image1,image2,gold_score\n{a.key},{c.key},1\n{b.key},{a.key},3\n"
    answer = admin_api.post(base, {"file": SimpleUploadedFile("again.csv", again.encode())}, format="multipart")
    assert answer.status_code == 400
    gold = GoldPair.objects.get()
    assert answer.json()["detail"] == (
        f"again.csv: line 3: the pair {b.key}, {a.key} is gold pair #{gold.pk} of {split.dataset.name} already"
    )
    assert GoldPair.objects.count() == 1


def test_flag_thresholds_are_set_turned_off_and_kept_in_range(admin_api, split):
    url = f"/api/datasets/{split.dataset.name}/quality/"
    off = {"flag_loo_below": None, "flag_gold_error_above": 1.5, "flag_fast_share_above": 0.25}
    answer = admin_api.put(url, {**off, "flag_gold_skip_share_above": None}, format="json")
    assert answer.status_code == 200, answer.content
    stored = QualitySettings.objects.get(dataset=split.dataset)
    assert (stored.flag_loo_below, stored.flag_gold_error_above, stored.flag_gold_skip_share_above) == (None, 1.5, None)
    for field, value in (
        ("flag_loo_below", 1.5),
        ("flag_gold_error_above", 6),
        ("flag_fast_share_above", 2),
        ("flag_gold_skip_share_above", -0.1),
        ("flag_noise_above", 5.5),
    ):
        refused = admin_api.put(url, {field: value}, format="json")
        assert refused.status_code == 400 and field in refused.json()["detail"], (field, refused.content)


@pytest.mark.parametrize(
    ("field", "value", "constraint"),
    [
        ("flag_loo_below", -1.01, "quality_flag_loo_in_range"),
        ("flag_gold_error_above", 5.5, "quality_flag_gold_error_in_range"),
        ("flag_fast_share_above", 1.2, "quality_flag_fast_share_in_range"),
        ("flag_gold_skip_share_above", -0.5, "quality_flag_gold_skip_share_in_range"),
        ("flag_noise_above", -0.1, "quality_flag_noise_in_range"),
    ],
)
def test_the_database_refuses_a_threshold_out_of_range(split, field, value, constraint):
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError, match=constraint), transaction.atomic():
        QualitySettings.objects.create(dataset=split.dataset, **{field: value})
