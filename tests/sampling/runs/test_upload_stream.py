"""An uploaded pair list is read as a stream: a 60 MB list with an unknown id on
line 3 is refused at once, naming the line, with the request's Python allocations flat;
a valid 60 MB list (about a million rows) is checked in a request whose process stays
under 250 MB; a batch writes its list a chunk at a time in one transaction, so a problem
late in the file leaves nothing written."""

import itertools
import json
import os
import time
import tracemalloc

import pytest
from knox.models import AuthToken

from annotation.models import Pair
from sampling.models import SamplingBatch
from sampling.runs import upload
from sampling.runs.batch import sampling_batch_run
from sampling.services import sampling_batch_create_from_upload
from tests.factories import SplitFactory, UserFactory, make_items
from tests.support.uploads import multipart_file, post_in_a_process, post_through_wsgi
from tests.support.worker_support import database_url

pytestmark = pytest.mark.django_db

HEADER = b"caption1,caption2,sampling_method\n"
TARGET_BYTES = 60 * 2**20
URL = "/api/sampling/batches/upload/"


def bad_from_line_3(a: str, b: str):
    """A good row, an unknown caption on line 3, then rows of unknown captions up to
    TARGET_BYTES."""
    yield HEADER + f"{a},{b},c2c_isim\n{a},COCO_val2014:sentid:999999999,c2c_isim\n".encode()
    written, number = 0, 0
    while written < TARGET_BYTES:
        block = b"".join(f"x:{number + i:09d},y:{number + i:09d},c2c_isim\n".encode() for i in range(10_000))
        number += 10_000
        written += len(block)
        yield block


def rows_of(keys: list[str], target_bytes: int):
    """Distinct caption pairs over ``keys`` up to ``target_bytes``."""
    yield HEADER
    pairs = itertools.combinations(keys, 2)
    written = 0
    while written < target_bytes:
        block = "".join(f"{a},{b},c2c_isim\n" for a, b in itertools.islice(pairs, 10_000)).encode()
        assert block, "not enough distinct pairs for the target size"
        written += len(block)
        yield block


def fields(split) -> dict[str, str]:
    return {"dataset": split.dataset.name, "split": split.name, "start": "false"}


def test_a_60_mb_pair_list_with_an_unknown_id_on_line_3_is_refused_at_once(tmp_path, settings):
    settings.UPLOAD_MAX_PAIRLIST_BYTES = 64 * 2**20
    split = SplitFactory()
    _, captions = make_items(split=split, n_images=1, captions_per_image=2)
    body = tmp_path / "body"
    size = multipart_file(
        body,
        bad_from_line_3(captions[0].key, captions[1].key),
        filename="pairs.csv",
        fields=fields(split),
    )
    assert size > TARGET_BYTES
    _, token = AuthToken.objects.create(user=UserFactory(roles=["admin"]))
    tracemalloc.start()
    started = time.perf_counter()
    try:
        response = post_through_wsgi(body, size, path_info=URL, headers={"HTTP_AUTHORIZATION": f"Token {token}"})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    seconds = time.perf_counter() - started
    assert response.status_code == 400, response.content[:500]
    detail = json.dumps(json.loads(response.content))
    assert "id(s) are not items of split" in detail and "the file was read no further" in detail
    assert f"{split}: line 3: COCO_val2014:sentid:999999999;" in detail, "the first unknown id first"
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.1f} MiB"
    assert seconds < 10, f"{seconds:.1f} s"
    assert not SamplingBatch.objects.exists()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_valid_60_mb_pair_list_is_checked_in_a_process_that_stays_under_250_mb(tmp_path, settings):
    split = SplitFactory()
    _, captions = make_items(split=split, n_images=290, captions_per_image=5)
    body = tmp_path / "body"
    size = multipart_file(
        body, rows_of([c.key for c in captions], TARGET_BYTES), filename="pairs.csv", fields=fields(split)
    )
    assert TARGET_BYTES < size < 64 * 2**20
    _, token = AuthToken.objects.create(user=UserFactory(roles=["admin"]))
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "RUN_MODE": "services",
        "DATABASE_URL": database_url(settings),
        "SECRET_KEY": settings.SECRET_KEY,
        "DATA_DIR": str(settings.DATA_DIR),
    }
    answer = post_in_a_process(body, size, path_info=URL, headers={"HTTP_AUTHORIZATION": f"Token {token}"}, env=env)
    assert answer["status"] == 201, answer["content"]
    batch = SamplingBatch.objects.get()
    assert batch.methods["c2c_isim"] > 900_000
    assert answer["peak_rss_bytes"] < 250 * 2**20, f"peak {answer['peak_rss_bytes'] / 2**20:.0f} MiB"


def test_a_batch_writes_its_list_in_chunks_and_nothing_when_a_late_row_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(upload, "CHUNK_ROWS", 2)
    split = SplitFactory()
    _, captions = make_items(split=split, n_images=2, captions_per_image=3)
    keys = [c.key for c in captions]
    good = "".join(f"{a},{b},c2c_isim\n" for a, b in itertools.combinations(keys, 2))
    path = tmp_path / "pairs.csv"
    path.write_text(HEADER.decode() + good)
    batch = sampling_batch_create_from_upload(dataset_name=split.dataset.name, split_name=split.name, path=path)
    # The caption on the last line is gone by the time the batch runs.
    captions[-1].delete()
    done = sampling_batch_run(batch_id=batch.pk)
    assert done.status == "failed" and "the file was read no further" in done.error
    assert not Pair.objects.filter(batch=batch).exists(), "the chunks written before the problem are rolled back"
