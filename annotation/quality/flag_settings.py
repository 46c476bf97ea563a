"""A dataset's rater-flag thresholds as :class:`annotation.quality.flags.FlagThresholds`
(the defaults of QualitySettings while the dataset has no row)."""

from __future__ import annotations

from annotation.models import QualitySettings
from annotation.quality.flags import FlagThresholds

FIELDS = (
    "flag_loo_below",
    "flag_gold_error_above",
    "flag_fast_share_above",
    "flag_gold_skip_share_above",
    "flag_noise_above",
)


def flag_thresholds_get(*, dataset_id: int) -> FlagThresholds:
    """One query; a dataset without a QualitySettings row gets the model's defaults."""
    row = QualitySettings.objects.filter(dataset_id=dataset_id).values(*FIELDS).first()
    if row is None:
        row = {name: QualitySettings._meta.get_field(name).default for name in FIELDS}
    return FlagThresholds(
        loo_below=row["flag_loo_below"],
        gold_error_above=row["flag_gold_error_above"],
        fast_share_above=row["flag_fast_share_above"],
        gold_skip_share_above=row["flag_gold_skip_share_above"],
        noise_above=row["flag_noise_above"],
    )
