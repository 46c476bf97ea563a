"""manage.py review_failures JOB: queue the failures of the explained evaluation job JOB
for the crowd's review (once; again changes nothing) and print the review's figures:
per model the marks and the Spearman correlation of the human score with CA, NCS, CE and
SD in both forms. ``--csv`` writes the review file (one line per failure per model)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.core.errors import DomainError
from annotation.evaluation.review.queueing import DEFAULT_RATERS, review_queue
from annotation.evaluation.review.report import review_csv, review_report
from annotation.evaluation.review.table import format_review


class Command(BaseCommand):
    help = (
        "Queue an explained evaluation's failures for review by N raters each (idempotent) and print the "
        "review's figures: marks per failure and Spearman of the human score against the concept metrics."
    )

    def add_arguments(self, parser):
        parser.add_argument("job", type=int, help="the explained evaluation job's id")
        parser.add_argument(
            "--raters",
            type=int,
            default=None,
            help=f"distinct raters per failure (default {DEFAULT_RATERS}; left out once queued: as queued)",
        )
        parser.add_argument("--csv", help="write the review file here (one line per failure per model)")

    def handle(self, *args, **options):
        try:
            queued = review_queue(job_id=options["job"], raters=options["raters"])
            report = review_report(job_id=options["job"])
            text = review_csv(job_id=options["job"]) if options["csv"] else None
        except DomainError as exc:
            raise CommandError(str(exc)) from None
        if queued.created:
            self.stdout.write(f"Queued {queued.failures} failures for review ({queued.pairs_new} new items).")
        else:
            self.stdout.write(f"The {queued.failures} failures were queued before; nothing was added.")
        self.stdout.write(format_review(report))
        if text is not None:
            Path(options["csv"]).write_text(text, encoding="utf-8")
            self.stdout.write(f"Review file written to {options['csv']}.")
