"""Production: secrets and hosts must come from the environment; HTTPS only.

`manage.py check --deploy` is clean with these settings (tests/web/test_deploy_security.py).
Behind a TLS-terminating proxy set DJANGO_TRUSTED_PROXY=true (base.py), else
X-Forwarded-Proto is not believed and every request looks like plain HTTP."""

from django.core.exceptions import ImproperlyConfigured

from kgapp.settings import env
from kgapp.settings.base import *  # noqa: F403

DEBUG = False
SECRET_KEY = env.text("DJANGO_SECRET_KEY")
if not SECRET_KEY:
    raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set in production")
SESSION_COOKIE_SECURE = env.flag("DJANGO_SECURE_COOKIES", True)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_SSL_REDIRECT = env.flag("DJANGO_SSL_REDIRECT", True)
# Health probes from inside the deployment speak plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^api/v1/health$"]
SECURE_HSTS_SECONDS = env.integer("DJANGO_HSTS_SECONDS", 31536000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.flag("DJANGO_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env.flag("DJANGO_HSTS_PRELOAD", True)
