"""Progress lines for management commands."""

import sys


def print_progress(done: int, total: int, message: str) -> None:
    if total:
        sys.stderr.write(f"\r{message}: {done}/{total} ({100 * done // max(total, 1)}%)   ")
    else:
        sys.stderr.write(f"\r{message} ...   ")
    sys.stderr.flush()
