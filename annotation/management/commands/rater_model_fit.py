"""manage.py rater_model_fit DATASET: fit the rater-effects model now (the beat refits it
with the dashboard snapshot)."""

from django.core.management.base import BaseCommand, CommandError

from annotation.models import Dataset
from annotation.quality.adaptive_plans import adaptive_budgets_refresh
from annotation.quality.rater_fits import rater_model_refit


class Command(BaseCommand):
    help = (
        "Fit the rater-effects model (pair latent + rater bias + per-rater noise) of a dataset over its "
        "valid ratings, each task kind apart, and store each rater's bias and noise in place of the last fit."
    )

    def add_arguments(self, parser):
        parser.add_argument("dataset", help="the dataset's name")

    def handle(self, *args, **options):
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset named {options['dataset']!r}")
        for kind, fitted in rater_model_refit(dataset=dataset).items():
            if fitted is None:
                self.stdout.write(f"{kind}: no valid ratings, no fit")
                continue
            converged = "" if fitted.converged else ", not converged"
            self.stdout.write(
                f"{kind}: {fitted.ratings:,} ratings of {fitted.pairs:,} pairs by {fitted.raters:,} raters in "
                f"{fitted.seconds:.2f} s ({fitted.iterations} iterations{converged}); "
                f"pooled noise sd {fitted.pooled_noise_sd:.2f}, latent sd {fitted.latent_sd:.2f}"
            )
        for batch_id, plan in adaptive_budgets_refresh(dataset_id=dataset.pk).items():
            self.stdout.write(
                f"batch #{batch_id}: budget {plan.budget:,} ratings, target half-width {plan.half_width:.3f} "
                f"({plan.ratings_per_pair:.2f} ratings a pair over {plan.pairs_open:,} pairs open)"
            )
