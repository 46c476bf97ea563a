"""The migration linter's verdict over recorded migrations: the refusals no excuse covers,
the excuses used, and the excuses that no longer say what is true.

``verdict`` is pure (recorded migrations in, ``Verdict`` out); ``lint_every_migration``
records every migration on a scratch PostgreSQL database first (``recording``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from annotation.schema.excused import EXCUSED, Excuse
from annotation.schema.hot_tables import hot_tables
from annotation.schema.recording import record_every_migration, scratch_database, volatile_functions
from annotation.schema.rules import RecordedMigration, Refusal, judge


@dataclass
class Verdict:
    """``recorded``: every migration in the order they apply, as ``{"migration",
    "hot_tables" (those its statements act on), "reversible"}``; ``refused``: what the linter
    refuses (nothing: it passes); ``excused``: migration label -> the rules its excuse
    covered; ``stale``: excuses that no longer match."""

    migrations: int
    recorded: list[dict] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    excused: dict[str, frozenset[str]] = field(default_factory=dict)
    stale: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.refused and not self.stale


def verdict(
    recorded: list[RecordedMigration],
    hot: set[str],
    volatile: set[str],
    excused: dict[str, Excuse] | None = None,
) -> Verdict:
    """Judge every recorded migration; an excuse covers exactly the rules it lists."""
    excused = EXCUSED if excused is None else excused
    result = Verdict(migrations=len(recorded))
    seen = set()
    for migration in recorded:
        refusals = judge(migration, hot, volatile)
        touched = sorted(migration.touched_tables() & hot)
        result.recorded.append(
            {"migration": migration.label, "hot_tables": touched, "reversible": migration.reversible}
        )
        excuse = excused.get(migration.label)
        seen.add(migration.label)
        if excuse is None:
            result.refused += refusals
            continue
        broken = frozenset(refusal.rule for refusal in refusals)
        result.refused += [refusal for refusal in refusals if refusal.rule not in excuse.rules]
        if excuse.rules - broken:
            result.stale.append(
                f"{migration.label}: excused for {', '.join(sorted(excuse.rules - broken))}, which it no longer breaks"
            )
        if broken & excuse.rules:
            result.excused[migration.label] = broken & excuse.rules
    result.stale += [f"{label}: excused, but no such migration was recorded" for label in sorted(set(excused) - seen)]
    return result


def lint_every_migration(scratch_name: str) -> Verdict:
    """Record every migration on a new database ``scratch_name`` (dropped afterwards) and
    judge them."""
    with scratch_database(scratch_name) as connection:
        recorded = record_every_migration(connection)
        volatile = volatile_functions(connection)
    return verdict(recorded, set(hot_tables()), volatile)
