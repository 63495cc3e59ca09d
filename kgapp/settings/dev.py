"""Local development: `make run`."""

from kgapp.settings.base import *  # noqa: F403

DEBUG = True
