"""A large gold CSV is read as a stream (a 59.5 MB gold CSV was read
whole before its first problem was reported, 17 s and a worker from 150 to 760 MB): a
60 MB file with a problem on line 3 is refused at once, naming the line and column, in
the API and in the admin's preview, with the Python allocations of the request flat; a
valid file as large as a gold file may be (MAX_ROWS rows with long explanations) is added
in one transaction with its peak under 250 MB; nothing is half written."""

import itertools
import json
import os
import time
import tracemalloc

import pytest
from django.conf import settings as django_settings
from django.test import Client
from knox.models import AuthToken

from annotation.models import GoldPair
from annotation.quality.gold import gold_file
from annotation.quality.gold.gold_file import MAX_ROWS
from tests.factories import ImageFactory, SplitFactory, UserFactory
from tests.support.uploads import multipart_file, post_in_a_process, post_through_wsgi
from tests.support.worker_support import database_url

pytestmark = pytest.mark.django_db

HEADER = b"image1,image2,gold_score,explanation\n"
TARGET_BYTES = 60 * 2**20


def bad_from_line_3(a: str, b: str, c: str):
    """A valid row, a score out of range on line 3, then rows of keys the dataset lacks
    up to TARGET_BYTES."""
    yield HEADER + f"{a},{b},1.5,fine\n{a},{c},9,out of range\n".encode()
    written, number = 0, 0
    while written < TARGET_BYTES:
        block = b"".join(f"x{number + i:09d}.jpg,y{number + i:09d}.jpg,2,unknown\n".encode() for i in range(10_000))
        number += 10_000
        written += len(block)
        yield block


def measured(call):
    """``call()``'s answer, its peak of Python allocations and its seconds."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        answer = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return answer, peak, time.perf_counter() - started


@pytest.fixture
def split(settings):
    settings.UPLOAD_MAX_PAIRLIST_BYTES = 64 * 2**20
    return SplitFactory()


def test_a_60_mb_gold_file_with_a_problem_on_line_3_is_refused_at_once_through_the_api(tmp_path, split):
    a, b, c = (ImageFactory(split=split, dataset=split.dataset).key for _ in range(3))
    body = tmp_path / "body"
    size = multipart_file(body, bad_from_line_3(a, b, c), filename="gold.csv")
    assert size > TARGET_BYTES
    _, token = AuthToken.objects.create(user=UserFactory(roles=["admin"]))
    url = f"/api/datasets/{split.dataset.name}/gold/"
    response, peak, seconds = measured(
        lambda: post_through_wsgi(body, size, path_info=url, headers={"HTTP_AUTHORIZATION": f"Token {token}"})
    )
    assert response.status_code == 400, response.content[:500]
    assert json.loads(response.content)["detail"] == "gold.csv: line 3, column gold_score: 9 is not between 0 and 5"
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.1f} MiB"
    assert seconds < 10, f"{seconds:.1f} s"
    assert not GoldPair.objects.exists(), "nothing written, not even line 2's pair"


def test_the_admin_preview_of_a_60_mb_gold_file_stops_at_its_problems(tmp_path, split, admin_client):
    a, b, c = (ImageFactory(split=split, dataset=split.dataset).key for _ in range(3))
    body = tmp_path / "body"
    size = multipart_file(
        body, bad_from_line_3(a, b, c), filename="gold.csv", fields={"dataset": str(split.dataset.pk)}
    )
    cookie = admin_client.cookies[django_settings.SESSION_COOKIE_NAME]
    response, peak, seconds = measured(
        lambda: post_through_wsgi(
            body,
            size,
            path_info="/admin/annotation/goldpair/upload/",
            headers={"HTTP_COOKIE": f"{cookie.key}={cookie.value}"},
        )
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "gold.csv: reading stopped at line 22, after 21 SIS rows with 20 problems" in " ".join(page.split())
    assert "line 3, column gold_score: 9 is not between 0 and 5" in page
    assert 'name="token"' not in page, "nothing to save"
    assert peak < 32 * 2**20, f"peak {peak / 2**20:.1f} MiB"
    assert seconds < 10, f"{seconds:.1f} s"
    assert not GoldPair.objects.exists()


def long_rows(keys: list[str], rows: int, explanation_chars: int):
    """``rows`` distinct valid SIS rows over ``keys``, each with a long explanation."""
    explanation = ("the two scenes share the setting but not the action " * 40)[:explanation_chars]
    yield HEADER
    pairs = itertools.islice(itertools.combinations(keys, 2), rows)
    for chunk in iter(lambda: list(itertools.islice(pairs, 1000)), []):
        yield "".join(f'{a},{b},{(i % 50) / 10},"{explanation}"\n' for i, (a, b) in enumerate(chunk)).encode()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_valid_gold_file_of_the_largest_size_is_added_in_a_process_that_stays_under_250_mb(tmp_path, settings):
    """Measured in a process of its own (its peak resident memory, Django loaded
    included), through the API as a server hands the request over."""
    split = SplitFactory()
    images = [ImageFactory(split=split, dataset=split.dataset) for _ in range(330)]
    path = tmp_path / "gold.csv"
    with path.open("wb") as out:
        for chunk in long_rows([image.key for image in images], MAX_ROWS, explanation_chars=1200):
            out.write(chunk)
    body = tmp_path / "body"
    with path.open("rb") as rows:
        size = multipart_file(body, iter(lambda: rows.read(2**20), b""), filename="gold.csv")
    assert 58 * 2**20 < size < 64 * 2**20
    _, token = AuthToken.objects.create(user=UserFactory(roles=["admin"]))
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "RUN_MODE": "services",
        "DATABASE_URL": database_url(settings),
        "SECRET_KEY": settings.SECRET_KEY,
        "DATA_DIR": str(settings.DATA_DIR),
    }
    answer = post_in_a_process(
        body,
        size,
        path_info=f"/api/datasets/{split.dataset.name}/gold/",
        headers={"HTTP_AUTHORIZATION": f"Token {token}"},
        env=env,
    )
    assert answer["status"] == 201, answer["content"]
    assert json.loads(answer["content"]) == {"created": MAX_ROWS}
    assert GoldPair.objects.filter(dataset=split.dataset).count() == MAX_ROWS
    assert answer["peak_rss_bytes"] < 250 * 2**20, f"peak {answer['peak_rss_bytes'] / 2**20:.0f} MiB"


def test_a_gold_file_over_the_row_limit_is_refused_at_the_first_row_beyond_it(tmp_path, split, monkeypatch):
    monkeypatch.setattr(gold_file, "MAX_ROWS", 3)
    keys = [ImageFactory(split=split, dataset=split.dataset).key for _ in range(3)]
    path = tmp_path / "gold.csv"
    rows = (f"{a},{b},1,r\n" for a, b in itertools.combinations(keys, 2))
    path.write_text(HEADER.decode() + "".join(rows) + f"{keys[0]},{keys[0]}x,1,r\n")
    admin = Client()
    admin.force_login(UserFactory(roles=["admin"]))
    with path.open("rb") as handle:
        answer = admin.post(f"/api/datasets/{split.dataset.name}/gold/", {"file": handle})
    assert answer.status_code == 400
    assert answer.json()["detail"] == "gold.csv: line 5: more than 3 gold pairs in one file"
    assert not GoldPair.objects.exists()
