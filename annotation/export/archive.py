"""One zip of an export's files, made while it is sent: the standard library's zipfile
writing to a sink the generator empties after every chunk, so at most one chunk of a file
(and its compressed bytes) is held in memory, whatever the export's size. Pure (no Django).

Text files (CSV, JSON, JSONL) are deflated; Parquet is compressed already and is stored.
Entries sit in one folder named after the archive, so unpacking makes one folder. A file
of 2 GiB or more gets a zip64 entry (zipfile decides from its size on disk).
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

CHUNK_BYTES = 1 << 20
STORED_SUFFIXES = frozenset({".parquet"})


class _Sink(io.RawIOBase):
    """A write-only, unseekable file that keeps what was written until ``take``."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []
        self._offset = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self._chunks.append(bytes(data))
        self._offset += len(data)
        return len(data)

    def tell(self) -> int:
        # zipfile records each entry's offset from it; seeking stays unsupported, so it
        # writes sizes after the data (a data descriptor) instead of going back.
        return self._offset

    def take(self) -> bytes:
        out = b"".join(self._chunks)
        self._chunks.clear()
        return out


def zip_chunks(files: Iterable[tuple[str, Path]], *, folder: str, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The bytes of a zip holding each ``(name, path)`` as ``folder/name``, in order, as
    they are made. A file missing on disk raises FileNotFoundError when its turn comes."""
    sink = _Sink()
    with zipfile.ZipFile(sink, mode="w", allowZip64=True) as archive:
        for name, path in files:
            info = zipfile.ZipInfo.from_file(path, arcname=f"{folder}/{name}")
            stored = Path(name).suffix in STORED_SUFFIXES
            info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
            with path.open("rb") as source, archive.open(info, mode="w") as entry:
                while chunk := source.read(chunk_bytes):
                    entry.write(chunk)
                    if out := sink.take():
                        yield out
            if out := sink.take():
                yield out
    if out := sink.take():
        yield out
