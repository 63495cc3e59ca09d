from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "kgapp.demo"
    label = "demo"
    verbose_name = "Demo data"
