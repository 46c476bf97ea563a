"""The objects annotated in a dataset's images (COCO instances: a category and a box per
object), which the explainable evaluation reads as the images' visual concepts."""

from django.db import models
from django.db.models import Q

from annotation.models.items import Image

CATEGORY_CHARS = 100
# The largest coordinate, size or area stored, in pixels (or square pixels): far beyond
# any image, and a finite bound.
MAX_MEASURE = 1e15


class ObjectAnnotation(models.Model):
    image = models.ForeignKey(Image, on_delete=models.CASCADE, related_name="annotated_objects")
    category = models.CharField(
        max_length=CATEGORY_CHARS, help_text="The object's category name as the imported file gives it, e.g. dog."
    )
    coco_category_id = models.IntegerField(
        null=True, blank=True, help_text="The category's id in the imported file (COCO's ids for its 80 categories)."
    )
    coco_annotation_id = models.BigIntegerField(
        null=True, blank=True, help_text="The annotation's id in the imported file, if it has one."
    )
    bbox_x = models.FloatField(help_text="Bounding box: left edge, in pixels.")
    bbox_y = models.FloatField(help_text="Bounding box: top edge, in pixels.")
    bbox_w = models.FloatField(help_text="Bounding box: width, in pixels (>= 0).")
    bbox_h = models.FloatField(help_text="Bounding box: height, in pixels (>= 0).")
    area = models.FloatField(help_text="The object's area in square pixels as the file gives it (COCO: its mask's).")
    iscrowd = models.BooleanField(default=False, help_text="COCO's crowd flag: the region covers a group of objects.")

    class Meta:
        # The bounds keep NaN and infinity out on PostgreSQL (NaN sorts above every
        # number there) and on SQLite (which stores infinity as a number and NaN as NULL).
        constraints = [
            models.CheckConstraint(
                condition=Q(area__gte=0) & Q(area__lte=MAX_MEASURE), name="object_area_within_bounds"
            ),
            models.CheckConstraint(
                condition=Q(bbox_w__gte=0) & Q(bbox_w__lte=MAX_MEASURE) & Q(bbox_h__gte=0) & Q(bbox_h__lte=MAX_MEASURE),
                name="object_box_size_within_bounds",
            ),
            models.CheckConstraint(
                condition=Q(bbox_x__gte=-MAX_MEASURE)
                & Q(bbox_x__lte=MAX_MEASURE)
                & Q(bbox_y__gte=-MAX_MEASURE)
                & Q(bbox_y__lte=MAX_MEASURE),
                name="object_box_corner_within_bounds",
            ),
            models.CheckConstraint(condition=~Q(category=""), name="object_category_not_empty"),
        ]
        indexes = [models.Index(fields=["image", "category"], name="object_image_category_idx")]

    def __str__(self) -> str:
        return f"{self.category} in image {self.image_id}"
