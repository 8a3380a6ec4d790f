"""Files written whole or not at all: each is written to a temporary file beside its place and moved there
with ``os.replace``, so a reader never sees half a file and a crash leaves the old one."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _umask()


def atomic_write(path: str | os.PathLike, write: Callable[[str], None], private: bool = False) -> None:
    """``write(tmp)`` fills a temporary file, which then replaces ``path`` (its folder is made when missing).
    The file gets the usual permissions (``0666`` less the umask), or stays readable by its owner only with
    ``private`` (``mkstemp``'s ``0600``: the app's index cache)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        if not private:
            os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_text(path: str | os.PathLike, text: str, private: bool = False) -> None:
    """``text`` (UTF-8) written atomically to ``path``."""
    atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"), private)


def atomic_json(path: str | os.PathLike, obj: Any, private: bool = False, **dump: Any) -> None:
    """``obj`` as JSON (``json.dump`` keyword arguments in ``dump``) and a final newline, written atomically."""
    atomic_text(path, json.dumps(obj, **dump) + "\n", private)
