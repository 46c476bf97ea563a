from django.apps import AppConfig
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class SamplingConfig(AppConfig):
    name = "sampling"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from sampling.search.index import IndexConfig, IndexConfigError

        # A bad search setting fails at start-up, not in the middle of a batch.
        try:
            IndexConfig.from_mapping(settings.SAMPLING_INDEX)
        except (IndexConfigError, TypeError) as exc:
            raise ImproperlyConfigured(f"SAMPLING_INDEX: {exc}") from exc
