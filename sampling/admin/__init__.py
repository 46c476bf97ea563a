"""Sampling's admin pages (batches, the model audit, phase two); importing the package
registers them."""

from sampling.admin import audit, batches, intrasim  # noqa: F401 (registers)
