"""Titles, USPTO-style figure descriptions and descriptions written from a design's parts.

The description names the design's actual features (``designs.Feature``) in a shuffled order with
synonyms drawn per patent, so two patents of one type share meaning more than wording and lexical
overlap alone ranks them imperfectly.
"""

from __future__ import annotations

import numpy as np

from patent_demo.data.democorpus.designs import Design, DesignType, Feature

VIEW_PHRASES = {
    "perspective": ("front perspective view", "perspective view", "front, right and top perspective view"),
    "rear_perspective": (
        "rear perspective view",
        "back perspective view",
        "rear, left and top perspective view",
    ),
    "front": ("front view", "front elevation view", "front elevational view"),
    "rear": ("rear view", "back view", "rear elevation view"),
    "left": ("left side view", "left view", "left side elevation view"),
    "right": ("right side view", "right view", "right side elevation view"),
    "top": ("top view", "top plan view", "plan view"),
    "bottom": ("bottom view", "bottom plan view", "underside view"),
}

_SYNONYMS = {
    "leg": ("leg", "support leg", "foot post"),
    "backrest": ("backrest", "back", "seat back"),
    "seat": ("seat", "seat panel", "sitting surface"),
    "top": ("top", "tabletop", "top panel"),
    "body": ("body", "main body", "housing"),
    "handle": ("handle", "grip", "handgrip"),
    "base": ("base", "foot", "stand base"),
    "stem": ("stem", "column", "upright"),
    "shade": ("shade", "lampshade", "diffuser"),
    "lid": ("lid", "cover", "closure"),
    "cap": ("cap", "closure", "top cap"),
    "wheel": ("wheel", "roller", "running wheel"),
    "drawer": ("drawer", "drawer front", "pull-out drawer"),
    "shelf": ("shelf", "shelf board", "tier"),
    "spoke": ("spoke", "arm", "radial spoke"),
    "display": ("display", "screen", "display panel"),
    "casing": ("casing", "housing", "enclosure"),
    "sole": ("sole", "outsole", "sole unit"),
    "upper": ("upper", "shoe upper", "vamp"),
    "rim": ("rim", "edge", "lip"),
    "housing": ("housing", "shell", "casing"),
    "key": ("key", "keycap", "button"),
    "stand": ("stand", "support", "pedestal"),
    "head": ("head", "head portion", "working head"),
}

_ADJ_SYNONYMS = {
    "round": ("round", "circular"),
    "rectangular": ("rectangular", "oblong"),
    "square": ("square", "squared"),
    "tapered": ("tapered", "tapering"),
    "tall": ("tall", "high"),
    "long": ("long", "elongated"),
    "short": ("short", "compact"),
    "flat": ("flat", "planar"),
    "rounded": ("rounded", "softly rounded"),
    "cylindrical": ("cylindrical", "tubular"),
    "curved": ("curved", "arcuate"),
    "wide": ("wide", "broad"),
    "narrow": ("narrow", "slim"),
}

_NUMBERS = (
    "no",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)

_OPENERS = (
    "The {noun} has {items}.",
    "The {noun} comprises {items}.",
    "Shown is a {noun} with {items}.",
    "An ornamental {noun} including {items}.",
    "The design is a {noun} having {items}.",
)
_LINKERS = (
    "The {part} is {adjs}.",
    "Its {part} is {adjs}.",
    "A {adjs} {part} is provided.",
    "The {part} appears {adjs}.",
)


def _pick(rng: np.random.Generator, options: tuple[str, ...] | list[str]) -> str:
    return options[int(rng.integers(len(options)))]


def _count(n: int) -> str:
    return _NUMBERS[n] if 0 <= n < len(_NUMBERS) else str(n)


def _plural(word: str, n: int) -> str:
    if n == 1:
        return word
    last = word.split()[-1]
    if last.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    if last.endswith("y") and last[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    if last == "shelf":
        return word[:-1] + "ves"
    return word + "s"


def _article(words: str) -> str:
    return ("an " if words[:1].lower() in "aeiou" else "a ") + words


def title(dtype: DesignType, rng: np.random.Generator) -> str:
    """One of the type's title variants."""
    return _pick(rng, dtype.titles)


def _feature_phrase(f: Feature, rng: np.random.Generator) -> str:
    part = _pick(rng, _SYNONYMS.get(f.part, (f.part,)))
    adjs = [_pick(rng, _ADJ_SYNONYMS.get(a, (a,))) for a in f.adjs]
    if len(adjs) > 1 and rng.random() < 0.5:
        adjs = adjs[::-1]
    noun = " ".join([*adjs, _plural(part, f.count)])
    head = _article(noun) if f.count == 1 else f"{_count(f.count)} {noun}"
    return f"{head} {f.detail}".strip()


def description(dtype: DesignType, design: Design, rng: np.random.Generator, noun: str) -> str:
    """A description of the design written from its features, in shuffled order with varied wording."""
    feats = list(design.features)
    order = rng.permutation(len(feats))
    feats = [feats[i] for i in order]
    k = max(1, min(len(feats), int(rng.integers(2, 4))))
    listed = [_feature_phrase(f, rng) for f in feats[:k]]
    items = listed[0] if len(listed) == 1 else ", ".join(listed[:-1]) + " and " + listed[-1]
    sentences = [_pick(rng, _OPENERS).format(noun=noun, items=items)]
    for f in feats[k:]:
        part = _pick(rng, _SYNONYMS.get(f.part, (f.part,)))
        adjs = " and ".join(_pick(rng, _ADJ_SYNONYMS.get(a, (a,))) for a in f.adjs)
        if f.count > 1:
            sentences.append(
                f"There are {_count(f.count)} {_plural(part, f.count)}{' ' + f.detail if f.detail else ''}{', each ' + adjs if adjs else ''}."
            )
        elif adjs:
            s = _pick(rng, _LINKERS).format(part=part, adjs=adjs)
            sentences.append(s[0].upper() + s[1:] + (f" It is shown {f.detail}." if f.detail else ""))
        else:
            sentences.append(f"The {noun} also has {_article(part)}{' ' + f.detail if f.detail else ''}.")
    if design.env:
        sentences.append(
            f"The {design.env} shown in broken lines is environment and forms no part of the claimed design."
        )
    return " ".join(sentences)


def figure_descriptions(views: list[str], noun: str, rng: np.random.Generator, env: str = "") -> list[str]:
    """USPTO-style lines: "FIG. 1 is a front perspective view of a chair showing our new design;"."""
    first_tail = _pick(
        rng, ("showing our new design", "showing the new design", "according to the present design", "")
    )
    thereof = _pick(rng, ("thereof", f"of the {noun} of FIG. 1", "thereof"))
    lines = []
    for i, v in enumerate(views):
        phrase = _pick(rng, VIEW_PHRASES[v])
        if i == 0:
            text = f"FIG. 1 is {_article(phrase)} of {_article(noun)}{' ' + first_tail if first_tail else ''}"
        else:
            text = f"FIG. {i + 1} is {_article(phrase)} {thereof}"
        end = ";" if i < len(views) - 2 else ("; and," if i == len(views) - 2 else ".")
        lines.append(text + end)
    if env:
        lines[-1] += f" The broken lines show the {env}, which forms no part of the claimed design."
    return lines


def claim(noun: str) -> str:
    """The single design claim."""
    return f"The ornamental design for {_article(noun)}, as shown and described."
