"""Local development: `make run`. DEBUG stays off (as in base: DJANGO_DEBUG=1 turns it
on for a developer's own machine), so users see plain error pages, never a traceback
with the settings; WhiteNoise serves the static files either way."""

from kgapp.settings.base import *  # noqa: F403
