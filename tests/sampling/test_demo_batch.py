"""Sampling on the bundled demo dataset: the first batch load_demo queues, and a batch an
admin creates and runs from the admin pages."""

import pytest
from django.core.management import call_command

from annotation.models import Pair, RatingSlot
from annotation.serving.pairs import PairSpec, pairs_create_bulk
from sampling.errors import SamplingInputError
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
    # Every original pair but the one a worked example shows (caption 1 of the cat photo).
    assert batch.pairs_per_method["c2i_original"] == 60 - 1
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


def test_no_worked_example_is_served_and_the_admin_flags_one_that_is_queued(client, demo):
    from frontend.models import WorkedExample
    from frontend.selectors import worked_example_queued_pair

    examples = list(WorkedExample.objects.all())
    assert len(examples) == 9
    assert [worked_example_queued_pair(example=example) for example in examples] == [None] * 9
    # A pair list can still queue one: the examples page says so and retires it.
    sits = next(example for example in examples if example.kind == "SITS")
    batch = SamplingBatch.objects.create(
        dataset=sits.dataset, split=sits.caption_a.image.split, methods={"uploaded": 1}, source="uploaded"
    )
    pairs_create_bulk(
        batch=batch, specs=[PairSpec("SITS", "uploaded", caption_a=sits.caption_a_id, image_a=sits.image_a_id)]
    )
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    page = client.get("/admin/frontend/workedexample/").content.decode()
    queued = worked_example_queued_pair(example=sits)
    assert f"pair #{queued.pk}" in page
    client.post("/admin/frontend/workedexample/", {"action": "retire_queued_pairs", "_selected_action": [sits.pk]})
    assert worked_example_queued_pair(example=sits) is None
    assert not RatingSlot.objects.filter(pair=queued, state="open").exists()


def test_a_budget_check_counts_worked_examples_as_taken(demo):
    from sampling.selectors import split_summary
    from sampling.services import sampling_batch_create

    split = SamplingBatch.objects.get().split
    summary = split_summary(split=split)
    # All 60 original pairs: 59 queued by the first batch, 1 shown as a worked example.
    assert summary.capacity("c2i_original", k=5, n_spaces=0) == (0, True)
    with pytest.raises(SamplingInputError, match="c2i_original: budget 1 is more than the 0 fresh pairs"):
        sampling_batch_create(dataset_name="demo", split_name=split.name, methods={"c2i_original": 1})
