"""Object types of the demo corpus: a registry of part grammars with parameter ranges.

Each type is one function ``build(p: Params) -> Design`` that draws its parameters from ``p`` (so the
ranges live beside the geometry that uses them) and returns the parts as meshes plus a list of
``Feature`` records that the text generator turns into a description. Calling it again with a
``Params`` seeded from earlier values and a small ``jitter`` gives a near variant of the same design
(a patent family member): discrete choices are kept, continuous ones move a little.

``TYPES`` maps a type key to its ``DesignType`` (Locarno subclass, noun, title variants); the type
definitions live in the ``types_*`` modules (furniture, household, lighting, technical, electronics), which
``catalog`` imports (it fills ``TYPES`` and holds ``make_design``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from patent_demo.data.democorpus.geometry import Mesh


@dataclass(frozen=True)
class Feature:
    """One describable part: ``part`` ("leg"), how many, descriptive words, and an optional clause."""

    part: str
    count: int = 1
    adjs: tuple[str, ...] = ()
    detail: str = ""


@dataclass
class Design:
    """The parts of one design and the features its text is written from; ``env`` names the
    environment shown in broken lines ("" when there is none)."""

    parts: list[Mesh]
    features: list[Feature]
    env: str = ""


class Params:
    """Parameter source for a type's build function.

    Fresh draws come from ``rng``; names present in ``base`` reuse the earlier value, moved by up to
    ``jitter`` times the range for continuous parameters (a near variant). ``values`` records every draw.
    """

    def __init__(self, rng: np.random.Generator, base: dict | None = None, jitter: float = 0.0) -> None:
        self.rng = rng
        self.base = base or {}
        self.jitter = jitter
        self.values: dict[str, float | int | str | bool] = {}

    def u(self, name: str, lo: float, hi: float) -> float:
        """A continuous parameter in ``[lo, hi]``."""
        if name in self.base:
            v = float(self.base[name]) + self.jitter * (hi - lo) * float(self.rng.uniform(-1, 1))
            v = min(max(v, lo), hi)
        else:
            v = float(self.rng.uniform(lo, hi))
        self.values[name] = round(v, 4)
        return self.values[name]

    def i(self, name: str, lo: int, hi: int) -> int:
        """An integer parameter in ``[lo, hi]`` (kept in a variant)."""
        v = int(self.base[name]) if name in self.base else int(self.rng.integers(lo, hi + 1))
        self.values[name] = v
        return v

    def c(self, name: str, options: Sequence[str]) -> str:
        """A choice among ``options`` (kept in a variant)."""
        v = str(self.base[name]) if name in self.base else str(options[int(self.rng.integers(len(options)))])
        self.values[name] = v
        return v

    def b(self, name: str, prob: float = 0.5) -> bool:
        """A yes/no parameter, true with probability ``prob`` (kept in a variant)."""
        v = bool(self.base[name]) if name in self.base else bool(self.rng.random() < prob)
        self.values[name] = v
        return v


@dataclass(frozen=True)
class DesignType:
    """A registered object type: ``key`` ("dining_chair"), Locarno subclass ("06-01"), the article
    noun used in figure descriptions ("chair"), title variants, and its build function."""

    key: str
    locarno: str
    noun: str
    titles: tuple[str, ...]
    build: Callable[[Params], Design] = field(repr=False, compare=False)

    @property
    def locarno_main(self) -> str:
        return self.locarno[:2]


TYPES: dict[str, DesignType] = {}


def register(key: str, locarno: str, noun: str, titles: Sequence[str]) -> Callable:
    """Decorator adding a build function to ``TYPES``."""

    def wrap(fn: Callable[[Params], Design]) -> Callable[[Params], Design]:
        if key in TYPES:
            raise ValueError(f"design type {key!r} registered twice")
        TYPES[key] = DesignType(key, locarno, noun, tuple(titles), fn)
        return fn

    return wrap


def size_word(value: float, lo: float, hi: float, words: Sequence[str]) -> str:
    """The word for where ``value`` lies in ``[lo, hi]``, from ``words`` ordered low to high."""
    t = (value - lo) / max(hi - lo, 1e-9)
    return words[min(int(t * len(words)), len(words) - 1)]
