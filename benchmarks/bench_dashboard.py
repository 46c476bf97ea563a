"""The campaign dashboard at CxC scale on PostgreSQL.

Generates 267,095 complete pairs with 1,335,475 ratings by 100 raters, created over the
last 30 days, with lognormal times per item around CxC's (37 s STS, 17 s SIS and SITS),
loaded with COPY into a fresh database by bench_export's generator (in a child process:
neither its time nor its memory is counted). Then:

- the snapshot refresh (``campaign_snapshot_refresh``) in a child process of its own:
  wall time of the call, measured inside the child, and the child's peak resident
  memory (``ru_maxrss`` from wait4, the whole process: interpreter, Django and the
  refresh); then once more in another child, as the beat's refreshes run (data cached);
- server time of the campaign page and of the rater table (URL names
  ``campaign-dashboard`` and ``campaign-raters``), 200 requests each after 5 unmeasured
  ones, through Django's test Client in this process after force_login of a staff user:
  the full request handling (middleware, view, snapshot read, template) without network.
  When the pages are not in this checkout the four figures are null and a note says so.

Prints the figures as one JSON object on the last line: {"refresh_s",
"refresh_peak_rss_mib", "page_p50_ms", "page_p95_ms", "raters_p50_ms", "raters_p95_ms", ...}

Environment (under BENCH_SMOKE=1 in brackets): BENCH_IMAGES 5,000 [100] images per split
(bench_export's generator scales every count with it), BENCH_RATERS 100, BENCH_REQUESTS
200 [5], BENCH_WARM_UP 5 [1], BENCH_DATABASE cxc_bench_dashboard.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
from _common import (
    REPO_DIR,
    drop_database,
    env_database,
    env_number,
    fresh_database,
    print_figures,
    setup_django,
    sized,
)

DATABASE = env_database("cxc_bench_dashboard")
RATERS = env_number("BENCH_RATERS", 100, minimum=10)  # bench_export's generator needs 10
SPREAD_DAYS = 30.0
REQUESTS = sized("BENCH_REQUESTS", 200, 5)
WARM_UP = sized("BENCH_WARM_UP", 5, 1, minimum=0)


def generate(database_url: str) -> dict:
    from bench_export import load_in_child

    return load_in_child(database_url, raters=RATERS, spread_days=SPREAD_DAYS)


def refresh_child() -> None:
    """In the child: one refresh of the benchmark dataset; its seconds on the last line."""
    setup_django(os.environ["DATABASE_URL"])
    from annotation.dashboard.services import campaign_snapshot_refresh
    from annotation.models import Dataset

    dataset = Dataset.objects.get(name="bench")
    start = time.perf_counter()
    snapshot = campaign_snapshot_refresh(dataset)
    seconds = time.perf_counter() - start
    complete = sum(row["pairs_complete"] for row in snapshot.data["progress"]["by_kind"])
    print(json.dumps({"seconds": seconds, "pairs_complete": complete, "raters": len(snapshot.data["raters"])}))


def run_refresh(database_url: str) -> dict:
    """Run the refresh in a child process; its time and peak memory."""
    env = {**os.environ, "DATABASE_URL": database_url}
    child = subprocess.Popen(
        [sys.executable, __file__, "--refresh-child"], cwd=REPO_DIR, env=env, stdout=subprocess.PIPE, text=True
    )
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"refresh failed: {output}")
    result = json.loads(output.strip().splitlines()[-1])
    return {**result, "peak_rss_mib": round(usage.ru_maxrss / 1024, 1)}


def time_pages() -> dict:
    """p50/p95 server time of the two pages, or nulls when the pages are not here."""
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import NoReverseMatch, reverse

    try:
        urls = {
            "page": reverse("campaign-dashboard", kwargs={"dataset": "bench"}),
            "raters": reverse("campaign-raters", kwargs={"dataset": "bench"}),
        }
    except NoReverseMatch:
        print("note: the campaign pages (campaign-dashboard, campaign-raters) are not in this checkout; not timed")
        return {f"{name}_{q}_ms": None for name in ("page", "raters") for q in ("p50", "p95")}
    admin = get_user_model().objects.create_user("bench-admin", password="!", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(admin)
    out = {}
    for name, url in urls.items():
        timings = []
        for number in range(WARM_UP + REQUESTS):
            start = time.perf_counter()
            response = client.get(url)
            elapsed = (time.perf_counter() - start) * 1000
            if response.status_code != 200:
                raise SystemExit(f"{url} answered {response.status_code}")
            if number >= WARM_UP:
                timings.append(elapsed)
        out[f"{name}_p50_ms"] = round(float(np.percentile(timings, 50)), 1)
        out[f"{name}_p95_ms"] = round(float(np.percentile(timings, 95)), 1)
        print(f"{url}: {len(response.content)} bytes, p50 {out[f'{name}_p50_ms']} ms, p95 {out[f'{name}_p95_ms']} ms")
    return out


def main() -> None:
    database_url = fresh_database(DATABASE)
    totals = generate(database_url)
    print(f"loaded {totals['pairs']} pairs and {totals['ratings']} ratings with COPY in {totals['load_seconds']} s")
    refresh = run_refresh(database_url)
    print(f"refresh: {refresh}")
    # The beat refreshes every few minutes, so the usual refresh finds the data cached: a
    # second run shows that case (the first, right after loading, is the figure reported).
    again = run_refresh(database_url)
    print(f"second refresh: {again}")
    if refresh["pairs_complete"] != totals["pairs"] or refresh["raters"] != RATERS:
        raise SystemExit(f"the snapshot counts {refresh} but {totals} were loaded")
    setup_django(database_url)
    pages = time_pages()
    drop_database(DATABASE)  # a million rows on disk; the next run generates them anew
    print_figures(
        {
            "refresh_s": round(refresh["seconds"], 2),
            "refresh_peak_rss_mib": refresh["peak_rss_mib"],
            "second_refresh_s": round(again["seconds"], 2),
            "second_refresh_peak_rss_mib": again["peak_rss_mib"],
            **pages,
            "pairs": totals["pairs"],
            "ratings": totals["ratings"],
            "raters": RATERS,
            "load_seconds": totals["load_seconds"],
        }
    )


if __name__ == "__main__":
    if sys.argv[1:] == ["--refresh-child"]:
        refresh_child()
    else:
        main()
