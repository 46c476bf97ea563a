"""``manage.py review_failures``: queue an explained evaluation's failures once, print the
review's figures, write its file; a job it cannot queue is named."""

import csv
import io

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Pair, TaskKind
from tests.support.review_support import review_all, reviewer

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def run(*args) -> str:
    out = io.StringIO()
    call_command("review_failures", *args, stdout=out)
    return out.getvalue()


def test_the_command_queues_once_and_prints_the_figures(job, tmp_path):
    dataset, job_id = job
    text = run(str(job_id), "--raters", "2")
    assert "Queued 12 failures for review (6 new items)." in text
    assert "one: 0 of 6 failures reviewed, 0 by every rater" in text
    for _ in range(2):
        review_all(reviewer()[1], dataset, score_of=lambda item: 1.0 + len(item["query"]) % 4)
    # Left out, the number of raters is the one queued for: the figures are read again.
    again = run(str(job_id), "--csv", str(tmp_path / "review.csv"))
    assert "were queued before; nothing was added" in again and Pair.objects.filter(kind=TaskKind.REV).count() == 6
    assert "one: 6 of 6 failures reviewed, 6 by every rater" in again
    assert "Object class" in again and "100%  (6 of 6)" in again
    lines = [line for line in again.splitlines() if line.strip().startswith(("CA ", "NCS ", "CE ", "SD "))]
    assert len(lines) == 8 and all("n " in line for line in lines)
    rows = list(csv.DictReader((tmp_path / "review.csv").open()))
    assert len(rows) == 12 and {row["raters"] for row in rows} == {"2"}


def test_a_job_it_cannot_queue_is_named(job):
    with pytest.raises(CommandError, match="no evaluation job #424242"):
        run("424242")
    with pytest.raises(CommandError, match="raters per failure is a whole number from 1 to 50"):
        run(str(job[1]), "--raters", "0")
    run(str(job[1]))
    assert Pair.objects.get(kind=TaskKind.REV, caption_a__key__endswith=":100").ratings_required == 5
    with pytest.raises(CommandError, match="queued for 5 raters each already"):
        run(str(job[1]), "--raters", "3")
