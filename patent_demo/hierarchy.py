"""How related two classified items are: the HMCL relevance h(i, j) (Eq. 2 of the HMCL paper) and the
DSSDNet domain label t (Eq. 4 of the DSSDNet paper), defined once and used by the loss, the metrics,
training and the app::

    h_ij = s_p  if patent(i) = patent(j)
         = s_s  if subclass(i) = subclass(j), patent(i) != patent(j)
         = s_m  if main(i) = main(j), subclass(i) != subclass(j)
         = 0    otherwise

t is 1 when the IPC subclass sets of query and candidate overlap. Codes are parsed by
:mod:`patent_demo.taxonomy`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from patent_demo.taxonomy import IPC, Locarno, parse, parse_locarno, parse_uspc, uspc_class

# Hierarchy schemes of h(i, j): a drawing's patent is classified under one scheme, two levels each.
#   locarno  subclass "06-01"  main class "06"
#   uspc     subclass "D6/369" main class "D6"   (US design classes; utility classes work alike)
# Keys are qualified by their scheme ("locarno:06-01", "uspc:D6"), so items classified under different
# schemes never share a subclass or main class: they relate only through the patent.
HIERARCHY_SCHEMES = ("locarno", "uspc")


@dataclass(frozen=True)
class HMCLWeights:
    """Relevance given to a same-patent (``s_p``), same-subclass (``s_s``) and same-main-class
    (``s_m``) pair (HMCL Eq. 2); requires ``s_p >= s_s >= s_m >= 0`` and ``s_p > 0``. The defaults
    1 / 0.35 / 0.2 are the paper's and the only place these numbers are defined."""

    s_p: float = 1.0
    s_s: float = 0.35
    s_m: float = 0.2

    def __post_init__(self) -> None:
        if not (self.s_p >= self.s_s >= self.s_m >= 0 and self.s_p > 0):
            raise ValueError(
                f"HMCL weights need s_p >= s_s >= s_m >= 0 and s_p > 0, got "
                f"s_p={self.s_p}, s_s={self.s_s}, s_m={self.s_m}"
            )

    @classmethod
    def coerce(cls, weights: HMCLWeights | Sequence[float] | None) -> HMCLWeights:
        """``None`` → the defaults; a ``(s_p, s_s, s_m)`` sequence → ``HMCLWeights``."""
        if weights is None:
            return cls()
        if isinstance(weights, cls):
            return weights
        s_p, s_s, s_m = (float(w) for w in weights)
        return cls(s_p, s_s, s_m)

    def as_tuple(self) -> tuple[float, float, float]:
        return (self.s_p, self.s_s, self.s_m)

    def of(self, rel: Relation) -> float:
        """The weight of one relation."""
        return {Relation.PATENT: self.s_p, Relation.SUBCLASS: self.s_s, Relation.MAIN: self.s_m}.get(rel, 0.0)

    def relevance(self, same_patent: Any, same_subclass: Any, same_main: Any, dtype: Any = None) -> Any:
        """h from boolean "shares this level" arrays (numpy or torch, any equal shape): ``s_p`` where
        the patent is shared, else ``s_s`` where the subclass is, else ``s_m`` where the main class is,
        else 0, computed in ``dtype`` (a numpy or torch dtype; default float64 / torch's default).
        The one computation of Eq. 2 behind the loss, the metrics' graded gains and
        :func:`hmcl_weight_matrix`."""
        sub_only = same_subclass & ~same_patent
        main_only = same_main & ~same_subclass & ~same_patent

        def cast(mask: Any) -> Any:
            if dtype is None:
                return mask
            return mask.to(dtype) if hasattr(mask, "to") else mask.astype(dtype)

        return cast(same_patent) * self.s_p + cast(sub_only) * self.s_s + cast(main_only) * self.s_m


class Relation(StrEnum):
    """The closest hierarchy level two items share."""

    PATENT = "patent"
    SUBCLASS = "subclass"
    MAIN = "main"
    NONE = "none"


def _hierarchy_parse(scheme: str, code: Any) -> tuple[str, str]:
    s = str(scheme).lower()
    if s == "locarno":
        loc = parse_locarno(code)
        return loc.subclass, loc.main
    if s == "uspc":
        if isinstance(code, str) and re.fullmatch(r"\s*D\s*\d{1,2}\s*", code, flags=re.I):
            return "", uspc_class(code.strip().upper())  # a design class alone
        if (
            isinstance(code, str)
            and "/" not in code
            and re.fullmatch(r"\s*D\s*\d{1,2}-[\w.]+\s*", code, re.I)
        ):
            code = code.replace("-", "/", 1)  # "D6-369", the form of some data sets
        us = parse_uspc(code)
        return str(us), us.cls
    raise ValueError(f"unknown hierarchy scheme {scheme!r}; expected one of {', '.join(HIERARCHY_SCHEMES)}")


def hierarchy_keys(scheme: str, code: Any) -> tuple[str, str]:
    """``(subclass key, main-class key)`` of ``code`` under ``scheme``, qualified by the scheme:
    ``("locarno", "06-01")`` → ``("locarno:06-01", "locarno:06")``; ``("uspc", "D6/369")`` (also
    ``"D6-369"``) → ``("uspc:D6/369", "uspc:D6")``. A main class alone gives ``""`` as subclass; an
    empty or ``None`` code gives ``("", "")``. Unparsable codes raise ``ValueError``."""
    if code is None or (isinstance(code, str) and not code.strip()):
        return "", ""
    sub, main = _hierarchy_parse(scheme, code)
    s = str(scheme).lower()
    return (f"{s}:{sub}" if sub else ""), f"{s}:{main}"


def patent_hierarchy(codes: Mapping[str, Sequence[str]]) -> tuple[str, str]:
    """Qualified ``(subclass, main)`` keys of a patent from its ``codes`` (``Patent.codes``): its first
    Locarno code when it has one, else its first USPC code, else ``("", "")``. A patent is placed under
    one scheme only, so a Red Book patent (Locarno and USPC) relates to USPC-only patents only if the
    same patent."""
    for scheme in HIERARCHY_SCHEMES:
        for code in codes.get(scheme) or []:
            return hierarchy_keys(scheme, code)
    return "", ""


def patent_classes(codes: Mapping[str, Sequence[str]]) -> tuple[str, str]:
    """``patent_hierarchy`` without the scheme prefix, for display and per-class grouping:
    ``("06-01", "06")``, ``("D6/369", "D6")`` or ``("", "")``."""
    sub, main = patent_hierarchy(codes)
    return sub.split(":", 1)[-1], main.split(":", 1)[-1]


def main_of(subclass: str) -> str:
    """The main class of a subclass string: ``"06-01"`` → ``"06"``, ``"D6/369"`` → ``"D6"``,
    ``"uspc:D6/369"`` → ``"uspc:D6"``, ``"locarno:06-01"`` → ``"locarno:06"``; ``""`` stays ``""``."""
    if not subclass:
        return ""
    prefix, _, code = subclass.rpartition(":")
    main = code.split("/", 1)[0] if "/" in code else code.split("-", 1)[0]
    return f"{prefix}:{main}" if prefix else main


def _keys_or_empty(scheme: str, code: Any) -> tuple[str, str]:
    if isinstance(code, tuple) and len(code) == 2 and str(code[0]).lower() in HIERARCHY_SCHEMES:
        return hierarchy_keys(code[0], code[1])
    return hierarchy_keys(scheme, code)


def relation(pid_a: str, code_a: Any, pid_b: str, code_b: Any, scheme: str = "locarno") -> Relation:
    """The closest level shared by item a (patent ``pid_a``, code ``code_a``) and item b.

    Codes are read under ``scheme`` (Locarno by default); a ``(scheme, code)`` tuple names its own
    scheme, and codes of different schemes share nothing. A missing code (``""`` or ``None``) shares
    nothing; a main class alone shares only the main class."""
    if pid_a == pid_b:
        return Relation.PATENT
    sub_a, main_a = _keys_or_empty(scheme, code_a)
    sub_b, main_b = _keys_or_empty(scheme, code_b)
    if sub_a and sub_a == sub_b:
        return Relation.SUBCLASS
    if main_a and main_a == main_b:
        return Relation.MAIN
    return Relation.NONE


def hmcl_weight(
    pid_a: str,
    code_a: Any,
    pid_b: str,
    code_b: Any,
    weights: HMCLWeights | None = None,
    scheme: str = "locarno",
) -> float:
    """h_ij of HMCL Eq. 2 for one pair (see ``relation``)."""
    return HMCLWeights.coerce(weights).of(relation(pid_a, code_a, pid_b, code_b, scheme))


def factorize(keys: Sequence[str]) -> np.ndarray:
    """``[N]`` int64 ids of ``keys`` in order of first appearance; ``""`` (unknown) gets -1."""
    index: dict[str, int] = {}
    return np.asarray([index.setdefault(k, len(index)) if k else -1 for k in keys], dtype=np.int64)


def same_level(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """``[N] x [M] -> [N, M]`` bool: equal ids, both known (ids < 0 are unknown and match nothing)."""
    b = a if b is None else b
    return (a[:, None] == b[None, :]) & (a[:, None] >= 0) & (b[None, :] >= 0)


def hmcl_weight_matrix(
    patent_ids: Sequence[str],
    subclasses: Sequence[Any],
    weights: HMCLWeights | Sequence[float] | None = None,
    dtype: Any = np.float32,
    scheme: str = "locarno",
) -> np.ndarray:
    """The relevance matrix H with H[i, j] = h_ij (HMCL Eq. 2) for N items, shape ``[N, N]``.

    ``patent_ids[i]`` and ``subclasses[i]`` (a code under ``scheme``, a ``(scheme, code)`` tuple, or
    ``""``/``None`` when unknown) describe item i. The diagonal is included (= ``s_p``); the loss
    excludes self-pairs itself.
    """
    w = HMCLWeights.coerce(weights)
    if len(patent_ids) != len(subclasses):
        raise ValueError(f"{len(patent_ids)} patent ids but {len(subclasses)} subclasses")
    keys = [_keys_or_empty(scheme, c) for c in subclasses]
    pid = factorize([str(p) for p in patent_ids])
    sub = factorize([k[0] for k in keys])
    main = factorize([k[1] for k in keys])
    return w.relevance(same_level(pid), same_level(sub), same_level(main), np.float64).astype(dtype)


def _code_keys(codes: Any, scheme: str, level: str) -> set[str]:
    if str(scheme).lower() not in ("locarno", "ipc", "cpc"):
        raise ValueError(f"domain labels need scheme 'ipc', 'cpc' or 'locarno', got {scheme!r}")
    if isinstance(codes, str | Locarno | IPC) or codes is None:
        codes = [] if codes is None or codes == "" else [codes]
    keys = set()
    for code in codes:
        parsed = parse(scheme, code)
        key = parsed.key(level)
        if key:
            keys.add(key)
    return keys


def domain_label(codes_a: Any, codes_b: Any, level: str = "subclass", scheme: str = "ipc") -> int:
    """DSSDNet Eq. 4: 1 when the code sets of a and b overlap at ``level``, else 0.

    ``codes_a``/``codes_b`` are one code or an iterable of codes. IPC/CPC levels: ``"subclass"``
    (``"A47C"``), ``"class"`` (``"A47"``), ``"section"`` (``"A"``), ``"group"``; Locarno levels:
    ``"subclass"``, ``"main"``/``"class"``.
    """
    return int(bool(_code_keys(codes_a, scheme, level) & _code_keys(codes_b, scheme, level)))
