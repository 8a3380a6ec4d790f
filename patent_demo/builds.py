"""What the workbench is building (a drawing model's index, the dense text index): each build's progress and
the time it has left, for the page's status line and the console; finished builds keep how long they took
(what ``bench/bench_cold_start.py`` reports).

A build is a progress bar with tqdm's interface (``update(n)``, ``close()``): the code that embeds takes it as
its ``progress`` and knows nothing else of it. The time left is the items still to do at the rate measured
so far, said once a few items are done."""

from __future__ import annotations

import copy
import html
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

MIN_FOR_ESTIMATE = 2  # updates before the time left is said (the first batch pays for warming up)


@dataclass
class Build:
    """One build: ``done`` of ``total`` items since ``started`` (monotonic seconds); ``target`` is what it
    builds, as the code that waits for it names it (``Builds.of``)."""

    name: str
    total: int
    unit: str = "items"
    done: int = 0
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    updates: int = 0
    console: Any = None  # the tqdm bar drawn on the console, when there is one
    target: str = ""

    def update(self, n: int = 1) -> None:
        self.done += n
        self.updates += 1
        if self.console is not None:
            self.console.update(n)

    def close(self) -> None:
        self.ended = time.monotonic()
        if self.console is not None:
            self.console.close()
            print(f"built {self.name} in {self.seconds:.1f} s", file=sys.stderr, flush=True)

    @property
    def seconds(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def left(self) -> float | None:
        """Seconds still to go at the rate so far, or None before ``MIN_FOR_ESTIMATE`` updates."""
        if self.updates < MIN_FOR_ESTIMATE or not self.done or self.total <= 0:
            return None
        return max(self.total - self.done, 0) * self.seconds / self.done

    def line(self) -> str:
        """ "embedding 1,106 drawings with zero-shot: 412 of 1,106 (37 %), about 40 s left"."""
        if not self.total:  # one step, no count to go by
            return f"{self.name}: {_duration(self.seconds)} so far"
        pct = 100 * self.done / self.total
        left = self.left()
        eta = "estimating the time left" if left is None else f"about {_duration(left)} left"
        return f"{self.name}: {self.done:,} of {self.total:,} {self.unit} · {pct:.0f} % · {eta}"


class _Counter:
    """The console's progress without tqdm: ``desc: n/total`` on stderr at each update."""

    def __init__(self, total: int | None, desc: str) -> None:
        self.total, self.desc, self.n = total, desc, 0

    def update(self, n: int) -> None:
        self.n += n
        of = f"/{self.total}" if self.total is not None else ""
        print(f"{self.desc}: {self.n}{of}", file=sys.stderr, flush=True)

    def close(self) -> None:
        pass


def _console_bar(total: int | None, desc: str, unit: str) -> Any:
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _Counter(total, desc)
    return tqdm(total=total, desc=desc, unit=unit[:5], file=sys.stderr)


class _Quiet:
    """The console of a one-step build: no bar, only the closing "built … in … s" line."""

    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s} s" if s < 90 else f"{s // 60} min {s % 60:02d} s"


class Builds:
    """The builds of one workbench, running and finished (thread-safe); ``console`` also draws each on stderr."""

    def __init__(self, console: bool = True) -> None:
        self.console = console
        self.target = ""  # what the builds started through this object build (``of``)
        self._lock = threading.Lock()
        self._all: list[Build] = []

    def of(self, target: str) -> Builds:
        """These builds, with each build started through the returned object marked as building ``target``
        (a drawing model's index, the dense text index): ``running(target)`` finds it by that, not by its
        wording. The list and its lock are shared."""
        view = copy.copy(self)
        view.target = target
        return view

    def bar(self, total: int | None, desc: str, unit: str = "items") -> Build:
        """A new build of ``total`` items named ``desc``: what an embedding loop updates as its progress bar."""
        shown = _console_bar(total, desc, unit) if self.console else None
        build = Build(desc, int(total or 0), unit, console=shown, target=self.target)
        with self._lock:
            self._all.append(build)
        return build

    @contextmanager
    def step(self, name: str) -> Iterator[Build]:
        """A build of one step (no count to go by): running while the ``with`` block runs."""
        build = Build(name, 0, console=_Quiet() if self.console else None, target=self.target)
        with self._lock:
            self._all.append(build)
        try:
            yield build
        finally:
            build.close()

    def running(self, target: str | None = None) -> list[Build]:
        """The builds not yet ended (of ``target`` only, when given)."""
        with self._lock:
            return [b for b in self._all if b.ended is None and target in (None, b.target)]

    def finished(self) -> list[Build]:
        with self._lock:
            return [b for b in self._all if b.ended is not None]

    def status_html(self) -> str:
        """One line per running build with a progress bar, or ``""`` when nothing is being built."""
        rows = []
        for b in self.running():
            value = f' value="{b.done}" max="{max(b.total, 1)}"' if b.total else ""
            rows.append(
                f"<div class='build'><progress{value}></progress> <span>{html.escape(b.line())}</span></div>"
            )
        return "".join(rows)


def progress_of(progress: bool | Builds, total: int | None, desc: str, unit: str) -> Any:
    """The progress bar an embedding loop updates: a build of ``progress`` (a ``Builds``), tqdm on the
    console (``True``; a plain counter on stderr without tqdm), or None (``False``)."""
    if isinstance(progress, Builds):
        return progress.bar(total, desc, unit)
    return _console_bar(total, desc, unit) if progress else None
