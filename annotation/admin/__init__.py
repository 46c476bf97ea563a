"""Admin pages, one module per area; importing the package registers them all.

May import every service and selector package of the app; no other package imports it
(but for ``annotation.admin.runs``' mixin, which the sampling admin shares)."""

from annotation.admin import accounts, crowd, datasets, gold, pairs, quality, runs  # noqa: F401 (registers)
