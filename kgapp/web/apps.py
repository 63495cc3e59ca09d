from django.apps import AppConfig


class WebConfig(AppConfig):
    name = "kgapp.web"
    label = "web"
    verbose_name = "Web"

    def ready(self) -> None:
        # Tasks sent from web requests must use the app configured from settings.
        import kgapp.celery  # noqa: F401
        import kgapp.web.ratelimits  # noqa: F401  (registers its system check)
