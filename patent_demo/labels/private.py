"""Files only their owner reads: folders 0700, files 0600, written atomically (the label database's
folder, its kept query drawings, the exports)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

FILE_MODE, DIR_MODE = 0o600, 0o700


def private_dir(path: Path) -> None:
    """Create ``path`` (and missing parents) as 0700; an existing folder is left as it is."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        d.mkdir(mode=DIR_MODE, exist_ok=True)
        os.chmod(d, DIR_MODE)


def write_private(path: Path, data: bytes) -> None:
    """Write ``path`` atomically (temporary file, then rename) with mode 0600."""
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
