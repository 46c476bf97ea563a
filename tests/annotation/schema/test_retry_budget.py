"""The migrate command's retry budget, without a database: the pause doubles up to its cap,
a deadlock counts as a lock wait given up, any other error is raised as it is."""

from types import SimpleNamespace

import pytest

from annotation.schema.safe_migrate import BACKOFF_CAP_S, MigrationNotRetried, MigrationTimeouts, RetryBudget

MIGRATION = SimpleNamespace(app_label="annotation", name="0999_planted", atomic=True)


class DriverError(Exception):
    """What Django's OperationalError carries as its cause: the driver's error and its code."""

    def __init__(self, pgcode: str):
        super().__init__(pgcode)
        self.pgcode = pgcode


def given_up(pgcode: str) -> Exception:
    error = Exception("canceled")
    error.__cause__ = DriverError(pgcode)
    return error


def test_the_pause_doubles_up_to_its_cap_and_the_retries_end():
    budget = RetryBudget(MigrationTimeouts(lock_ms=500, statement_ms=0, retries=7, backoff_ms=4000))
    delays = [budget.delay_after(MIGRATION, given_up("55P03" if n % 2 else "40P01")) for n in range(7)]
    assert (
        delays == [4.0, 8.0, 16.0, BACKOFF_CAP_S, BACKOFF_CAP_S, BACKOFF_CAP_S, BACKOFF_CAP_S] and BACKOFF_CAP_S == 30
    )
    with pytest.raises(MigrationNotRetried, match="8 times"):
        budget.delay_after(MIGRATION, given_up("55P03"))


def test_any_other_error_is_raised_as_it_is():
    budget = RetryBudget(MigrationTimeouts(lock_ms=500, statement_ms=0, retries=7, backoff_ms=4000))
    statement_timeout = given_up("57014")
    with pytest.raises(Exception) as raised:
        budget.delay_after(MIGRATION, statement_timeout)
    assert raised.value is statement_timeout
    with pytest.raises(Exception) as raised:
        budget.delay_after(None, given_up("55P03"))  # no migration was running
    assert raised.value.__cause__.pgcode == "55P03"
