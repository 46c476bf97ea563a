"""The export writers on hand-made blocks: pure, no database."""

import csv
import io
import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from annotation.export import (
    ExportBlock,
    ExportFormatError,
    file_names,
    file_stem,
    open_writers,
    parquet,
    parse_formats,
    sha256_file,
)
from annotation.quality.aggregation import aggregate_pairs, pad_ragged


def make_block(task="STS", item1=None):
    """Three pairs: five ratings, one rating, three ratings."""
    counts = np.array([5, 1, 3])
    scores = np.array([2.0, 2.5, 2.4, 2.3, 2.8, 5.0, 4.99, 4.99, 4.99])
    stats = aggregate_pairs(pad_ragged(scores, counts), task=task)
    return ExportBlock(
        item1=item1 or ["COCO_val2014:sentid:190268", "COCO_val2014:sentid:11", "COCO_val2014:sentid:12"],
        item2=["COCO_val2014:sentid:315773", "COCO_val2014:sentid:21", "COCO_val2014:sentid:22"],
        sampling_method=["c2c_isim", "c2c_cocaption", "c2c_cocaption"],
        batch_id=np.array([4, 4, 5]),
        stats=stats,
        pair_index=np.repeat(np.arange(3), counts),
        rater_id=[f"r{i:016x}" for i in range(9)],
        score=scores,
        time_on_item_ms=np.arange(9) * 1000 + 500,
    )


def write(tmp_path, blocks, task="STS", formats=("cxc", "jsonl", "parquet")):
    writers = open_writers(tmp_path, task, "val", list(formats))
    for block in blocks:
        for writer in writers:
            writer.write(block)
    for writer in writers:
        writer.close()
    return {writer.name: writer.rows for writer in writers}


def test_cxc_csv_has_the_release_header_notation_and_line_ends(tmp_path):
    rows = write(tmp_path, [make_block()], formats=["cxc"])
    assert rows == {"sts_val.csv": 3, "sts_val_raw.csv": 9}
    text = (tmp_path / "sts_val.csv").read_bytes().decode()
    assert "\r" not in text
    assert text.splitlines() == [
        "caption1,caption2,agg_score,sampling_method",
        "COCO_val2014:sentid:190268,COCO_val2014:sentid:315773,2.4,c2c_isim",
        "COCO_val2014:sentid:11,COCO_val2014:sentid:21,5.0,c2c_cocaption",
        "COCO_val2014:sentid:12,COCO_val2014:sentid:22,4.99,c2c_cocaption",
    ]
    with (tmp_path / "sts_val_raw.csv").open(newline="") as handle:
        raw = list(csv.reader(handle))
    assert raw[0] == ["caption1", "caption2", "score", "rater_id", "time_on_item_ms", "sampling_method"]
    first_pair = ["COCO_val2014:sentid:190268", "COCO_val2014:sentid:315773"]
    assert raw[1] == [*first_pair, "2.0", f"r{0:016x}", "500", "c2c_isim"]
    expected_first = [first_pair[0]] * 5 + ["COCO_val2014:sentid:11"] + ["COCO_val2014:sentid:12"] * 3
    assert [row[0] for row in raw[1:]] == expected_first


def test_raw_csv_is_byte_identical_to_the_csv_module(tmp_path):
    block = make_block()
    write(tmp_path, [block], formats=["cxc"])
    expected = io.StringIO()
    writer = csv.writer(expected, lineterminator="\n")
    writer.writerow(["caption1", "caption2", "score", "rater_id", "time_on_item_ms", "sampling_method"])
    for rating, pair in enumerate(block.pair_index.tolist()):
        writer.writerow(
            [
                block.item1[pair],
                block.item2[pair],
                repr(float(block.score[rating])),
                block.rater_id[rating],
                int(block.time_on_item_ms[rating]),
                block.sampling_method[pair],
            ]
        )
    assert (tmp_path / "sts_val_raw.csv").read_text() == expected.getvalue()


def test_ids_that_need_quoting_or_escaping_round_trip(tmp_path):
    odd = ["with,comma", 'with "quotes"', "line\nbreak and caf\u00e9"]
    write(tmp_path, [make_block(item1=odd)], formats=["cxc", "jsonl"])
    with (tmp_path / "sts_val.csv").open(newline="") as handle:
        assert [row[0] for row in list(csv.reader(handle))[1:]] == odd
    with (tmp_path / "sts_val_raw.csv").open(newline="") as handle:
        assert [row[0] for row in list(csv.reader(handle))[1:]] == [odd[0]] * 5 + [odd[1]] + [odd[2]] * 3
    with (tmp_path / "sts_val.jsonl").open(encoding="utf-8") as handle:
        assert [json.loads(line)["caption1"] for line in handle] == odd


@pytest.mark.parametrize(
    ("task", "header"),
    [("SIS", "image1,image2,agg_score,sampling_method"), ("SITS", "caption,image,agg_score,sampling_method")],
)
def test_headers_per_task(tmp_path, task, header):
    write(tmp_path, [], task=task, formats=["cxc"])
    assert (tmp_path / f"{task.lower()}_val.csv").read_text() == header + "\n"


def test_jsonl_has_spread_counts_and_ratings_with_null_for_missing_statistics(tmp_path):
    write(tmp_path, [make_block()], formats=["jsonl"])
    records = [json.loads(line) for line in (tmp_path / "sts_val.jsonl").read_text().splitlines()]
    assert len(records) == 3
    first, single = records[0], records[1]
    assert first["caption1"] == "COCO_val2014:sentid:190268" and first["agg_score"] == 2.4
    assert first["count"] == 5 and first["median"] == 2.4 and first["batch_id"] == 4
    assert first["std"] == pytest.approx(np.std([2.0, 2.5, 2.4, 2.3, 2.8], ddof=1))
    assert first["ci95_low"] < first["mean"] < first["ci95_high"]
    assert [r["score"] for r in first["ratings"]] == [2.0, 2.5, 2.4, 2.3, 2.8]
    assert first["ratings"][0] == {"rater_id": f"r{0:016x}", "score": 2.0, "time_on_item_ms": 500}
    assert single["count"] == 1 and single["std"] is None and single["ci95_low"] is None
    assert single["positive"] is True and first["positive"] is False


def test_parquet_pairs_and_raw_read_back(tmp_path):
    block = make_block()
    write(tmp_path, [block, make_block()], formats=["parquet"])
    pairs = pq.read_table(tmp_path / "sts_val.parquet").to_pylist()
    raw = pq.read_table(tmp_path / "sts_val_raw.parquet")
    assert len(pairs) == 6 and raw.num_rows == 18
    # Small blocks are gathered into one row group.
    assert pq.ParquetFile(tmp_path / "sts_val.parquet").num_row_groups == 1
    assert pairs[1]["std"] is None and pairs[1]["count"] == 1 and pairs[1]["agg_score"] == 5.0
    assert pairs[0]["sampling_method"] == "c2c_isim" and pairs[0]["caption2"] == "COCO_val2014:sentid:315773"
    assert raw.column("caption1").to_pylist()[:6] == ["COCO_val2014:sentid:190268"] * 5 + ["COCO_val2014:sentid:11"]
    assert raw.column("score").to_pylist()[:9] == block.score.tolist()
    assert raw.column("time_on_item_ms").to_pylist()[:9] == block.time_on_item_ms.tolist()


def test_parquet_row_groups_gather_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(parquet, "ROW_GROUP_ROWS", 4)
    write(tmp_path, [make_block(), make_block(), make_block()], formats=["parquet"])
    groups = pq.ParquetFile(tmp_path / "sts_val.parquet")
    assert [groups.metadata.row_group(i).num_rows for i in range(groups.num_row_groups)] == [6, 3]
    raw = pq.ParquetFile(tmp_path / "sts_val_raw.parquet")
    assert [raw.metadata.row_group(i).num_rows for i in range(raw.num_row_groups)] == [9, 9, 9]


def test_empty_parquet_keeps_its_schema(tmp_path):
    write(tmp_path, [], task="SITS", formats=["parquet"])
    table = pq.read_table(tmp_path / "sits_val.parquet")
    assert table.num_rows == 0
    assert table.column_names[:4] == ["caption", "image", "agg_score", "sampling_method"]
    assert pq.read_table(tmp_path / "sits_val_raw.parquet").column_names == [
        "caption",
        "image",
        "score",
        "rater_id",
        "time_on_item_ms",
        "sampling_method",
    ]


def test_file_names_follow_formats():
    assert file_names("SIS", "test", ["cxc", "parquet"]) == [
        "sis_test.csv",
        "sis_test_raw.csv",
        "sis_test.parquet",
        "sis_test_raw.parquet",
    ]


def test_parse_formats():
    assert parse_formats("parquet, CXC,cxc") == ["cxc", "parquet"]
    with pytest.raises(ExportFormatError, match="unknown export format 'xml'"):
        parse_formats("cxc,xml")
    with pytest.raises(ExportFormatError, match="at least one format"):
        parse_formats(" , ")


@pytest.mark.parametrize("split", ["../etc", "a/b", "", ".hidden"])
def test_split_names_unsafe_for_files_are_refused(split):
    with pytest.raises(ExportFormatError, match="cannot be part of a file name"):
        file_stem("STS", split)


def test_sha256_file(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes(b"abc")
    assert sha256_file(path, block_size=2) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
