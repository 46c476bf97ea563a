"""manage.py raters add --csv FILE: rater accounts in bulk, each with an invitation link."""

from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from annotation.core.errors import DomainError
from annotation.people.onboarding import rater_list_read, raters_add


class Command(BaseCommand):
    help = (
        "Add raters from a CSV (username,email,kinds; kinds like 'STS SIS'): accounts in the rater "
        "group, qualified for their kinds, each with a one-time link to set a password. "
        "No password is made or printed."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        add = sub.add_parser("add", help="add the raters of a CSV file")
        add.add_argument("--csv", required=True, dest="path", help="CSV with the header username,email,kinds")
        add.add_argument(
            "--base-url",
            default="",
            help="where the app is served (e.g. https://rate.example.org), put before each link",
        )

    def handle(self, *args, **options):
        try:
            invited = raters_add(rows=rater_list_read(options["path"]))
        except (DomainError, OSError) as exc:
            raise CommandError(f"no rater was added: {exc}") from exc
        base = options["base_url"].rstrip("/")
        self.stdout.write(
            f"Added {len(invited)} rater(s); each link works once, until {invited[0].expires_at:%Y-%m-%d %H:%M %Z}:"
        )
        for rater in invited:
            link = base + reverse("invitation", args=[rater.token])
            self.stdout.write(f"  {rater.username}\t{' '.join(rater.kinds)}\t{link}")
