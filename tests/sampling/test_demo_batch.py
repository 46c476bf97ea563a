"""Sampling on the bundled demo dataset: the first batch load_demo queues, and a batch an
admin creates and runs from the admin pages."""

import pytest
from django.core.management import call_command

from annotation.models import Pair, RatingSlot
from sampling.models import SamplingBatch
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(settings):
    settings.RUN_MODE = "embedded"
    call_command("load_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115


def test_load_demo_queues_a_first_batch_of_every_phase_one_method(demo):
    batch = SamplingBatch.objects.get()
    assert batch.status == "succeeded", batch.error
    assert set(batch.pairs_per_method) == {"i2i_csim", "c2c_isim", "c2c_cocaption", "c2i_original"}
    assert batch.pairs_per_method["c2i_original"] == 60
    assert batch.pairs_per_method["c2c_cocaption"] == 20
    assert Pair.objects.count() == sum(batch.pairs_per_method.values())
    assert RatingSlot.objects.count() == 5 * Pair.objects.count()


def test_admin_creates_and_runs_a_batch_on_the_demo(client, demo, django_capture_on_commit_callbacks):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    page = client.get("/admin/sampling/samplingbatch/create/").content.decode()
    assert "demo / demo" in page
    from annotation.models import Split

    split = Split.objects.get(dataset__name="demo")
    before = Pair.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/admin/sampling/samplingbatch/create/",
            {
                "split": split.pk,
                "k": 5,
                "ratings_per_pair": 5,
                "seed": 7,
                "priority": 1,
                "start": "on",
                "use_c2c_cocaption": "on",
                "budget_c2c_cocaption": "30",
            },
        )
    assert response.status_code == 302
    batch = SamplingBatch.objects.order_by("id").last()
    assert batch.status == "succeeded", batch.error
    assert batch.pairs_per_method == {"c2c_cocaption": 30}
    assert Pair.objects.count() == before + 30
    listing = client.get("/admin/sampling/samplingbatch/").content.decode()
    assert "c2c_cocaption: 30" in listing
