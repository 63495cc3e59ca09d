"""Local data at rest (var/: the SQLite database, SurrealDB's files, the search index, the
Celery queue, logs, uploads being read) is readable by the service's own user only.

Every process of the product loads the settings, so every one of them (web, worker,
indexer, and the SurrealDB server `manage.py surreal` turns into) creates its files with
umask 077: directories 0700, files 0600. An installation made before that rule, whose
var/ other users can enter, has every mode under var/ tightened once, at the first start.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

logger = logging.getLogger(__name__)

PRIVATE_UMASK = 0o077


def keep_private(var_dir: Path) -> None:
    """Make `var_dir` (if need be) and keep what this process creates private."""
    os.umask(PRIVATE_UMASK)
    var_dir.mkdir(parents=True, exist_ok=True)
    mode = var_dir.stat()
    if not stat.S_IMODE(mode.st_mode) & PRIVATE_UMASK:
        return
    if mode.st_mode & stat.S_ISVTX or mode.st_uid != os.geteuid():
        # A shared directory (like /tmp) or someone else's: not ours to close.
        logger.warning("%s is shared or not this user's: its modes are left alone", var_dir)
        return
    tighten(var_dir)


def tighten(root: Path) -> int:
    """Take every permission of group and others off `root` and all below it (symbolic
    links are left alone); returns how many modes changed."""
    changed = 0
    below = (Path(top, name) for top, dirs, files in os.walk(root) for name in dirs + files)
    for path in [root, *below]:
        if path.is_symlink():
            continue
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
            if mode & PRIVATE_UMASK:
                path.chmod(mode & ~PRIVATE_UMASK)
                changed += 1
        except FileNotFoundError:  # removed meanwhile by a running process
            continue
        except PermissionError:  # another user's (root's read-only files in an image)
            logger.warning("%s is not this user's: its mode is left alone", path)
    if changed:
        logger.info("%s: made %d files and folders private to this user", root, changed)
    return changed
