"""Exporting a rated dataset: CxC compatibility, content, manifest, atomicity, CLI."""

import csv
import json
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from annotation.core.errors import NotFound
from annotation.export import ExportError, dataset_export, export_plan, sha256_file
from annotation.export.plan import rating_rows
from annotation.models import Job, JobStatus, Pair, Rating, Split
from annotation.quality.aggregation import krippendorff_alpha_interval, pad_ragged
from tests.factories import SplitFactory
from tests.support.export_data import rated_coco_mini, rated_factory_dataset

pytestmark = pytest.mark.django_db

# --- a plain reader written for the public CxC files -----------------------------------

CAPTION_ID = re.compile(r"^COCO_val2014:sentid:\d+$")
IMAGE_ID = re.compile(r"^COCO_val2014_\d{12}\.jpg$")
SCORE_TEXT = re.compile(r"^[0-5]\.\d{1,2}$")
CXC_FILES = {
    "sts": (["caption1", "caption2", "agg_score", "sampling_method"], (CAPTION_ID, CAPTION_ID)),
    "sis": (["image1", "image2", "agg_score", "sampling_method"], (IMAGE_ID, IMAGE_ID)),
    "sits": (["caption", "image", "agg_score", "sampling_method"], (CAPTION_ID, IMAGE_ID)),
}
CXC_METHODS = {
    "sts": {"c2c_cocaption", "c2c_isim"},
    "sis": {"i2i_csim"},
    "sits": {"c2i_intrasim", "c2i_original"},
}


def read_cxc(path: Path, task: str) -> list[tuple[str, str, float, str]]:
    """Read one CxC file, checking its header, id formats, score notation and methods."""
    header, (first_id, second_id) = CXC_FILES[task]
    rows = []
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        assert next(reader) == header, f"{path}: header"
        for line, (id1, id2, score, method) in enumerate(reader, start=2):
            assert first_id.match(id1) and second_id.match(id2), f"{path}:{line}: ids {id1} {id2}"
            assert SCORE_TEXT.match(score), f"{path}:{line}: score {score!r}"
            assert method in CXC_METHODS[task], f"{path}:{line}: method {method!r}"
            rows.append((id1, id2, float(score), method))
    return rows


def test_plain_reader_reads_the_public_cxc_files(shared_dir):
    for task in CXC_FILES:
        path = shared_dir / "cxc" / f"{task}_val.csv"
        rows = read_cxc(path, task)
        with path.open(encoding="utf-8") as handle:
            assert len(rows) == sum(1 for _ in handle) - 1
        assert {method for *_, method in rows} == CXC_METHODS[task]
        assert all(0.0 <= score <= 5.0 for _, _, score, _ in rows)


def test_export_reads_back_with_the_public_files_reader(coco_mini, tmp_path):
    rated = rated_coco_mini(coco_mini, n_images=40)
    out = tmp_path / "export"
    summary = dataset_export(dataset_name="coco-mini", out_dir=out, formats="cxc")
    assert summary.splits == ["mini"]
    complete = {pair.id for pair in rated.complete}
    methods_seen = set()
    for task in CXC_FILES:
        rows = read_cxc(out / f"{task}_mini.csv", task)
        kind = task.upper()
        assert len(rows) == Pair.objects.filter(id__in=complete, kind=kind).count()
        with (out / f"{task}_mini_raw.csv").open(newline="", encoding="utf-8") as handle:
            raw = list(csv.DictReader(handle))
        id1, id2 = CXC_FILES[task][0][:2]
        by_pair = defaultdict(list)
        for row in raw:
            by_pair[(row[id1], row[id2])].append(float(row["score"]))
        assert set(by_pair) == {(a, b) for a, b, _, _ in rows}
        for a, b, score, method in rows:
            mean = sum(by_pair[(a, b)]) / len(by_pair[(a, b)])
            assert len(by_pair[(a, b)]) == 5
            assert abs(score - mean) <= 0.005 + 1e-9, (a, b, score, mean)
            assert score == round(score, 2)
            methods_seen.add(method)
    assert methods_seen == {m for methods in CXC_METHODS.values() for m in methods}


def _db_pairs(rated):
    """Expected content straight from the database: {(kind, id1, id2): [scores...]}."""
    out = {}
    for pair in Pair.objects.filter(id__in=[p.id for p in rated.complete]).select_related(
        "caption_a", "caption_b", "image_a", "image_b"
    ):
        if pair.kind == "STS":
            ids = (pair.caption_a.key, pair.caption_b.key)
        elif pair.kind == "SIS":
            ids = (pair.image_a.key, pair.image_b.key)
        else:
            ids = (pair.caption_a.key, pair.image_a.key)
        if pair.swapped:  # exported in the order the pair was queued in
            ids = ids[::-1]
        scores = list(Rating.objects.filter(pair=pair).order_by("id").values_list("score", flat=True))
        out[(pair.kind, *ids)] = scores
    return out


def test_all_formats_carry_the_same_content_in_the_order_pairs_were_queued(tmp_path):
    rated = rated_factory_dataset(n_images=12)
    # The factory queues some pairs higher id first (the last image with the first).
    assert any(pair.swapped for pair in rated.complete)
    split = rated.split.name
    out = tmp_path / "all"
    dataset_export(dataset_name=rated.dataset.name, out_dir=out)
    expected = _db_pairs(rated)
    for task in ("STS", "SIS", "SITS"):
        stem = f"{task.lower()}_{split}"
        id1, id2 = CXC_FILES[task.lower()][0][:2]
        with (out / f"{stem}.csv").open(newline="") as handle:
            csv_rows = list(csv.DictReader(handle))
        jsonl = [json.loads(line) for line in (out / f"{stem}.jsonl").read_text().splitlines()]
        parquet = pq.read_table(out / f"{stem}.parquet").to_pylist()
        raw_parquet = pq.read_table(out / f"{stem}_raw.parquet").to_pylist()
        mine = {key: scores for key, scores in expected.items() if key[0] == task}
        assert len(csv_rows) == len(jsonl) == len(parquet) == len(mine) > 0
        assert len(raw_parquet) == sum(len(s) for s in mine.values())
        for row, record, table_row in zip(csv_rows, jsonl, parquet, strict=True):
            scores = mine[(task, row[id1], row[id2])]
            assert (record[id1], record[id2]) == (table_row[id1], table_row[id2]) == (row[id1], row[id2])
            assert float(row["agg_score"]) == record["agg_score"] == table_row["agg_score"]
            assert record["mean"] == pytest.approx(np.mean(scores)) == table_row["mean"]
            assert record["median"] == pytest.approx(np.median(scores))
            assert record["std"] == pytest.approx(np.std(scores, ddof=1))
            assert record["count"] == table_row["count"] == 5
            assert sorted(r["score"] for r in record["ratings"]) == sorted(scores)
            assert record["sampling_method"] == row["sampling_method"] == table_row["sampling_method"]
            assert record["positive"] == (record["agg_score"] >= {"STS": 3.0, "SIS": 2.5, "SITS": 3.0}[task])


def test_manifest_counts_left_out_pairs_batches_and_checksums(tmp_path):
    rated = rated_factory_dataset(n_images=14)
    out = tmp_path / "m"
    summary = dataset_export(dataset_name=rated.dataset.name, out_dir=out, formats=["cxc", "parquet"])
    manifest = json.loads((out / "manifest.json").read_text())
    split = rated.split.name
    assert manifest["format"] == "cxc-annotate export" and manifest["dataset"] == rated.dataset.name
    assert manifest["totals"] == {"pairs": len(rated.complete), "ratings": 5 * len(rated.complete)}
    for task in ("STS", "SIS", "SITS"):
        complete = [p for p in rated.complete if p.kind == task]
        incomplete = [p for p in rated.incomplete if p.kind == task]
        counted = manifest["counts"][split][task]
        assert counted["pairs"] == len(complete)
        for method in {p.sampling_method for p in complete}:
            assert counted["methods"][method]["pairs"] == sum(1 for p in complete if p.sampling_method == method)
        left = manifest["left_out"][split].get(task, {})
        assert sum(entry["pairs"] for entry in left.values()) == len(incomplete)
        assert sum(entry["ratings"] for entry in left.values()) == 3 * len(incomplete)
    assert len(rated.incomplete) > 0
    (batch,) = manifest["batches"]
    assert batch["ratings_per_pair"] == 5 and set(batch["methods"]) >= {"i2i_csim", "c2c_isim"}
    assert (batch["ratings_max"], batch["adaptive_half_width"]) == (None, None)  # fixed N, as CxC
    assert sum(entry["pairs"] for entry in batch["exported"].values()) == len(rated.complete)
    assert manifest["code_version"]["version"] == "0.1.0"
    assert re.fullmatch(r"[0-9a-f]{40}", manifest["code_version"]["git_commit"])
    on_disk = sorted(path.name for path in out.iterdir())
    listed = sorted(entry["name"] for entry in manifest["files"])
    assert on_disk == sorted([*listed, "manifest.json"])
    assert len(listed) == 3 * 4 + 2  # agreement.json and rater_model.json
    for entry in manifest["files"]:
        assert entry["sha256"] == sha256_file(out / entry["name"])
        assert entry["bytes"] == (out / entry["name"]).stat().st_size
    assert [entry["name"] for entry in summary.files][-1] == "manifest.json"


def test_agreement_file_matches_a_direct_computation(tmp_path):
    rated = rated_factory_dataset(n_images=16, seed=4)
    out = tmp_path / "a"
    dataset_export(dataset_name=rated.dataset.name, out_dir=out, formats="jsonl")
    agreement = json.loads((out / "agreement.json").read_text())
    expected = _db_pairs(rated)
    for task in ("STS", "SIS", "SITS"):
        rows = [scores for key, scores in expected.items() if key[0] == task]
        alpha = krippendorff_alpha_interval(pad_ragged(np.concatenate(rows), np.array([len(r) for r in rows])))
        assert agreement["by_task"][task]["alpha_interval"] == pytest.approx(alpha, abs=1e-12)
        assert agreement["by_task"][task]["units"] == len(rows)
        (by_batch,) = [entry for entry in agreement["by_batch"] if entry["task"] == task]
        assert by_batch["alpha_interval"] == pytest.approx(alpha, abs=1e-12)
        raters = agreement["raters"][task]
        assert sum(r["ratings"] for r in raters) == 5 * len(rows)
        assert all(r["rater_id"].startswith("r") and len(r["rater_id"]) == 17 for r in raters)
        assert all(-1.0 <= r["loo_correlation"] <= 1.0 for r in raters if r["loo_correlation"] is not None)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["agreement"] == agreement["by_task"]


def test_rater_ids_are_pseudonymous_and_stable_per_dataset(tmp_path):
    rated = rated_factory_dataset(n_images=8)
    dataset_export(dataset_name=rated.dataset.name, out_dir=tmp_path / "one", formats="cxc")
    dataset_export(dataset_name=rated.dataset.name, out_dir=tmp_path / "two", formats="cxc")
    name = f"sis_{rated.split.name}_raw.csv"
    first = (tmp_path / "one" / name).read_text()
    assert first == (tmp_path / "two" / name).read_text()
    with (tmp_path / "one" / name).open(newline="") as handle:
        ids = {row["rater_id"] for row in csv.DictReader(handle)}
    assert len(ids) == len(rated.raters)
    for rater in rated.raters:
        assert rater.username not in first
        assert str(rater.id) not in ids
    # The same raters in another dataset get other pseudonyms: exports cannot be linked.
    other = rated_factory_dataset(n_images=8, raters=rated.raters)
    dataset_export(dataset_name=other.dataset.name, out_dir=tmp_path / "three", formats="cxc")
    with (tmp_path / "three" / f"sis_{other.split.name}_raw.csv").open(newline="") as handle:
        other_ids = {row["rater_id"] for row in csv.DictReader(handle)}
    assert len(other_ids) == len(rated.raters) and not other_ids & ids


def test_small_blocks_write_the_same_files_as_one_block(tmp_path):
    rated = rated_factory_dataset(n_images=10)
    dataset_export(dataset_name=rated.dataset.name, out_dir=tmp_path / "big", formats="cxc,jsonl")
    # 7 ratings per block: every block boundary falls inside a pair and must be moved.
    dataset_export(dataset_name=rated.dataset.name, out_dir=tmp_path / "small", formats="cxc,jsonl", block_ratings=7)
    skip = {"manifest.json", "agreement.json"}
    names = sorted(p.name for p in (tmp_path / "big").iterdir() if p.name not in skip)
    assert names == sorted(p.name for p in (tmp_path / "small").iterdir() if p.name not in skip)
    assert len(names) == 10  # rater_model.json too: the same fit whatever the blocks
    for name in names:
        assert (tmp_path / "big" / name).read_bytes() == (tmp_path / "small" / name).read_bytes(), name
    # Agreement sums are merged in another order, so only the last digits may differ.
    big = json.loads((tmp_path / "big" / "agreement.json").read_text())
    small = json.loads((tmp_path / "small" / "agreement.json").read_text())
    assert _close(small, big)


def _close(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return a == pytest.approx(b, rel=1e-9, abs=1e-12)
    return a == b


def test_splits_are_exported_separately_and_on_request(tmp_path):
    rated = rated_factory_dataset(n_images=6)
    test_split = Split.objects.create(dataset=rated.dataset, name="test")
    rated_factory_dataset(n_images=6, split=test_split, seed=1)
    dataset_export(dataset_name=rated.dataset.name, out_dir=tmp_path / "both", formats="cxc")
    names = {p.name for p in (tmp_path / "both").iterdir()}
    assert {f"sts_{rated.split.name}.csv", "sts_test.csv", "sits_test_raw.csv"} <= names
    dataset_export(dataset_name=rated.dataset.name, out_dir=tmp_path / "one", splits=["test"], formats="cxc")
    assert not any(rated.split.name in p.name for p in (tmp_path / "one").iterdir())


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_failed_export_leaves_no_files(tmp_path):
    rated = rated_factory_dataset(n_images=10)
    parent = tmp_path / "exports"
    parent.mkdir()

    calls, seen = [], []

    def fail_midway(done, total, message):
        calls.append(done)
        if len(calls) == 4:
            seen.extend(sorted(str(p.relative_to(parent)) for p in parent.rglob("*")))
            raise KeyboardInterrupt("stopped by the operator")

    with pytest.raises(KeyboardInterrupt):
        dataset_export(dataset_name=rated.dataset.name, out_dir=parent / "x", progress=fail_midway, block_ratings=10)
    # Half-written files existed, in the hidden staging folder only, and are gone.
    assert any(name.endswith(".partial/sts_val.csv") for name in seen), seen
    assert all(name.startswith(".x.") for name in seen)
    assert _leftovers(parent) == []


def test_inconsistent_counters_fail_loudly_without_files(tmp_path):
    rated = rated_factory_dataset(n_images=8)
    # A pair whose counter claims five ratings but which holds four.
    broken = next(p for p in rated.complete if p.kind == "SITS")
    Rating.objects.filter(pair=broken).order_by("id").first().delete()
    with pytest.raises(ExportError, match=f"pair #{broken.id} is marked complete with 5 ratings but has 4"):
        dataset_export(dataset_name=rated.dataset.name, out_dir=tmp_path / "x")
    assert _leftovers(tmp_path) == []
    # A pair marked complete without any rating at all.
    Rating.objects.filter(pair=broken).delete()
    with pytest.raises(ExportError, match="are marked complete but only"):
        dataset_export(dataset_name=rated.dataset.name, out_dir=tmp_path / "x")
    assert _leftovers(tmp_path) == []


def test_destination_rules(tmp_path):
    rated = rated_factory_dataset(n_images=6)
    name = rated.dataset.name
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(ExportError, match="is not empty"):
        dataset_export(dataset_name=name, out_dir=busy)
    with pytest.raises(ExportError, match="holds no earlier export"):
        dataset_export(dataset_name=name, out_dir=busy, overwrite=True)
    assert _leftovers(busy) == ["notes.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    dataset_export(dataset_name=name, out_dir=empty, formats="cxc")
    first = json.loads((empty / "manifest.json").read_text())["created_at"]
    with pytest.raises(ExportError, match="is not empty"):
        dataset_export(dataset_name=name, out_dir=empty, formats="jsonl")
    dataset_export(dataset_name=name, out_dir=empty, formats="jsonl", overwrite=True)
    manifest = json.loads((empty / "manifest.json").read_text())
    assert manifest["created_at"] != first and manifest["formats"] == ["jsonl"]
    assert not any(p.suffix == ".csv" for p in empty.iterdir())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy", "empty"]


def test_bad_requests_name_the_problem():
    rated = rated_factory_dataset(n_images=4)
    name = rated.dataset.name
    with pytest.raises(NotFound, match="no dataset named 'nope'"):
        export_plan(dataset_name="nope")
    with pytest.raises(ExportError, match=f"dataset '{name}' has no split 'train'; its splits: val"):
        export_plan(dataset_name=name, splits=["train"])
    with pytest.raises(ExportError, match="unknown export format 'csv'"):
        export_plan(dataset_name=name, formats="csv")
    empty = SplitFactory(name="val")
    with pytest.raises(ExportError, match="has no pairs to export"):
        export_plan(dataset_name=empty.dataset.name)


def test_a_task_without_complete_pairs_writes_no_files_and_the_manifest_says_so(tmp_path):
    rated = rated_factory_dataset(n_images=4)
    sis = Pair.objects.filter(dataset=rated.dataset, kind="SIS")
    Rating.objects.filter(pair__in=sis).delete()
    sis.update(ratings_done=0)
    dataset_export(dataset_name=rated.dataset.name, out_dir=tmp_path / "e", formats="cxc,jsonl")
    written = sorted(p.name for p in (tmp_path / "e").iterdir())
    assert not [name for name in written if name.startswith("sis_")]
    assert "sts_val.csv" in written and "sits_val.jsonl" in written
    manifest = json.loads((tmp_path / "e" / "manifest.json").read_text())
    assert manifest["not_written"] == [{"split": "val", "task": "SIS", "reason": "no complete pairs"}]
    assert sum(entry["pairs"] for entry in manifest["left_out"]["val"]["SIS"].values()) == sis.count()


@pytest.mark.postgres
def test_ratings_stream_through_a_server_side_cursor():
    rated = rated_factory_dataset(n_images=6)
    rows = rating_rows(rated.dataset, rated.split, "SIS")
    first = next(rows)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_cursors WHERE name LIKE '_django_curs_%%'")
        (open_cursors,) = cursor.fetchone()
    assert open_cursors == 1
    assert first[0] == min(p.id for p in rated.complete if p.kind == "SIS")
    assert len([first, *rows]) == 5 * sum(1 for p in rated.complete if p.kind == "SIS")


def test_cli_exports_and_reports(tmp_path, capsys, monkeypatch):
    rated = rated_factory_dataset(n_images=6)
    out = tmp_path / "cli"
    monkeypatch.chdir(tmp_path)
    call_command(
        "export_dataset", "--dataset", rated.dataset.name, "--out", "cli", "--split", "val", "--format", "cxc,jsonl"
    )
    printed = capsys.readouterr().out
    assert f"exported {len(rated.complete)} pairs with {5 * len(rated.complete)} ratings" in printed
    assert "(val; cxc, jsonl)" in printed and "12 files" in printed
    job = Job.objects.get(kind=Job.Kind.EXPORT_DATASET)
    assert job.status == JobStatus.SUCCEEDED and job.progress_done == len(rated.complete)
    # Stored absolute: whoever looks at the job may run from another folder.
    assert job.params["out"] == str(out.resolve())
    assert job.progress_total == len(rated.complete)
    with pytest.raises(CommandError, match="is not empty"):
        call_command("export_dataset", "--dataset", rated.dataset.name, "--out", str(out))
    with pytest.raises(CommandError, match="unknown export format 'xls'"):
        call_command("export_dataset", "--dataset", rated.dataset.name, "--out", str(tmp_path / "n"), "--format", "xls")
    assert Job.objects.filter(status=JobStatus.FAILED).count() == 2
    assert not (tmp_path / "n").exists()
