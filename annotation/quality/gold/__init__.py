"""Gold pairs (issue #15): reference-scored pairs served inside the normal queue at a
per-dataset rate, their ratings kept apart from the dataset's, the per-rater gold error
and the automatic pause it can trigger (``annotation.quality.pauses``)."""
