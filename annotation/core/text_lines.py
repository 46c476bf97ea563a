"""Uploaded text read one bounded line at a time (rater lists, gold lists, pair lists, id
files): memory holds at most one line of at most ``max_line_bytes`` whatever the file's
size, a file without line breaks is refused at the bound instead of read whole, and a
byte that is not UTF-8 is refused naming its line and column. Pure Python."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import BinaryIO


def bounded_lines(
    stream: BinaryIO, *, name: str, max_line_bytes: int, error: Callable[[str], Exception], line_hint: str
) -> Iterator[str]:
    """The lines of ``stream`` as text, line ends kept (a byte-order mark at the start
    dropped). Raises ``error(message)`` for a line longer than ``max_line_bytes`` (the
    message ends with ``line_hint``: what a line of this file holds) and for a byte that
    is not UTF-8."""
    for number in itertools.count(1):
        raw = stream.readline(max_line_bytes + 1)
        if not raw:
            return
        if len(raw) > max_line_bytes:
            raise error(f"{name}: line {number} is longer than {max_line_bytes:,} bytes; {line_hint}")
        try:
            yield raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            column = len(raw[: exc.start].decode("utf-8-sig" if number == 1 else "utf-8", errors="replace")) + 1
            raise error(
                f"{name}: not UTF-8 text (line {number}, column {column}: byte 0x{raw[exc.start]:02x}, {exc.reason})"
            ) from None
