"""What the campaign dashboard keeps: the computed snapshot and the speed floor per kind."""

from django.db import models
from django.db.models import Q

from annotation.models.items import Dataset, TaskKind

# Seconds per item under which a rating counts as too fast, when a dataset sets none for
# the kind: reading two captions takes longer than glancing at two pictures.
# A review reads a caption and two pictures and ticks its marks: STS's floor.
DEFAULT_SPEED_FLOORS: dict[str, float] = {TaskKind.STS: 3.0, TaskKind.SIS: 1.5, TaskKind.SITS: 1.5, TaskKind.REV: 3.0}


class CampaignSnapshot(models.Model):
    """The dashboard's numbers for one dataset, computed at ``made_at`` by
    ``annotation.dashboard.services.campaign_snapshot_refresh``; pages read it instead of
    the ratings, so they do not grow with the dataset. ``data``: the shape in
    annotation.dashboard.snapshot (pages read the parts they need of it)."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="campaign_snapshots")
    made_at = models.DateTimeField(help_text="When the numbers were computed (the ratings up to then).")
    refresh_seconds = models.FloatField(help_text="How long the computation took.")
    data = models.JSONField(help_text="The dashboard's numbers (annotation.dashboard.snapshot.campaign_numbers).")

    class Meta:
        indexes = [models.Index(fields=["dataset", "-made_at"], name="snapshot_dataset_made_idx")]
        constraints = [models.CheckConstraint(condition=Q(refresh_seconds__gte=0), name="snapshot_seconds_nonnegative")]

    def __str__(self) -> str:
        return f"snapshot of {self.dataset_id} at {self.made_at:%Y-%m-%d %H:%M:%S}"


class SpeedFloor(models.Model):
    """A dataset's speed floor for one kind: ratings given in less time count as too fast
    on the dashboard. Kinds without a row use DEFAULT_SPEED_FLOORS."""

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="speed_floors")
    kind = models.CharField(max_length=4, choices=TaskKind.choices)
    seconds = models.FloatField(
        help_text="Ratings faster than this many seconds per item count as too fast "
        f"(defaults: {', '.join(f'{k} {v:g} s' for k, v in DEFAULT_SPEED_FLOORS.items())})."
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["dataset", "kind"], name="speed_floor_unique"),
            models.CheckConstraint(condition=Q(seconds__gte=0), name="speed_floor_nonnegative"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} floor {self.seconds:g} s"
