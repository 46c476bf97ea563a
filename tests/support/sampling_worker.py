"""Watching a sampling batch until its state is reached."""

import time

import pytest

from sampling.models import SamplingBatch


def watch(batch: SamplingBatch, until, timeout: float = 240) -> list[tuple]:
    """Poll the batch row; return every distinct (status, done, total, message) seen."""
    seen: list[tuple] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = tuple(
            SamplingBatch.objects.filter(pk=batch.pk)
            .values_list("status", "progress_done", "progress_total", "progress_message")
            .get()
        )
        if not seen or seen[-1] != state:
            seen.append(state)
        if until(state):
            return seen
        time.sleep(0.02)
    pytest.fail(f"batch #{batch.pk} did not get there in {timeout} s; seen: {seen}")
