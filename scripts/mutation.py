"""Mutation testing of the rating policy, gold, quiz, crowd, exclusion and quota modules.

`make mutation` runs this with the exports of scripts/probe_services.py (PostgreSQL is
required: the modules' statements are PostgreSQL's). mutmut (configured under
[tool.mutmut] in pyproject.toml) copies the sources into mutants/, runs the selected tests
once to learn which tests reach which function, then runs each mutant against only those
tests, --workers at a time. Each worker's pytest session uses its own clone of one migrated
template database (tests/support/mutation_mode.py), so no session creates or migrates a database.

The survivors are listed in mutants/survivors.txt (`.venv/bin/mutmut show NAME` prints a
mutant's diff). The last line printed is one JSON object:
{"mutants", "killed", "survived", "timeout", "no_tests", "other", "killed_percent",
 "seconds", "workers", "modules": {module: {status: count}}}.

    scripts/mutation.py [--workers N] [--resume] [MUTANT_GLOB ...]

--resume keeps mutants/ and the verdicts already reached (mutmut retests only functions
whose source changed); the default starts from nothing. Mutant globs (as mutmut names
them, e.g. 'annotation.people.crowd.*') rerun just those mutants and imply --resume.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlparse

REPO_DIR = Path(__file__).resolve().parent.parent
MUTANTS_DIR = REPO_DIR / "mutants"
PROGRESS_EVERY_SECONDS = 30


def template_database() -> str:
    """The migrated template's name, from the database that probe_services.py chose."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        sys.exit("mutation testing needs PostgreSQL: run it through `make mutation` with PostgreSQL reachable")
    return f"test_{urlparse(url).path.lstrip('/')}_mutation"


def prepare_databases(template: str, workers: int) -> None:
    """Migrate the template once and clone it for each worker (PostgreSQL copies a
    template database file by file, far faster than migrating again)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(REPO_DIR))
    import django

    django.setup()
    from django.db import connection

    quote = connection.ops.quote_name
    with connection._nodb_cursor() as cursor:  # a clean start, without Django's "already exists" notice
        for name in [template, *(f"{template}_{number}" for number in range(1, workers + 1))]:
            cursor.execute(f"DROP DATABASE IF EXISTS {quote(name)} WITH (FORCE)")
    connection.settings_dict.setdefault("TEST", {})["NAME"] = template
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    for number in range(1, workers + 1):
        connection.creation.clone_test_db(suffix=str(number), verbosity=0, autoclobber=True)
    connection.close()


def run_mutmut(names: list[str], workers: int, env: dict[str, str]) -> int:
    """mutmut's own output, with its in-place status line printed every
    PROGRESS_EVERY_SECONDS instead of ten times a second."""
    command = [str(Path(sys.executable).parent / "mutmut"), "run", "--max-children", str(workers), *names]
    process = subprocess.Popen(command, cwd=REPO_DIR, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    last_status, printed_at = "", 0.0
    buffer = b""
    while chunk := process.stdout.read1(65536):
        buffer += chunk
        *pieces, buffer = re.split(rb"[\r\n]", buffer)
        for piece in pieces:
            text = piece.decode(errors="replace").strip()
            if not text:
                continue
            if "🎉" in text:  # the status line: done/total and a count per verdict
                last_status = text
                if time.monotonic() - printed_at >= PROGRESS_EVERY_SECONDS:
                    print(text, flush=True)
                    printed_at = time.monotonic()
            elif not text.startswith(("⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏")):
                print(text, flush=True)
    if last_status:
        print(last_status, flush=True)
    return process.wait()


def verdicts() -> dict[str, dict[str, str]]:
    """{module path: {mutant name: status}} from mutmut's per-file records."""
    from mutmut.stats import status_by_exit_code

    found = {}
    for meta in sorted(MUTANTS_DIR.rglob("*.py.meta")):
        exit_codes = json.loads(meta.read_text())["exit_code_by_key"]
        module = str(meta.relative_to(MUTANTS_DIR))[: -len(".meta")]
        found[module] = {name: status_by_exit_code[code] for name, code in exit_codes.items()}
    return found


def summary(found: dict[str, dict[str, str]], seconds: float, workers: int) -> dict:
    total = Counter(status for mutants in found.values() for status in mutants.values())
    mutants = sum(total.values())
    named = {"killed", "survived", "timeout", "no tests"}
    return {
        "mutants": mutants,
        "killed": total["killed"],
        "survived": total["survived"],
        "timeout": total["timeout"],
        "no_tests": total["no tests"],
        "other": {status: n for status, n in total.items() if status not in named},
        "killed_percent": round(100 * total["killed"] / mutants, 1) if mutants else 0.0,
        "seconds": round(seconds),
        "workers": workers,
        "modules": {module: dict(Counter(m.values())) for module, m in found.items() if m},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--resume", action="store_true", help="keep mutants/ and the verdicts reached so far")
    parser.add_argument("names", nargs="*", help="mutant names or globs to (re)run; implies --resume")
    args = parser.parse_args()

    started = time.monotonic()
    template = template_database()
    if not (args.resume or args.names):
        shutil.rmtree(MUTANTS_DIR, ignore_errors=True)
    prepare_databases(template, args.workers)
    env = {
        **os.environ,
        "MUTATION_TEST_DATABASE": template,
        "MUTATION_DB_SLOTS": str(args.workers),
        "MUTATION_LOCK_DIR": str(MUTANTS_DIR / "db-locks"),
        "MUTATION_ORDER_DIR": str(MUTANTS_DIR / "test-order"),
    }
    code = run_mutmut(args.names, args.workers, env)
    seconds = time.monotonic() - started
    found = verdicts()
    survivors = sorted(
        (name, status) for mutants in found.values() for name, status in mutants.items() if status != "killed"
    )
    (MUTANTS_DIR / "survivors.txt").write_text("".join(f"{name}\t{status}\n" for name, status in survivors))
    print(f"mutmut exited with {code}; {len(survivors)} mutants not killed are listed in mutants/survivors.txt")
    print(json.dumps(summary(found, seconds, args.workers)))
    return code


if __name__ == "__main__":
    sys.exit(main())
