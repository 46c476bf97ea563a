"""What a gold submit locks: its lease, never the dataset's row. Every rating stored in a
dataset checks its foreign key to the dataset with a FOR KEY SHARE lock; a gold submit
that locked the dataset FOR UPDATE would make every ordinary submit of the dataset wait
for it (and it for them): one of the causes of the queue benchmark's loss with gold on."""

import pytest
from django.db import connection

from annotation.models import GoldLease, GoldRating, QualitySettings, TaskKind
from tests.factories import SplitFactory
from tests.support.crowd_support import gold_upload
from tests.support.queue_support import claim, queue_pairs, rater, submit
from tests.support.runner_support import another_session

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def dataset_referenced_elsewhere(dataset_id: int):
    """A second session in the middle of storing a rating of the dataset: it holds the
    dataset row's FOR KEY SHARE lock, as an insert's foreign key check takes it."""
    other = another_session()
    with other.cursor() as cursor:
        cursor.execute("SELECT 1 FROM annotation_dataset WHERE id = %s FOR KEY SHARE", [dataset_id])
    return other


def test_a_gold_submit_does_not_wait_for_a_rating_in_flight_in_its_dataset(clock, tmp_path):
    assert connection.vendor == "postgresql"
    split = SplitFactory()
    queue_pairs(split=split, n_pairs=3)
    gold_upload(split, TaskKind.SIS, 3, tmp_path)
    dataset = split.dataset
    QualitySettings.objects.create(dataset=dataset, gold_one_in=1)
    user = rater(["SIS"])
    held = claim(user, dataset)
    assert GoldLease.objects.filter(pk=held.slot_id).exists()
    other = dataset_referenced_elsewhere(dataset.pk)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '2s'")
        stored = submit(user, dataset, held.slot_id, "k1")
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
        other.close()
    assert GoldRating.objects.filter(pk=stored.rating_id, lease_id=held.slot_id).exists()
