"""The rater-effects model's fits (annotation/quality/rater_effects.py): per dataset and task kind
the latest fit, its settings and, per rater, bias and noise with their intervals. The
adaptive rule weighs a pair's ratings by them; the dashboard and exports read them."""

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models.items import Dataset, TaskKind


class RaterModelFit(models.Model):
    """One fit over all valid ratings of a kind in a dataset; a new fit replaces the last."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="rater_model_fits")
    kind = models.CharField(max_length=4, choices=TaskKind.choices)
    fitted_at = models.DateTimeField()
    settings = models.JSONField(help_text="The model's priors and stopping rule (RaterModelSettings).")
    ratings = models.PositiveIntegerField()
    pairs = models.PositiveIntegerField()
    raters = models.PositiveIntegerField()
    grand_mean = models.FloatField()
    latent_sd = models.FloatField(help_text="Spread of all pairs' latent scores.")
    priors = models.JSONField(
        default=dict,
        help_text='Each sampling method\'s prior of its pairs\' latent scores: {method: {"mean", "sd"}}.',
    )
    pooled_noise_sd = models.FloatField(help_text="The noise a rater without ratings is given.")
    iterations = models.PositiveIntegerField()
    converged = models.BooleanField()
    seconds = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "kind"], name="rater_model_fit_one_per_kind"),
            models.CheckConstraint(
                condition=Q(latent_sd__gt=0) & Q(pooled_noise_sd__gt=0), name="rater_model_sd_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"rater model {self.kind} of {self.dataset_id} ({self.ratings} ratings)"


class RaterEstimate(models.Model):
    """A rater's bias and noise in one fit, with 95% intervals."""

    fit = models.ForeignKey(RaterModelFit, on_delete=models.CASCADE, related_name="estimates", db_index=False)
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    ratings = models.PositiveIntegerField()
    bias = models.FloatField()
    bias_low = models.FloatField()
    bias_high = models.FloatField()
    noise_sd = models.FloatField()
    noise_low = models.FloatField()
    noise_high = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["fit", "rater"], name="rater_estimate_unique"),
            models.CheckConstraint(condition=Q(noise_sd__gt=0), name="rater_estimate_noise_positive"),
        ]

    def __str__(self) -> str:
        return f"rater {self.rater_id}: bias {self.bias:+.2f}, noise {self.noise_sd:.2f}"
