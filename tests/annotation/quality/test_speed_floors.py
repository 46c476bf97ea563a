"""Speed floors per dataset and kind: edited inline on the Dataset admin page, kept
sane by the database, read by the snapshot with the documented defaults."""

import pytest
from django.db import IntegrityError, transaction

from annotation.dashboard.reads import speed_floors
from annotation.models import SpeedFloor
from tests.factories import DatasetFactory

pytestmark = pytest.mark.django_db


def test_the_dataset_admin_page_edits_speed_floors_inline(admin_client):
    dataset = DatasetFactory(name="floors")
    url = f"/admin/annotation/dataset/{dataset.pk}/change/"
    page = admin_client.get(url).content.decode()
    assert "speed_floors-TOTAL_FORMS" in page and "STS 3 s, SIS 1.5 s, SITS 1.5 s" in page
    form = {
        "name": "floors",
        "images_root": "",
        "image_url_prefix": dataset.image_url_prefix,
        "speed_floors-TOTAL_FORMS": "1",
        "quality_settings-TOTAL_FORMS": "0",
        "quality_settings-INITIAL_FORMS": "0",
        "speed_floors-INITIAL_FORMS": "0",
        "speed_floors-MIN_NUM_FORMS": "0",
        "speed_floors-MAX_NUM_FORMS": "3",
        "speed_floors-0-kind": "SIS",
        "speed_floors-0-seconds": "2.5",
    }
    response = admin_client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert speed_floors(dataset) == {"STS": 3.0, "SIS": 2.5, "SITS": 1.5}


def test_a_floor_is_one_per_kind_and_never_negative():
    dataset = DatasetFactory()
    SpeedFloor.objects.create(dataset=dataset, kind="STS", seconds=4.0)
    with pytest.raises(IntegrityError), transaction.atomic():
        SpeedFloor.objects.create(dataset=dataset, kind="STS", seconds=5.0)
    with pytest.raises(IntegrityError), transaction.atomic():
        SpeedFloor.objects.create(dataset=dataset, kind="SIS", seconds=-1.0)
    assert speed_floors(DatasetFactory()) == {"STS": 3.0, "SIS": 1.5, "SITS": 1.5}
