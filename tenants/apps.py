import logging

from django.apps import AppConfig

logger = logging.getLogger(__name__)


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = "Tenants"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from tenants.wiring import configure_core, offline_extractor

        configure_core()
        # Checked without loading spaCy: start-up stays fast, and the pipeline loads on
        # the first extraction.
        problem = offline_extractor().problem
        if problem:
            logger.warning("Episodes ingested without an LLM will not be extracted: %s", problem)
