"""Production: secrets and hosts must come from the environment."""

from django.core.exceptions import ImproperlyConfigured

from kgapp.settings import env
from kgapp.settings.base import *  # noqa: F403

DEBUG = False
SECRET_KEY = env.text("DJANGO_SECRET_KEY")
if not SECRET_KEY:
    raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set in production")
SESSION_COOKIE_SECURE = env.flag("DJANGO_SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
