"""Batches from uploaded pair lists shaped like the CxC release files."""

import numpy as np
import pytest

from annotation.catalog.services import dataset_import_karpathy
from annotation.models import Pair, RatingSlot
from sampling.errors import PairListError
from sampling.methods.pairlist import PairListFormatError, PairRow, Repeats, pair_list_open
from sampling.models import SamplingBatch
from sampling.runs.batch import sampling_batch_run
from sampling.services import sampling_batch_create_from_upload
from tests.sampling.conftest import pair_keys


def write(tmp_path, text, name="pairs.csv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- the file format (no database) ---------------------------------------------------------


def read(path, size: int = 5000) -> tuple[str, list[PairRow]]:
    """The kind and every row of a pair list, read as the upload reads it."""
    with pair_list_open(path) as reader:
        return reader.kind, [row for chunk in reader.chunks(size) for row in chunk]


def test_a_cxc_shaped_file_is_read_with_its_kind_and_methods(tmp_path):
    kind, rows = read(
        write(
            tmp_path,
            "caption1,caption2,agg_score,sampling_method\n"
            "COCO_val2014:sentid:1,COCO_val2014:sentid:2,1.24,c2c_isim\n"
            "\n"
            "COCO_val2014:sentid:3,COCO_val2014:sentid:1,,\n",
        )
    )
    assert kind == "STS"
    assert rows == [
        PairRow(2, "COCO_val2014:sentid:1", "COCO_val2014:sentid:2", "c2c_isim"),
        PairRow(4, "COCO_val2014:sentid:3", "COCO_val2014:sentid:1", "uploaded"),
    ]
    assert read(write(tmp_path, "image1,image2,sampling_method\na.jpg,b.jpg,i2i_csim\n"))[0] == "SIS"
    assert read(write(tmp_path, "sampling_method,image,caption\nc2i_original,a.jpg,c:1\n"))[0] == "SITS"


def test_rows_come_a_chunk_at_a_time_with_their_own_lines(tmp_path):
    text = "image1,image2,sampling_method\n" + "".join(f"a{i},b{i},\n" for i in range(5))
    with pair_list_open(write(tmp_path, text)) as reader:
        assert [[row.line for row in chunk] for chunk in reader.chunks(2)] == [[2, 3], [4, 5], [6]]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the file is empty"),
        ("caption1,caption2,sampling_method\n", "no pairs below the header"),
        ("caption1,caption2\nc:1,c:2\n", "missing the sampling_method column"),
        ("a,b,sampling_method\nx,y,c2c_isim\n", "the header must name one pair of id columns"),
        ("caption1,caption2,image1,image2,sampling_method\n", "the header must name one pair of id columns"),
        ("caption1,caption2,score,sampling_method\nc:1,c:2,3,c2c_isim\n", "unexpected column.* score"),
        ("caption1,caption1,caption2,sampling_method\n", "caption1 appear more than once"),
        ("caption1,caption2,sampling_method\nc:1,c:2\n", "line 2 has 2 fields, the header 3"),
        ("caption1,caption2,sampling_method\nc:1,,c2c_isim\n", "line 2 has an empty caption2"),
        ("caption1,caption2,sampling_method\nc:1,c:1,c2c_isim\n", "line 2 pairs c:1 with itself"),
        (f"caption1,caption2,sampling_method\nc:1,{'c' * 5000},\n", "line 2 is longer than 4,096 bytes"),
        ("caption1,caption2,sampling_method\nc:1,c:\xe9,\n", r"not UTF-8 text \(line 2, column 7: byte 0xe9"),
    ],
)
def test_bad_files_are_named_with_the_line_or_column(tmp_path, text, message):
    path = tmp_path / "pairs.csv"
    path.write_bytes(text.encode("latin-1") if "\xe9" in text else text.encode())
    with pytest.raises(PairListFormatError, match=message):
        read(path)


def ids(*values) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def test_a_repeated_pair_is_refused_when_asked_and_a_missing_file_is_named(tmp_path):
    refusing = Repeats("pairs.csv", repeats="refuse")
    assert refusing.first_rows(ids(1, 1), ids(2, 3), ids(2, 3)).tolist() == [True, True]
    with pytest.raises(PairListFormatError, match="line 9 repeats the pair on line 3"):
        refusing.first_rows(ids(4, 1), ids(5, 3), ids(8, 9))
    with pytest.raises(PairListFormatError, match="line 5 repeats the pair on line 4"):
        Repeats("pairs.csv", repeats="refuse").first_rows(ids(1, 1), ids(2, 2), ids(4, 5))
    with pytest.raises(PairListFormatError, match=f"{tmp_path}/gone.csv: no such file"):
        read(tmp_path / "gone.csv")


def test_repeats_over_many_chunks_are_found_exactly_as_a_set_finds_them():
    """The levels of sorted arrays against a plain set: the same rows kept, the same
    count merged, ids beyond 32 bits included."""
    generator = np.random.default_rng(3)
    merging, seen, line, merged = Repeats("pairs.csv", repeats="merge"), set(), 2, 0
    for _ in range(60):
        n = int(generator.integers(1, 400))
        first = generator.integers(0, 40, n) + (1 << 40)
        second = generator.integers(0, 40, n)
        lines = np.arange(line, line + n)
        line += n
        expected = []
        for pair in zip(first.tolist(), second.tolist(), strict=True):
            expected.append(pair not in seen)
            merged += pair in seen
            seen.add(pair)
        assert merging.first_rows(first, second, lines).tolist() == expected
    assert merging.merged == merged and len(merging._levels) <= 8


def test_a_caption_image_list_may_hold_both_orders_of_different_items(tmp_path):
    _, rows = read(write(tmp_path, "caption,image,sampling_method\nc:1,a.jpg,\nc:2,a.jpg,\n"))
    assert len(rows) == 2


# --- batches from uploads ------------------------------------------------------------------


@pytest.fixture
def items(make_split):
    return make_split(n_images=3, captions_per_image=2)


def upload(built, path, **kwargs):
    return sampling_batch_create_from_upload(
        dataset_name=built.dataset.name, split_name=built.split.name, path=path, **kwargs
    )


@pytest.mark.django_db
def test_an_uploaded_list_queues_its_pairs_and_skips_those_already_queued(tmp_path, items):
    cap, img = items.caption_key, items.image_key
    first = write(
        tmp_path,
        f"caption1,caption2,agg_score,sampling_method\n{cap(0)},{cap(2)},1.2,c2c_isim\n{cap(1)},{cap(0)},4.0,c2c_cocaption\n",
    )
    batch = upload(items, first, ratings_per_pair=2, priority=3)
    assert batch.source == "uploaded"
    assert batch.methods == {"c2c_isim": 1, "c2c_cocaption": 1}
    batch = sampling_batch_run(batch_id=batch.pk)
    assert batch.status == "succeeded", batch.error
    assert pair_keys(batch) == {
        ("STS", "c2c_isim", cap(0), cap(2)),
        ("STS", "c2c_cocaption", cap(0), cap(1)),
    }
    assert RatingSlot.objects.filter(pair__batch=batch).count() == 4

    second = write(
        tmp_path,
        f"caption1,caption2,sampling_method\n{cap(2)},{cap(0)},c2c_isim\n{cap(3)},{cap(5)},\n",
        name="again.csv",
    )
    again = sampling_batch_run(batch_id=upload(items, second).pk)
    assert again.status == "succeeded", again.error
    assert again.pairs_per_method == {"c2c_isim": 0, "uploaded": 1}
    assert again.stats["already_queued"] == 1
    assert pair_keys(again) == {("STS", "uploaded", cap(3), cap(5))}

    sits = write(tmp_path, f"caption,image,sampling_method\n{cap(4)},{img(0)},c2i_intrasim\n", name="sits.csv")
    mixed = sampling_batch_run(batch_id=upload(items, sits).pk)
    assert pair_keys(mixed) == {("SITS", "c2i_intrasim", cap(4), img(0))}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("caption1,caption2,sampling_method\n{c0},COCO_val2014:sentid:999,c2c_isim\n", "1 id.* line 2: .*sentid:999"),
        ("image1,image2,sampling_method\n{i0},{i1},c2c_isim\n", "line 2: c2c_isim makes STS pairs, but this is a SIS"),
        ("image1,image2,sampling_method\n{i0},{i1},i2x\n", "line 2: unknown sampling_method 'i2x'"),
        ("caption,image\n{c0},{i1}\n", "missing the sampling_method column"),
    ],
)
def test_bad_uploads_are_refused_and_no_batch_is_created(tmp_path, items, rows, message):
    text = rows.format(c0=items.caption_key(0), c1=items.caption_key(1), i0=items.image_key(0), i1=items.image_key(1))
    with pytest.raises(PairListError, match=message):
        upload(items, write(tmp_path, text))
    assert SamplingBatch.objects.count() == 0


@pytest.mark.django_db
def test_ids_of_another_split_are_unknown_to_this_one(tmp_path, items, make_split):
    other = make_split(n_images=2, captions_per_image=1, dataset=items.dataset, split_name="test", first_id=50)
    text = f"image1,image2,sampling_method\n{items.image_key(0)},{other.image_key(0)},i2i_csim\n"
    with pytest.raises(PairListError, match=f"1 id.* not items of split .*/val: line 2: {other.image_key(0)}"):
        upload(items, write(tmp_path, text))


@pytest.mark.django_db
def test_the_public_cxc_rows_of_real_coco_photos_can_be_rated_again(coco_mini):
    dataset_import_karpathy(
        path=coco_mini / "dataset.json", name="coco-mini", images_root=str(coco_mini), key_prefix="COCO_val2014"
    )
    for name, kind, method in (("sts_val.csv", "STS", "c2c_cocaption"), ("sits_val.csv", "SITS", "c2i_original")):
        batch = sampling_batch_create_from_upload(
            dataset_name="coco-mini", split_name="mini", path=coco_mini / "cxc_val" / name
        )
        batch = sampling_batch_run(batch_id=batch.pk)
        assert batch.status == "succeeded", batch.error
        assert batch.pairs_per_method == {method: 75}
        assert set(Pair.objects.filter(batch=batch).values_list("kind", flat=True)) == {kind}
    # Original pairs really are captions with the image they were written for.
    originals = Pair.objects.filter(kind="SITS").select_related("caption_a")
    assert all(pair.caption_a.image_id == pair.image_a_id for pair in originals)
