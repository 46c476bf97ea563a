"""Crowd-entry benchmark: participants arriving through a Prolific campaign link over HTTP
(the web server + PostgreSQL), each rating until the link's quota.

A fresh database ``cxc_bench_join`` gets a dataset of 60 images with 600 SIS pairs (5
ratings each) and one campaign link (SIS, quota BENCH_JOIN_QUOTA, default 10). Then
BENCH_JOIN_PARTICIPANTS (default 200) simulated participants arrive as a Poisson stream
of BENCH_JOIN_RATE per second (default 5: all 200 places taken within about 40 s) and
work concurrently (about 150 at once at the peak), each in its own browser-like session
(cookies, CSRF token):

- open ``/join/<token>/?PROLIFIC_PID=..&STUDY_ID=..&SESSION_ID=..`` (timed: the join),
  follow it to the rating page; one in ten opens the link a second time at once, as a
  second tab would;
- claim and submit through the rating API, BENCH_JOIN_THINK_S (default 6) seconds per
  item on average (exponential: some much faster), until the server answers
  ``quota_reached``;
- open the completion page and read the code.

Afterwards the database is checked: raters per external id (``duplicate_raters`` counts
accounts beyond one per participant) and participants over their quota.

The last line is one JSON object: ``{"join_p50_ms", "join_p95_ms", "participants",
"duplicate_raters", ...}``. The load generator shares the cores with the server and the
database: compare runs on an otherwise idle machine.

Under BENCH_SMOKE=1: 10 participants at 20 per second, quota 3, 0.05 s per item, unless
the variables above say otherwise. BENCH_JOIN_PORT (default 8131) and BENCH_DATABASE
(default cxc_bench_join) say where it runs.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests
from _common import (
    drop_database,
    env_database,
    env_number,
    fresh_database,
    print_figures,
    setup_django,
    sized,
    start_web_server,
    stop_server,
)

DATABASE = env_database("cxc_bench_join")
PORT = env_number("BENCH_JOIN_PORT", 8131, minimum=1024)
PARTICIPANTS = sized("BENCH_JOIN_PARTICIPANTS", 200, 10)
ARRIVALS_PER_S = sized("BENCH_JOIN_RATE", 5.0, 20.0, minimum=0.01)
THINK_S = sized("BENCH_JOIN_THINK_S", 6.0, 0.05, minimum=0)
QUOTA = sized("BENCH_JOIN_QUOTA", 10, 3)
SECOND_TAB_SHARE = 0.1
CODE = "BENCHJOIN1"


def prepare() -> str:
    """The dataset, its pairs and the link, written through the services; the link token."""
    from annotation.models import Dataset, Image, QualitySettings, Split
    from annotation.people.crowd.links import campaign_link_create
    from annotation.serving.pairs import PairSpec, pairs_create_bulk
    from sampling.models import SamplingBatch

    dataset = Dataset.objects.create(name="bench-join", images_root=tempfile.gettempdir())
    split = Split.objects.create(dataset=dataset, name="test")
    images = Image.objects.bulk_create(
        [Image(dataset=dataset, split=split, key=f"img{i:03d}.jpg", file_path=f"img{i:03d}.jpg") for i in range(60)]
    )
    batch = SamplingBatch.objects.create(dataset=dataset, split=split, methods={"uploaded": None}, ratings_per_pair=5)
    specs = [
        PairSpec("SIS", "i2i_csim", image_a=a.pk, image_b=b.pk)
        for index, (a, b) in enumerate((a, b) for i, a in enumerate(images) for b in images[i + 1 :])
        if index < 600
    ]
    pairs_create_bulk(batch=batch, specs=specs)
    QualitySettings.objects.create(dataset=dataset, gold_one_in=0)
    link = campaign_link_create(dataset=dataset, name="bench", kinds=["SIS"], quota=QUOTA, completion_code=CODE)
    return link.token


class Participant:
    """One simulated participant: a session of their own, timed joins, items rated."""

    def __init__(self, base: str, token: str, pid: str):
        self.base, self.token, self.pid = base, token, pid
        self.session = requests.Session()
        self.join_ms: list[float] = []
        self.items = 0
        self.code = ""
        self.errors: list[str] = []
        self.active: tuple[float, float] = (0.0, 0.0)

    def join(self) -> None:
        query = {"PROLIFIC_PID": self.pid, "STUDY_ID": "bench-study", "SESSION_ID": uuid.uuid4().hex[:24]}
        started = time.perf_counter()
        answer = self.session.get(f"{self.base}/join/{self.token}/", params=query, allow_redirects=False, timeout=60)
        self.join_ms.append((time.perf_counter() - started) * 1000)
        if answer.status_code != 302:
            self.errors.append(f"join: HTTP {answer.status_code}")
            return
        # The join sends them straight on to the rating page.
        page = self.session.get(self.base + answer.headers["Location"], timeout=60)
        if page.status_code != 200 or "/rate/bench-join/sis/" not in page.url:
            self.errors.append(f"join: landed on {page.url} ({page.status_code})")

    def rate(self) -> None:
        api = f"{self.base}/api/rate/bench-join"
        headers = {"X-CSRFToken": self.session.cookies.get("csrftoken", ""), "Referer": self.base}

        def claim():
            answer = self.session.post(f"{api}/claim/", json={"kind": "SIS"}, headers=headers, timeout=60)
            return answer, (answer.json() if answer.status_code == 200 else None)

        answer, assignment = claim()
        while assignment is not None:
            time.sleep(random.expovariate(1 / THINK_S) if THINK_S > 0 else 0)
            body = {
                "score": round(random.uniform(0, 5), 2),
                "time_on_item_ms": 3000,
                "time_to_first_move_ms": 700,
                "adjustments": 2,
                "idempotency_key": uuid.uuid4().hex,
                "claim_next_kind": "SIS",
            }
            path = f"{api}/slots/{assignment['slot_id']}/submit/"
            stored = self.session.post(path, json=body, headers=headers, timeout=60)
            if stored.status_code != 201:
                self.errors.append(f"submit: HTTP {stored.status_code}")
                return
            self.items += 1
            assignment = stored.json()["next"]
            if assignment is None:
                answer, assignment = claim()
        if answer.status_code != 403 or answer.json().get("code") != "quota_reached":
            self.errors.append(f"claim: HTTP {answer.status_code} before the quota")

    def finish(self) -> None:
        done = self.session.get(f"{self.base}/join/{self.token}/done/", timeout=60)
        if CODE in done.text:
            self.code = CODE


def run_participant(participant: Participant, delay: float, second_tab: bool) -> None:
    time.sleep(delay)
    began = time.monotonic()
    if second_tab:
        twin = threading.Thread(target=participant.join)
        twin.start()
        participant.join()
        twin.join()
    else:
        participant.join()
    if not participant.errors:
        participant.rate()
        participant.finish()
    participant.active = (began, time.monotonic())


def peak_concurrent(people: list[Participant]) -> int:
    """The most participants between their join and their completion page at once."""
    events = sorted(
        [(start, 1) for start, _ in (p.active for p in people)] + [(end, -1) for _, end in (p.active for p in people)]
    )
    peak = current = 0
    for _, change in events:
        current += change
        peak = max(peak, current)
    return peak


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def check_database(pids: list[str]) -> dict:
    from django.contrib.auth import get_user_model
    from django.db.models import Count

    from annotation.models import Participant as ParticipantRow
    from annotation.models import Rating

    accounts = get_user_model().objects.filter(username__startswith="prolific-").count()
    rows = ParticipantRow.objects.count()
    per_rater = Rating.objects.values("rater").annotate(n=Count("id")).values_list("n", flat=True)
    return {
        "duplicate_raters": accounts - len(set(pids)),
        "participant_rows": rows,
        "over_quota": sum(1 for n in per_rater if n > QUOTA),
        "ratings": Rating.objects.count(),
    }


def main() -> int:
    url = fresh_database(DATABASE)
    setup_django(url)
    token = prepare()
    log = Path(tempfile.mkdtemp(prefix="bench-join-")) / "web.log"
    # setup_django put the benchmark database and the services mode in os.environ. Every
    # participant arrives from the load generator's one address, within the hour: the
    # limits of new accounts (per address and per link) are raised to let them all in.
    limits = {
        name: str(PARTICIPANTS) for name in ("CROWD_NEW_PARTICIPANTS_PER_ADDRESS", "CROWD_NEW_PARTICIPANTS_PER_LINK")
    }
    server = start_web_server(os.environ | {"DEBUG": "false", **limits}, PORT, log, port_setting="BENCH_JOIN_PORT")
    base = f"http://127.0.0.1:{PORT}"
    pids = [uuid.uuid4().hex[:24] for _ in range(PARTICIPANTS)]
    people = [Participant(base, token, pid) for pid in pids]
    arrivals, clock = [], 0.0
    for _ in people:
        clock += random.expovariate(ARRIVALS_PER_S)
        arrivals.append(clock)
    started = time.perf_counter()
    try:
        with ThreadPoolExecutor(max_workers=PARTICIPANTS) as pool:
            list(pool.map(run_participant, people, arrivals, [random.random() < SECOND_TAB_SHARE for _ in people]))
    finally:
        stop_server(server)
    seconds = time.perf_counter() - started
    joins = [ms for person in people for ms in person.join_ms]
    errors = [error for person in people for error in person.errors]
    figures = {
        "join_p50_ms": round(statistics.median(joins), 1),
        "join_p95_ms": round(percentile(joins, 0.95), 1),
        "participants": PARTICIPANTS,
        **check_database(pids),
        "joins": len(joins),
        "items_rated": sum(person.items for person in people),
        "codes_shown": sum(1 for person in people if person.code),
        "peak_concurrent": peak_concurrent(people),
        "errors": len(errors),
        "first_errors": errors[:3],
        "seconds": round(seconds, 1),
        "quota": QUOTA,
        "arrivals_per_s": ARRIVALS_PER_S,
        "think_s": THINK_S,
    }
    from django.db import connections

    connections.close_all()
    drop_database(DATABASE)
    print_figures(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
