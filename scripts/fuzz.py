"""``make fuzz``: schemathesis against the app for FUZZ_MINUTES per role.

The same harness and checks as the CI suite (tests/fuzz), for a time budget per role
(admin, researcher, rater, in that order): rounds of every phase with ROUND_EXAMPLES
examples per operation, each round with the next seed, until the role's time is spent (the
last round is cut off at the deadline). FUZZ_SEED sets the first seed (default: random).
Runs against PostgreSQL in a fresh database of its own (``cxc_fuzz``), with the fuzz world
of tests/fuzz/world.py loaded first; the app is served on an ephemeral port of 127.0.0.1.

Each distinct failure (check, operation, status) is written to stderr with a curl command
that reproduces it. The last line of output is one JSON object:
{"minutes_per_role", "seed", "roles": {role: {"requests", "server_errors_5xx", "violations",
"violations_by_check", "operations_covered", "operations_total", "rounds", ...}},
"server_errors_5xx", "violations"}. The exit status is 1 when there was a 5xx, a violation
or an engine error.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_DIR))
sys.path.insert(0, str(REPO_DIR / "benchmarks"))

from _common import drop_database, fresh_database, setup_django  # noqa: E402  (the paths above)

DATABASE = "cxc_fuzz"
ROLES = ("admin", "researcher", "rater")
ROUND_EXAMPLES = 50


def _minutes() -> float:
    raw = os.environ.get("FUZZ_MINUTES", "")
    try:
        minutes = float(raw)
    except ValueError:
        raise SystemExit(f"FUZZ_MINUTES must be a number of minutes per role; got {raw!r}") from None
    if minutes <= 0:
        raise SystemExit(f"FUZZ_MINUTES must be more than 0; got {raw!r}")
    return minutes


def _roles() -> list[str]:
    """FUZZ_ROLES: a comma-separated subset of ROLES (default: all), e.g. to rerun one."""
    roles = [r.strip() for r in os.environ.get("FUZZ_ROLES", ",".join(ROLES)).split(",") if r.strip()]
    unknown = sorted(set(roles) - set(ROLES))
    if unknown or not roles:
        raise SystemExit(f"FUZZ_ROLES must name some of {', '.join(ROLES)}; got {os.environ.get('FUZZ_ROLES')!r}")
    return roles


def main() -> int:
    minutes = _minutes()
    roles = _roles()
    seed = int(os.environ["FUZZ_SEED"]) if os.environ.get("FUZZ_SEED") else random.SystemRandom().getrandbits(32)
    scratch = tempfile.mkdtemp(prefix="cxc-fuzz-")
    setup_django(
        fresh_database(DATABASE),
        DATA_DIR=f"{scratch}/data",
        EXPORT_DIR=f"{scratch}/exports",
        CELERY_TASK_ALWAYS_EAGER="true",
    )
    from django.conf import settings

    from tests.fuzz.harness import serving
    from tests.fuzz.world import world_build

    # Every refused request is logged as a warning: thousands. Server errors still are.
    logging.getLogger("django.request").setLevel(logging.ERROR)
    # The fuzzer logs in thousands of times (every new token, every wrong password): with
    # the production hasher that is most of the run. The demo accounts are throwaway.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

    world = world_build()
    summaries = {}
    failed = False
    try:
        with serving() as base_url:
            for role in roles:
                report = _role_rounds(role, world, base_url, seconds=minutes * 60, seed=seed)
                summaries[role] = report.summary() | {"rounds": report.rounds}
                for text in [*report.examples.values(), *report.errors]:
                    print(f"--- {role}\n{text}\n", file=sys.stderr)
                print(f"{role}: {json.dumps(summaries[role])}", flush=True)
                failed |= bool(report.server_errors or report.failures or report.errors)
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(DATABASE)
        shutil.rmtree(scratch, ignore_errors=True)
    print(
        json.dumps(
            {
                "minutes_per_role": minutes,
                "seed": seed,
                "roles": summaries,
                "server_errors_5xx": sum(s["server_errors_5xx"] for s in summaries.values()),
                "violations": sum(s["violations"] for s in summaries.values()),
            }
        )
    )
    return 1 if failed else 0


def _role_rounds(role: str, world, base_url: str, *, seconds: float, seed: int):
    from tests.fuzz.harness import fuzz_config, role_fuzz

    deadline = time.monotonic() + seconds
    report = None
    rounds = 0
    while (left := deadline - time.monotonic()) >= 1:
        config = fuzz_config(
            max_examples=ROUND_EXAMPLES, seed=seed + rounds, deterministic=False, max_seconds=max(1, int(left))
        )
        report = role_fuzz(role=role, world=world, config=config, base_url=base_url, report=report)
        rounds += 1
    report.rounds = rounds
    return report


if __name__ == "__main__":
    sys.exit(main())
