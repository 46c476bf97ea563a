"""How long work reports how far it got: ``progress(done, total, message)``.

Imports, exports, evaluations and sampling batches take one; the run lifecycle
(``annotation.runs.lifecycle``) hands them one that writes the run's status row.
"""

from collections.abc import Callable

Progress = Callable[[int, int, str], None]


def no_progress(done: int, total: int, message: str) -> None:
    """The progress of work nobody watches: reports go nowhere."""
