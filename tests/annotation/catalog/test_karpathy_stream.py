"""A Karpathy JSON file is read as a stream, one ``images`` entry at a time: a
60 MB file whose third entry is bad is refused at once with the Python allocations flat
(the whole document was parsed first before), and a valid 60 MB file is read with its
peak under 250 MB (the parsed document alone took about 420 MB). Pure: no database."""

import io
import json
import time
import tracemalloc

import pytest

from annotation.catalog.json_stream import JsonArray, JsonStreamError
from annotation.catalog.karpathy import KarpathyError, parse_karpathy

TARGET_BYTES = 60 * 2**20
RAW = "a man riding a wave on top of a surfboard in the ocean near the beach"


def entry(number: int) -> dict:
    sentences = [{"tokens": RAW.split(), "raw": RAW, "imgid": number, "sentid": number * 5 + j} for j in range(5)]
    return {
        "filepath": "val2014",
        "sentids": [s["sentid"] for s in sentences],
        "filename": f"COCO_val2014_{number:012d}.jpg",
        "imgid": number,
        "split": "val",
        "sentences": sentences,
        "cocoid": number,
    }


def write_karpathy(path, *, bad_third: bool = False) -> int:
    """A Karpathy file of about TARGET_BYTES (the third entry without sentences when
    asked); returns its number of images."""
    with path.open("w") as out:
        out.write('{"dataset": "coco", "images": [')
        number = 0
        while out.tell() < TARGET_BYTES:
            value = entry(number)
            if bad_third and number == 2:
                del value["sentences"]
            out.write(("" if number == 0 else ", ") + json.dumps(value))
            number += 1
        out.write("]}")
    return number


def measured(call):
    tracemalloc.start()
    started = time.perf_counter()
    try:
        answer = call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return answer, peak, time.perf_counter() - started


def test_a_60_mb_file_with_a_bad_third_entry_is_refused_at_once(tmp_path):
    path = tmp_path / "dataset_coco.json"
    write_karpathy(path, bad_third=True)

    def parse():
        with pytest.raises(KarpathyError) as refused:
            parse_karpathy(path)
        return str(refused.value)

    message, peak, seconds = measured(parse)
    assert message == f"{path}: images[2] (COCO_val2014_000000000002.jpg): missing field 'sentences'"
    assert peak < 8 * 2**20, f"peak {peak / 2**20:.1f} MiB"
    assert seconds < 5, f"{seconds:.1f} s"


@pytest.mark.slow
def test_a_valid_60_mb_file_is_read_with_its_peak_under_250_mb(tmp_path):
    path = tmp_path / "dataset_coco.json"
    images = write_karpathy(path)
    records, peak, _ = measured(lambda: parse_karpathy(path))
    assert len(records) == images and sum(len(r.captions) for r in records) == 5 * images
    assert records[-1].captions[-1].key == f"COCO_val2014:sentid:{images * 5 - 1}"
    assert peak < 250 * 2**20, f"peak {peak / 2**20:.0f} MiB"


@pytest.mark.parametrize("window", [1, 2, 7, 64])
def test_entries_split_across_windows_come_out_whole(monkeypatch, window):
    monkeypatch.setattr("annotation.catalog.json_stream.WINDOW_CHARS", window)
    text = '{"a": 12345, "images": [{"x": "\\u00e9\\n"}, 3.25, [1, 2], "s"], "z": {"k": [true, null]}}'
    array = JsonArray(io.StringIO(text), member="images", max_entry_chars=100)
    assert list(array) == [{"x": "é\n"}, 3.25, [1, 2], "s"] and array.found


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"images": [1, 2 3]}', "line 1 column 18: expected ',' or ']', found '3'"),
        ('{"images": [1]}\n{', "line 2 column 1: text after the end of the object"),
        ('{\n  "images": [\n    {"a": tru}\n  ]\n}', "line 3 column 11: Expecting value"),
    ],
)
def test_bad_json_is_named_by_line_and_column(text, message):
    with pytest.raises(JsonStreamError, match=message):
        list(JsonArray(io.StringIO(text), member="images", max_entry_chars=100))
