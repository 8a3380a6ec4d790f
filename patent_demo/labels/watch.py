"""The label database watched under a running server: a write the file system or SQLite refuses, and a
database file that was deleted, moved, replaced (another file, another inode, at its path) or made
read-only (its mode, or an immutable file) since the store opened it, become one ``StoreUnwritable`` in plain words before the label is
written, logged once per cause.

SQLite keeps writing to the file it opened, even when that file was deleted or replaced: without the
watch, labels would be acknowledged into a file nobody can open again. When the database is gone or
replaced, the labels stored so far (read through the store's still-open connection, its WAL included) are
copied beside it to ``<name>.recovered-<time>`` once, so nothing acknowledged is lost.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from patent_demo.labels.fields import LabelError

LOG = logging.getLogger("patent_demo.labels")
MAKE_WRITABLE = "whoever runs the server must make it writable"


class StoreUnwritable(LabelError):
    """The label database cannot be written (read-only, a full or failing disk, deleted or replaced under
    the server): nothing was stored. ``why`` says it in a few plain words ("the label database is
    read-only")."""

    def __init__(self, why: str, name: str, fix: str = MAKE_WRITABLE) -> None:
        super().__init__(f"not stored: {why} ({name}); nothing was saved, and {fix}")
        self.why = why


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """A write to the database at ``path``: SQLite's and the file system's refusals become one
    ``StoreUnwritable`` in plain words (naming the file, not its folder)."""
    try:
        yield
    except (sqlite3.OperationalError, OSError) as err:
        text = str(err).lower()
        code = getattr(err, "errno", None)
        if code in (errno.EACCES, errno.EPERM, errno.EROFS) or "readonly" in text or "read-only" in text:
            why = "the label database is read-only"
        elif code == errno.ENOSPC or "full" in text:
            why = "the disk of the label database is full"
        elif "disk i/o" in text or "unable to open" in text:  # read-only files under WAL say this
            files = (path, path.with_name(path.name + "-wal"), path.parent)
            read_only = any(f.exists() and not os.access(f, os.W_OK) for f in files)
            why = (
                "the label database is read-only"
                if read_only
                else "the label database cannot be written (disk I/O error)"
            )
        else:
            raise
        raise StoreUnwritable(why, path.name) from None


class StoreWatch:
    """The identity (device, inode) of the database file the store opened, checked before each write."""

    def __init__(self, path: Path) -> None:
        self.path = path
        st = os.stat(path)
        self.identity = (st.st_dev, st.st_ino)
        self.recovered: Path | None = None
        self._logged: set[str] = set()

    def check(self, conn: sqlite3.Connection) -> None:
        """``StoreUnwritable`` when the file at the store's path is not the one it opened, or is read-only;
        the first time it is gone or replaced, the store's labels are copied to a recovery file."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._refuse("the label database was deleted or moved while the server ran", conn)
            return
        if (st.st_dev, st.st_ino) != self.identity:
            self._refuse("the label database was replaced by another file while the server ran", conn)
        if not st.st_mode & stat.S_IWUSR or not os.access(self.path, os.W_OK):  # its mode, even for root
            self.log("the label database is read-only")
            raise StoreUnwritable("the label database is read-only", self.path.name)

    def _refuse(self, why: str, conn: sqlite3.Connection) -> None:
        if self.recovered is None:
            self.recovered = self._recover(conn)
        kept = (
            f"the labels stored before are kept in {self.recovered.name}"
            if self.recovered is not None
            else "the labels stored before could not be copied (the folder is not writable)"
        )
        self.log(why, kept)
        raise StoreUnwritable(why, self.path.name, f"{kept}; whoever runs the server must restart it")

    def _recover(self, conn: sqlite3.Connection) -> Path | None:
        """The open database (the file SQLite still holds, its WAL included) copied beside the path."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        out = self.path.with_name(f"{self.path.name}.recovered-{stamp}")
        try:
            target = sqlite3.connect(str(out))
            with target:
                conn.backup(target)
            target.close()
            os.chmod(out, 0o600)
        except (sqlite3.Error, OSError) as err:
            LOG.error("could not copy the label database to %s: %s", out, err)
            return None
        return out

    def log(self, why: str, more: str = "") -> None:
        """Say in the server's log (once per cause) that labels are refused, and why."""
        if why not in self._logged:
            self._logged.add(why)
            LOG.error("labels refused from now on: %s (%s)%s", why, self.path, f"; {more}" if more else "")
