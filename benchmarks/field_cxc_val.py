"""Field check on the real CxC validation files, end to end through the API.

On a fresh PostgreSQL database ``cxc_bench_field`` (dropped at the end):

1. build a Karpathy-shaped JSON from the ids that ``sts_val.csv``, ``sis_val.csv`` and
   ``sits_val.csv`` name (placeholder caption text, each caption under the image of its
   c2i_original row) and import it as dataset ``cxc-val``;
2. serve the app with the web server on a free port; an admin and FIELD_RATERS raters
   (default 16, qualified for STS, SIS and SITS) get API tokens;
3. upload the three files unchanged as pair lists (ratings_per_pair FIELD_RATINGS_PER_PAIR,
   default 1) and wait for each batch;
4. the raters rate every pair concurrently (claim, then submit-and-claim-next) until
   the queue is empty; the database is checked: every pair has exactly ratings_per_pair
   ratings from distinct raters;
5. export (cxc, jsonl, parquet) through the API and download every file;
6. check: each exported row in the order (and with the method) of the first uploaded row
   naming its pair, every pair once; CxC's own merge of the SITS file gives the same
   entries (scores aside) on the uploaded and the exported file; the CSV headers are
   byte-identical to the release's.

Progress lines first; the last line is one JSON object with every figure. It measures
and reports, it asserts no timing. Without the shared data (SHARED_DIR, default the
repository's sibling folder ``shared``) it prints {"skipped": reason} and exits 0 (under CI
it fails).
FIELD_LIMIT=N uploads only the first N rows of each file (a temporary copy) for a quick
run (0 or unset: the whole files; 100 under BENCH_SMOKE=1, with FIELD_RATERS 4; the
dataset is still built from the whole files). BENCH_DATABASE (default cxc_bench_field)
names the database. Tasks run in-process in the web workers (CELERY_TASK_ALWAYS_EAGER, as
the other benchmarks), so no Celery worker shares Redis queues with anyone else's.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import _field_cxc_data as data
from _common import (
    drop_database,
    env_database,
    env_number,
    fresh_database,
    print_figures,
    setup_django,
    shared_files,
    sized,
    start_web_server,
    stop_server,
)
from _field_cxc_http import Api, log, rate_everything, token_for
from _field_cxc_http import free_port as pick_port

DATABASE = env_database("cxc_bench_field")
DATASET = "cxc-val"
SPLIT = "val"
KINDS = ["STS", "SIS", "SITS"]
PASSWORD = "field-check-password"


def settings_env(var_dir: Path) -> dict[str, str]:
    return {
        "VAR_DIR": str(var_dir),
        "DATA_DIR": str(var_dir / "data"),
        "EXPORT_DIR": str(var_dir / "exports"),
        "DEBUG": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
    }


def import_dataset(shared: Path, work: Path) -> dict:
    """Build the Karpathy JSON from the full files and import it in-process."""
    from annotation.catalog.services import dataset_import_karpathy
    from annotation.models import Caption, Image

    build = data.karpathy_from_cxc(shared)
    path = work / "karpathy_cxc_val.json"
    data.write_json(build.document, path)
    summary = dataset_import_karpathy(
        path=path, name=DATASET, image_url_prefix="https://images.example.org/", key_prefix=data.KEY_PREFIX
    )
    image_keys = set(Image.objects.filter(dataset_id=summary.dataset_id).values_list("key", flat=True))
    caption_keys = set(Caption.objects.filter(dataset_id=summary.dataset_id).values_list("key", flat=True))
    result = {
        "images": summary.images,
        "captions": summary.captions,
        "captions_without_original": build.captions_without_original,
        "image_ids_not_imported": len(build.images - image_keys),
        "caption_ids_not_imported": len(build.captions - caption_keys),
    }
    log(f"import: {result}")
    return result


def create_accounts(raters: int) -> None:
    """An admin (staff, admin group) and raters qualified for every task kind."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from annotation.people.accounts import qualifications_set

    users = get_user_model()
    admin = users.objects.create_user("field-admin", password=PASSWORD, is_staff=True)
    admin.groups.add(Group.objects.get_or_create(name="admin")[0])
    rater_group = Group.objects.get_or_create(name="rater")[0]
    for number in range(1, raters + 1):
        rater = users.objects.create_user(f"field-rater{number}", password=PASSWORD)
        rater.groups.add(rater_group)
        qualifications_set(rater=rater, kinds=KINDS)


def upload_files(api: Api, folder: Path, ratings_per_pair: int) -> dict:
    """Upload each file unchanged and wait for its batch."""
    results = {}
    for name in data.FILES:
        started = time.perf_counter()
        batch = api.upload(
            "/api/sampling/batches/upload/",
            {"dataset": DATASET, "split": SPLIT, "ratings_per_pair": str(ratings_per_pair), "start": "true"},
            "file",
            folder / name,
        )
        batch = api.poll(f"/api/sampling/batches/{batch['id']}/")
        if batch["status"] != "succeeded":
            raise SystemExit(f"upload of {name} failed: {batch['error']}")
        results[name] = {
            "rows": sum(1 for _ in data.read_rows(folder / name)),
            "pairs_queued": sum(batch["pairs_per_method"].values()),
            "pairs_per_method": batch["pairs_per_method"],
            "rows_merged": batch["stats"].get("rows_merged"),
            "already_queued": batch["stats"].get("already_queued"),
            "seconds": round(time.perf_counter() - started, 2),
            "batch_total_s": batch["stats"].get("total_s"),
        }
        log(f"upload {name}: {results[name]}")
    return results


def check_ratings(ratings_per_pair: int) -> dict:
    """From the database: every pair of the dataset has exactly ratings_per_pair ratings,
    from as many raters, and its counter agrees."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT count(*), coalesce(sum(n), 0),
                   count(*) FILTER (WHERE n <> %s), count(*) FILTER (WHERE raters <> n),
                   count(*) FILTER (WHERE done <> n)
            FROM (SELECT p.id, p.ratings_done AS done, count(r.id) AS n, count(DISTINCT r.rater_id) AS raters
                  FROM annotation_pair p JOIN annotation_dataset d ON d.id = p.dataset_id
                  LEFT JOIN annotation_rating r ON r.pair_id = p.id
                  WHERE d.name = %s GROUP BY p.id) per_pair
            """,
            [ratings_per_pair, DATASET],
        )
        pairs, ratings, wrong_count, repeated_rater, counter_off = cursor.fetchone()
    return {
        "pairs": pairs,
        "ratings": int(ratings),
        "pairs_without_exactly_rpp": wrong_count,
        "pairs_with_a_repeated_rater": repeated_rater,
        "pairs_counter_disagrees": counter_off,
    }


def rate(port: int, raters: int, expected: int, ratings_per_pair: int) -> dict:
    tokens = [(f"field-rater{n}", token_for(port, f"field-rater{n}", PASSWORD)) for n in range(1, raters + 1)]
    started = time.perf_counter()
    stats = rate_everything(port, DATASET, tokens, expected)
    seconds = time.perf_counter() - started
    result = {
        "ratings": stats.ratings,
        "seconds": round(seconds, 1),
        "cycles_per_s": round(stats.ratings / seconds, 1),
        "explicit_claims": stats.claims,
        "resumed_claims": stats.resumed,
        "replayed_submits": stats.replayed,
        "errors": dict(stats.errors),
        "raters_gave_up": stats.gave_up,
        "database": check_ratings(ratings_per_pair),
    }
    log(f"rating: {result}")
    return result


def export(api: Api, folder: Path) -> dict:
    started = time.perf_counter()
    job = api.json("POST", "/api/exports/", {"dataset": DATASET, "formats": ["cxc", "jsonl", "parquet"]}, (202,))
    job = api.poll(f"/api/exports/{job['id']}/")
    if job["status"] != "succeeded":
        raise SystemExit(f"export #{job['id']} failed: {job['error']}")
    job_s = time.perf_counter() - started
    sizes = {entry["name"]: api.download(entry["url"], folder / entry["name"]) for entry in job["files"]}
    result = {
        "job_s": round(job_s, 2),
        "download_s": round(time.perf_counter() - started - job_s, 2),
        "pairs": job["pairs"],
        "ratings": job["ratings"],
        "files": {entry["name"]: {"rows": entry["rows"], "bytes": sizes[entry["name"]]} for entry in job["files"]},
    }
    log(f"export: {result}")
    return result


def check_export(shared: Path, uploaded_dir: Path, exported_dir: Path) -> dict:
    """Row order and methods per exported pair file, the headers, CxC's SITS merge."""
    order, headers = {}, {}
    readers = {".csv": data.csv_pairs, ".jsonl": data.jsonl_pairs, ".parquet": data.parquet_pairs}
    for name, (kind, columns) in data.FILES.items():
        uploaded = data.uploaded_pairs(uploaded_dir / name, kind, columns)
        stem = name.removesuffix(".csv")
        for suffix, reader in readers.items():
            path = exported_dir / f"{stem}{suffix}"
            order[path.name] = data.check_rows(uploaded, reader(path, columns)) if path.exists() else "missing"
        exported_csv = exported_dir / name
        headers[name] = exported_csv.exists() and data.header_line(exported_csv) == data.header_line(shared / name)
    merge = data.compare_merges(
        data.cxc_sits_merge(data.read_rows(uploaded_dir / "sits_val.csv")),
        data.cxc_sits_merge(data.read_rows(exported_dir / "sits_val.csv")),
    )
    for name, result in order.items():
        log(f"row order {name}: {result}")
    log(f"headers identical: {headers}")
    log(f"CxC SITS merge, uploaded vs exported: {merge}")
    return {"row_order": order, "headers_identical": headers, "cxc_sits_merge": merge}


def uploaded_folder(shared: Path, work: Path, limit: int | None) -> Path:
    """The folder whose files are uploaded: the release itself, or first-N-row copies."""
    if limit is None:
        return shared
    folder = work / "limited"
    folder.mkdir()
    for name in data.FILES:
        data.copy_head(shared / name, folder / name, limit)
    return folder


def run(shared: Path, work: Path, raters: int, ratings_per_pair: int, limit: int | None) -> dict:
    phases: dict[str, float] = {}
    figures: dict = {"ratings_per_pair": ratings_per_pair, "raters": raters, "limit": limit}

    def timed(phase: str, function, *args):
        started = time.perf_counter()
        value = function(*args)
        phases[phase] = round(time.perf_counter() - started, 2)
        return value

    env = settings_env(work / "var")
    setup_django(fresh_database(DATABASE), **env)
    upload_dir = uploaded_folder(shared, work, limit)
    figures["import"] = timed("import", import_dataset, shared, work)
    timed("accounts", create_accounts, raters)
    port = pick_port()
    server = timed("server_start", start_web_server, os.environ | env, port, work / "web.log")
    try:
        api = Api(port, token_for(port, "field-admin", PASSWORD))
        figures["files"] = timed("upload", upload_files, api, upload_dir, ratings_per_pair)
        expected = ratings_per_pair * sum(f["pairs_queued"] for f in figures["files"].values())
        figures["rating"] = timed("rating", rate, port, raters, expected, ratings_per_pair)
        exported_dir = work / "export"
        exported_dir.mkdir()
        figures["export"] = timed("export", export, api, exported_dir)
    finally:
        stop_server(server)
        server_log = (work / "web.log").read_text(errors="replace")
        figures["server_log_tracebacks"] = server_log.count("Traceback")
        if figures["server_log_tracebacks"]:
            log(f"web server log (last 3000 characters):\n{server_log[-3000:]}")
    figures.update(timed("checks", check_export, shared, upload_dir, exported_dir))
    figures["rows_exported_equal_pairs_queued"] = {
        name: figures["export"]["files"].get(name, {}).get("rows") == counts["pairs_queued"]
        for name, counts in figures["files"].items()
    }
    figures["phases_s"] = phases
    return figures


def close_django_connections() -> None:
    from django.apps import apps

    if apps.ready:
        from django.db import connections

        connections.close_all()


def main() -> int:
    shared, reason = shared_files("cxc", data.FILES)
    if reason:
        log(f"field-cxc-val skipped: {reason}")
        print_figures({"skipped": reason})
        return 0
    raters = sized("FIELD_RATERS", 16, 4)
    ratings_per_pair = env_number("FIELD_RATINGS_PER_PAIR", 1)
    limit = sized("FIELD_LIMIT", 0, 100, minimum=0) or None
    if raters < ratings_per_pair:
        raise SystemExit(f"FIELD_RATERS ({raters}) must be at least FIELD_RATINGS_PER_PAIR ({ratings_per_pair})")
    log(
        f"field-cxc-val: {shared}, {raters} raters, {ratings_per_pair} rating(s) per pair, "
        f"{'first ' + str(limit) + ' rows of each file' if limit else 'whole files'}; "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
    )
    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="field-cxc-"))
    try:
        figures = run(shared, work, raters, ratings_per_pair, limit)
    finally:
        close_django_connections()
        drop_database(DATABASE)
        shutil.rmtree(work, ignore_errors=True)
    figures["total_s"] = round(time.perf_counter() - started, 1)
    print_figures(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
