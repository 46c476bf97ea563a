"""The entries of arrays of a JSON object read one at a time (a Karpathy file's
``images``, ``JsonArray``; a COCO file's ``images``, ``categories`` or ``annotations``,
``JsonArrays``), so memory holds one entry and a window of the text, not the whole
document.
Pure Python: the standard decoder parses each entry (``raw_decode``) from a window of
the file that grows only while an entry does not fit, up to ``max_entry_chars``.

Other members of the object are parsed and dropped the same way: an array entry by entry
(so an array not asked for may be of any length), anything else whole. Text after the
object, an entry or member longer than the bound, and bad JSON raise JsonStreamError
naming the line and column."""

from __future__ import annotations

import itertools
import json
from collections.abc import Collection, Iterator
from typing import TextIO

# Characters read at a time.
WINDOW_CHARS = 1 << 20
_WHITESPACE = " \t\n\r"
_NUMBER_CHARS = frozenset("0123456789+-.eE")


class JsonStreamError(ValueError):
    """Not the JSON expected; the message says where."""


class NotAnObject(JsonStreamError):
    """The text is JSON but not an object."""


class TooLong(JsonStreamError):
    """An entry (or another member) longer than the bound."""


class TooDeep(JsonStreamError):
    """A value nested deeper than the decoder's recursion limit (about 1,000 levels)."""


class JsonArrays:
    """Iterating gives ``(member, entry)`` for each entry of the arrays named in
    ``members`` that the object ``handle`` holds, parsed, one at a time, in the file's
    order; ``found`` says afterwards which of them the object had as arrays. Raises
    NotAnObject, TooDeep or JsonStreamError naming where the text goes wrong."""

    def __init__(self, handle: TextIO, *, members: Collection[str], max_entry_chars: int):
        self.reader, self.members, self.found = _Reader(handle, max_entry_chars), frozenset(members), set()

    def __iter__(self) -> Iterator[tuple[str, object]]:
        reader = self.reader
        if reader.peek() != "{":
            reader.value()  # bad JSON is named as such
            raise NotAnObject(reader.error("not an object"))
        reader.take()
        if reader.peek() == "}":
            reader.take()
        else:
            while True:
                key = reader.value()
                if not isinstance(key, str):
                    raise reader.error("expected a member name")
                reader.expect(":")
                if reader.peek() == "[":
                    wanted = key in self.members
                    if wanted:
                        self.found.add(key)
                    for entry in _entries(reader, key):
                        if wanted:
                            yield key, entry
                else:
                    reader.value()
                if reader.expect(",", "}") == "}":
                    break
        if reader.peek() != "":
            raise reader.error("text after the end of the object")


class JsonArray:
    """Iterating gives each entry of the array ``member`` of the object ``handle`` holds,
    parsed, one at a time; ``found`` says afterwards whether the object had that array.
    Raises as JsonArrays."""

    def __init__(self, handle: TextIO, *, member: str, max_entry_chars: int):
        self.arrays = JsonArrays(handle, members=(member,), max_entry_chars=max_entry_chars)

    @property
    def found(self) -> bool:
        return bool(self.arrays.found)

    def __iter__(self) -> Iterator[object]:
        for _member, entry in self.arrays:
            yield entry


def _entries(reader: _Reader, member: str) -> Iterator[object]:
    reader.expect("[")
    if reader.peek() == "]":
        reader.take()
        return
    for index in itertools.count():
        try:
            value = reader.value()
        except TooLong as exc:
            raise TooLong(f"{member}[{index}] ({exc})") from None
        yield value
        if reader.expect(",", "]") == "]":
            return


class _Reader:
    """A window over the text: ``self.text[self.at:]`` is what is left of it; the line
    and column of ``at`` are counted from the text dropped before it."""

    def __init__(self, handle: TextIO, max_entry_chars: int):
        self.handle, self.limit = handle, max_entry_chars
        self.text, self.at, self.ended = "", 0, False
        self.dropped_lines, self.dropped_chars, self.line_start = 0, 0, 0
        self.decoder = json.JSONDecoder()

    def _more(self) -> bool:
        """Read the next window (dropping what was parsed); False at the end."""
        if self.ended:
            return False
        done = self.text[: self.at]
        newlines = done.count("\n")
        if newlines:
            self.line_start = self.dropped_chars + done.rindex("\n") + 1
        self.dropped_lines += newlines
        self.dropped_chars += self.at
        chunk = self.handle.read(WINDOW_CHARS)
        self.text, self.at = self.text[self.at :] + chunk, 0
        self.ended = not chunk
        return bool(chunk)

    def peek(self) -> str:
        """The next character that is not white space ('' at the end)."""
        while True:
            while self.at < len(self.text) and self.text[self.at] in _WHITESPACE:
                self.at += 1
            if self.at < len(self.text) or not self._more():
                return self.text[self.at : self.at + 1]

    def take(self) -> str:
        char = self.peek()
        self.at += 1
        return char

    def expect(self, *chars: str) -> str:
        char = self.peek()
        if char not in chars:
            found = repr(char) if char else "the end of the file"
            raise self.error(f"expected {' or '.join(map(repr, chars))}, found {found}")
        self.at += 1
        return char

    def value(self) -> object:
        """The JSON value at the current place, read further while it does not fit."""
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.text, self.at)
            except json.JSONDecodeError as exc:
                # Where in the value, kept across the window's move.
                offset = exc.pos - self.at
                if self._grew():
                    continue
                raise self.error(exc.msg, at=self.at + offset) from None
            except RecursionError:
                raise TooDeep(self.error("nested too deeply to read (more than about 1,000 levels)")) from None
            # A number read up to the end of the window ("3" of "3.25", "3." of it) may
            # go on in the next one; anything else ends with its own closing character.
            if self._number_may_go_on(value, end) and self._grew():
                continue
            self.at = end
            return value

    def _number_may_go_on(self, value: object, end: int) -> bool:
        if self.ended or isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        return all(char in _NUMBER_CHARS for char in self.text[end:])

    def _grew(self) -> bool:
        if len(self.text) - self.at > self.limit:
            raise TooLong(self.error(f"longer than {self.limit:,} characters from here"))
        return self._more()

    def error(self, problem: str, *, at: int | None = None) -> JsonStreamError:
        at = self.at if at is None else at
        before = self.text[:at]
        line = self.dropped_lines + before.count("\n") + 1
        start = self.dropped_chars + before.rindex("\n") + 1 if "\n" in before else self.line_start
        return JsonStreamError(f"line {line} column {self.dropped_chars + at - start + 1}: {problem}")
