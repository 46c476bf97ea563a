"""The streamed zip of an export's files: pure, no database. It holds the files as they
are, and its memory does not grow with them."""

import io
import os
import tracemalloc
import zipfile

import pytest

from annotation.export.archive import CHUNK_BYTES, zip_chunks


def test_a_zip_of_files_in_one_folder_made_chunk_by_chunk(tmp_path):
    (tmp_path / "sts_val.csv").write_text("caption1,caption2,agg_score,sampling_method\n" * 5000)
    (tmp_path / "sts_val.parquet").write_bytes(os.urandom(3 * CHUNK_BYTES + 17))
    (tmp_path / "empty.json").write_bytes(b"")
    names = ["sts_val.csv", "sts_val.parquet", "empty.json"]
    chunks = list(zip_chunks([(name, tmp_path / name) for name in names], folder="coco-export-7"))
    assert len(chunks) > 4, "sent as it is made, not in one piece"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(chunks)))
    assert archive.testzip() is None
    assert archive.namelist() == [f"coco-export-7/{name}" for name in names]
    for name in names:
        assert archive.read(f"coco-export-7/{name}") == (tmp_path / name).read_bytes()
    csv_entry = archive.getinfo("coco-export-7/sts_val.csv")
    assert csv_entry.compress_type == zipfile.ZIP_DEFLATED and csv_entry.compress_size < csv_entry.file_size / 10


def test_a_missing_file_stops_the_zip_naming_it(tmp_path):
    (tmp_path / "a.csv").write_text("x\n")
    chunks = zip_chunks([("a.csv", tmp_path / "a.csv"), ("b.csv", tmp_path / "b.csv")], folder="f")
    with pytest.raises(FileNotFoundError, match="b.csv"):
        list(chunks)


@pytest.mark.slow
def test_memory_stays_flat_while_a_large_export_is_zipped(tmp_path):
    # 160 MiB of files (text deflated, random bytes stored as Parquet is) through the
    # zip: the most Python holds at once is a few chunks, not the files.
    text = b"a man riding a wave on top of a surfboard,a person on a surfboard,3.2,c2c_cocaption\n"
    with (tmp_path / "sts_val_raw.csv").open("wb") as handle:
        for _ in range(96 * CHUNK_BYTES // len(text)):
            handle.write(text)
    with (tmp_path / "sts_val.parquet").open("wb") as handle:
        for _ in range(64):
            handle.write(os.urandom(CHUNK_BYTES))
    files = [(path.name, path) for path in sorted(tmp_path.iterdir())]
    total = sum(path.stat().st_size for _, path in files)
    sent = 0
    tracemalloc.start()
    try:
        for chunk in zip_chunks(files, folder="big"):
            sent += len(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total > 159 * CHUNK_BYTES and sent > 64 * CHUNK_BYTES, "the Parquet bytes are stored as they are"
    print(f"zipped {total / CHUNK_BYTES:.0f} MiB into {sent / CHUNK_BYTES:.1f} MiB; peak {peak / CHUNK_BYTES:.2f} MiB")
    assert peak < 8 * CHUNK_BYTES, f"peak {peak / CHUNK_BYTES:.1f} MiB while zipping {total / CHUNK_BYTES:.0f} MiB"
