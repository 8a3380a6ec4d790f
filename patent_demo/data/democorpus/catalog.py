"""Every design type of the demo corpus: importing this module imports the ``types_*`` modules, whose
``designs.register`` decorators fill ``TYPES``; ``make_design`` builds one design of a registered type.
The ``types_*`` modules import ``designs`` only, so the registry has no import circle."""

from __future__ import annotations

import numpy as np

from patent_demo.data.democorpus import (  # noqa: F401 - imported for their registrations
    types_electronics,
    types_furniture,
    types_household,
    types_lighting,
    types_technical,
)
from patent_demo.data.democorpus.designs import TYPES, Design, Params

__all__ = ["TYPES", "make_design"]


def make_design(
    key: str, rng: np.random.Generator, base: dict | None = None, jitter: float = 0.0
) -> tuple[Design, dict]:
    """Build one design of type ``key``; returns the design and its parameter values."""
    try:
        dtype = TYPES[key]
    except KeyError:
        raise KeyError(f"unknown design type {key!r}; known: {sorted(TYPES)}") from None
    p = Params(rng, base, jitter)
    design = dtype.build(p)
    return design, dict(p.values)
