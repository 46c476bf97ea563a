"""The API fuzzed with schemathesis over its OpenAPI schema, as each role: no 5xx, no
status the schema does not document, every response matching its schema (all of
schemathesis's checks). Bounded for CI: few examples per operation and a fixed seed
(derandomized), so a failure reproduces. ``make fuzz`` is the long run (scripts/fuzz.py)."""

import pytest

from tests.fuzz.harness import fuzz_config, role_fuzz, serving
from tests.fuzz.world import ROLE_ACCOUNTS, world_build

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# About a minute per role on a busy 2-core machine.
MAX_EXAMPLES = 8
SEED = 13
# No time limit for the run: with one, schemathesis spends all of it. Each request has
# its own 60 s limit (harness.fuzz_config).


@pytest.fixture
def world():
    return world_build()


@pytest.mark.parametrize("role", sorted(ROLE_ACCOUNTS))
def test_api_fuzz(role, world):
    config = fuzz_config(max_examples=MAX_EXAMPLES, seed=SEED, deterministic=True)
    with serving() as base_url:
        report = role_fuzz(role=role, world=world, config=config, base_url=base_url)
    print(role, report.summary(), dict(report.statuses), sorted(report.examples), report.errors[:3], sep="\n")
    problems = "\n\n".join([*report.examples.values(), *report.errors])
    assert report.requests > 0
    assert report.server_errors == 0, problems
    assert not report.failures, problems
    assert not report.errors, problems
    assert len(report.operations) == report.operations_total, sorted(report.operations)
