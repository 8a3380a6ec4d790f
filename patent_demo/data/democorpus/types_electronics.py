"""Electronics and time-keeping types: sound and picture equipment 14-01, data processing 14-02,
communications 14-03, clocks 10-01 and watches 10-02."""

from __future__ import annotations

import numpy as np

from patent_demo.data.democorpus.designs import Design, Feature, Params, register, size_word
from patent_demo.data.democorpus.geometry import (
    Mesh,
    arc_path,
    box,
    circle,
    cylinder,
    extrude,
    loft,
    revolve,
    rounded_rect,
    superellipse,
    sweep,
    torus,
    tube,
)


def _slab(w: float, h: float, t: float, r: float, screen: float | None) -> list[Mesh]:
    """A rounded slab in the ``xz`` plane (thickness along ``y``) with an optional glass screen inset."""
    body = extrude(rounded_rect(w, h, r, 4), t, 0.0).rotated("x", 90).moved(0, t / 2, 0)
    parts = [body]
    if screen is not None:
        scr = extrude(rounded_rect(w - 2 * screen, h - 2 * screen, max(r - screen, 0.0), 1), 0.002, 0.0)
        scr = scr.rotated("x", 90).moved(0, -t / 2 + 0.0005, 0)
        parts.append(scr.with_glass(range(len(scr.faces))))
    return parts


@register("phone", "14-03", "mobile phone", ("Mobile phone", "Smartphone", "Cellular phone", "Phone"))
def phone(p: Params) -> Design:
    w, h = p.u("width", 0.065, 0.08), p.u("height", 0.13, 0.165)
    t = p.u("thickness", 0.007, 0.011)
    r = p.u("corner", 0.004, 0.012)
    bezel = p.u("bezel", 0.002, 0.006)
    parts = _slab(w, h, t, r, bezel)
    cams = p.i("cameras", 1, 3)
    island = p.c("camera_island", ["square", "round", "strip"])
    for i in range(cams):
        parts.append(
            cylinder(0.005, 0.0015, 16)
            .rotated("x", -90)
            .moved(-w / 2 + 0.014, t / 2, h / 2 - 0.014 - i * 0.013)
        )
    if island == "square":
        parts.append(
            extrude(rounded_rect(0.03, 0.015 + cams * 0.013, 0.005, 3), 0.001)
            .rotated("x", -90)
            .moved(-w / 2 + 0.016, t / 2, h / 2 - 0.005 - cams * 0.0065)
        )
    for i in range(p.i("side_buttons", 1, 3)):
        parts.append(box(0.002, 0.003, 0.012, (w / 2 + 0.0005, 0, h * 0.2 - i * 0.018)))
    feats = [
        Feature("casing", 1, ("slim", "rounded" if r > 0.008 else "squared")),
        Feature("display", 1, ("full-face",), "with a thin bezel" if bezel < 0.004 else ""),
        Feature("rear camera", cams, (island,)),
        Feature("side button", 1, ()),
    ]
    return Design(parts, feats)


@register(
    "television", "14-03", "television", ("Television", "Television receiver", "TV set", "Display apparatus")
)
def television(p: Params) -> Design:
    w = p.u("width", 0.9, 1.4)
    aspect = p.u("aspect", 0.54, 0.6)
    t = p.u("thickness", 0.02, 0.06)
    stand = p.c("stand", ["pedestal", "feet", "wall"])
    h = w * aspect
    z0 = 0.08
    parts = [m.moved(0, 0, z0 + h / 2) for m in _slab(w, h, t, 0.004, p.u("bezel", 0.008, 0.03))]
    parts.append(box(w * 0.6, t * 1.5, h * 0.6, (0, t, z0 + h / 2)))
    if stand == "pedestal":
        parts += [
            box(0.08, 0.03, z0 + 0.05, (0, t, (z0 + 0.05) / 2)),
            box(w * 0.35, 0.22, 0.015, (0, 0.02, 0.0075), radius=0.02),
        ]
    elif stand == "feet":
        for sx in (-1, 1):
            parts.append(tube((sx * w * 0.4, -0.1, 0.0), (sx * w * 0.42, 0.0, z0 + 0.04), 0.008, 8))
            parts.append(tube((sx * w * 0.4, 0.12, 0.0), (sx * w * 0.42, 0.0, z0 + 0.04), 0.008, 8))
    else:
        parts.append(box(w * 0.3, 0.03, h * 0.3, (0, t + 0.03, z0 + h / 2)))
    feats = [
        Feature("screen", 1, ("flat", "widescreen")),
        Feature("bezel", 1, ("narrow",)),
        Feature("stand", 1, (stand,)),
    ]
    return Design(parts, feats)


@register(
    "monitor", "14-02", "monitor", ("Computer monitor", "Monitor", "Display monitor", "Computer display")
)
def monitor(p: Params) -> Design:
    w = p.u("width", 0.5, 0.7)
    h = w * p.u("aspect", 0.45, 0.62)
    neck = p.c("neck", ["column", "arm", "cranked"])
    base = p.c("base", ["oval", "rectangular", "v"])
    zc = p.u("stand_height", 0.12, 0.25) + h / 2
    parts = [m.moved(0, 0, zc) for m in _slab(w, h, 0.02, 0.006, 0.01)]
    parts.append(box(w * 0.4, 0.04, h * 0.4, (0, 0.03, zc)))
    if neck == "column":
        parts.append(box(0.05, 0.03, zc, (0, 0.1, zc / 2), radius=0.01))
        parts.append(box(0.05, 0.08, 0.03, (0, 0.07, zc)))
    elif neck == "arm":
        parts.append(tube((0, 0.12, 0.0), (0, 0.12, zc - 0.05), 0.015, 12))
        parts.append(tube((0, 0.12, zc - 0.05), (0, 0.04, zc), 0.015, 12))
    else:
        parts.append(sweep(np.array([[0, 0.16, 0.01], [0, 0.12, zc * 0.5], [0, 0.05, zc]]), 0.018, 12))
    if base == "oval":
        parts.append(extrude(circle(0.1, 32, rx=0.15), 0.015).moved(0, 0.1, 0))
    elif base == "rectangular":
        parts.append(box(0.25, 0.18, 0.015, (0, 0.1, 0.0075), radius=0.02))
    else:
        for a in (-30, 30):
            parts.append(box(0.04, 0.25, 0.015, (0, 0, 0.0075)).rotated("z", a).moved(0, 0.1, 0))
    feats = [
        Feature("display panel", 1, ("flat", "rectangular")),
        Feature("stand", 1, (neck,)),
        Feature("base", 1, (base if base != "v" else "V-shaped",)),
    ]
    return Design(parts, feats)


@register(
    "laptop",
    "14-02",
    "laptop computer",
    ("Laptop computer", "Notebook computer", "Laptop", "Portable computer"),
)
def laptop(p: Params) -> Design:
    w = p.u("width", 0.3, 0.38)
    d = p.u("depth", 0.2, 0.26)
    t = p.u("thickness", 0.008, 0.016)
    ang = p.u("open_angle", 95.0, 125.0)
    parts = [box(w, d, t, (0, 0, t / 2), radius=0.008)]
    parts.append(box(w * 0.85, d * 0.38, 0.002, (0, 0.02, t + 0.001)))
    parts.append(box(w * 0.3, d * 0.28, 0.001, (0, -d * 0.3, t + 0.0005)))
    lid = _slab(w, d, 0.006, 0.008, 0.012)
    for m in lid:
        parts.append(m.moved(0, 0, d / 2).rotated("x", 90 - ang).moved(0, d / 2, t))
    feats = [
        Feature("base", 1, (size_word(t, 0.008, 0.016, ["thin", "thick"]),)),
        Feature("keyboard", 1, ("recessed",)),
        Feature("touchpad", 1, ("central",)),
        Feature("display lid", 1, ("hinged", "open")),
    ]
    return Design(parts, feats)


@register(
    "keyboard",
    "14-02",
    "keyboard",
    ("Keyboard", "Computer keyboard", "Input device", "Keyboard for a computer"),
)
def keyboard(p: Params) -> Design:
    cols = p.i("columns", 10, 16)
    rows = p.i("rows", 4, 6)
    key = p.u("key_size", 0.016, 0.019)
    tilt = p.u("tilt", 0.0, 6.0)
    pad = p.u("padding", 0.008, 0.02)
    w, d = cols * key * 1.1 + 2 * pad, rows * key * 1.1 + 2 * pad
    parts = [box(w, d, 0.015, (0, 0, 0.0075), radius=0.006)]
    for r in range(rows):
        for c in range(cols):
            parts.append(
                box(
                    key * 0.9,
                    key * 0.9,
                    0.006,
                    (-w / 2 + pad + (c + 0.5) * key * 1.1, -d / 2 + pad + (r + 0.5) * key * 1.1, 0.018),
                )
            )
    feats = [
        Feature("key", rows * cols, ("square",), f"in {rows} rows"),
        Feature("housing", 1, ("flat", "low-profile" if tilt < 3 else "inclined")),
    ]
    return Design([m.rotated("x", -tilt) for m in parts], feats)


@register(
    "speaker", "14-01", "loudspeaker", ("Loudspeaker", "Speaker", "Speaker cabinet", "Portable speaker")
)
def speaker(p: Params) -> Design:
    form = p.c("form", ["cabinet", "cylinder"])
    drivers = p.i("drivers", 1, 3)
    if form == "cabinet":
        w, h, d = p.u("width", 0.15, 0.25), p.u("height", 0.25, 0.45), p.u("depth", 0.18, 0.3)
        parts = [box(w, d, h, (0, 0, h / 2), radius=p.u("corner", 0.0, 0.02))]
        for i in range(drivers):
            r = w * (0.35 if i == 0 else 0.18)
            z = h * (0.3 + 0.45 * i / max(drivers - 1, 1))
            parts.append(
                revolve([(r, 0.0), (r * 0.9, 0.01), (r * 0.3, 0.02), (0.0, 0.018)], 32)
                .rotated("x", 90)
                .moved(0, -d / 2, z)
            )
            parts.append(torus(r, 0.004, 32, 6).rotated("x", 90).moved(0, -d / 2, z))
    else:
        r, h = p.u("radius", 0.04, 0.07), p.u("height", 0.12, 0.25)
        parts = [
            revolve([(0.0, 0.0), (r * 0.95, 0.0), (r, 0.01), (r, h - 0.01), (r * 0.95, h), (0.0, h)], 32)
        ]
        for i in range(drivers):
            parts.append(torus(r, 0.003, 32, 6).moved(z=h * (i + 1) / (drivers + 1)))
    feats = [Feature("enclosure", 1, (form,)), Feature("driver", drivers, ("round",))]
    return Design(parts, feats)


@register("headphones", "14-01", "headphones", ("Headphones", "Headset", "Over-ear headphones", "Earphones"))
def headphones(p: Params) -> Design:
    span = p.u("span", 0.15, 0.19)
    cup_r = p.u("cup_radius", 0.04, 0.055)
    cup_shape = p.c("cup_shape", ["round", "oval"])
    band_t = p.u("band_thickness", 0.006, 0.012)
    parts = [sweep(arc_path(span / 2, 0, 180, 20, "xz") + [0, 0, span * 0.5], band_t, 10)]
    for sx in (-1, 1):
        contour = circle(cup_r, 32) if cup_shape == "round" else circle(cup_r, 32, rx=cup_r * 0.75)
        cup = loft([contour * 0.8, contour, contour * 0.95], [0.0, 0.02, 0.035]).rotated("y", -90 * sx)
        parts.append(cup.moved(sx * (span / 2 + 0.035), 0, span * 0.35))
        parts.append(
            tube(
                (sx * span / 2, 0, span * 0.5),
                (sx * (span / 2 + 0.01), 0, span * 0.35 + cup_r * 0.8),
                band_t * 0.6,
                8,
            )
        )
    feats = [
        Feature("headband", 1, ("arched", size_word(band_t, 0.006, 0.012, ["slim", "wide"]))),
        Feature("ear cup", 2, (cup_shape, "cushioned")),
    ]
    return Design(parts, feats)


@register("wristwatch", "10-02", "watch", ("Wristwatch", "Watch", "Smartwatch", "Watch case"))
def wristwatch(p: Params) -> Design:
    case = p.c("case", ["round", "square"])
    r = p.u("case_radius", 0.018, 0.024)
    t = p.u("case_thickness", 0.008, 0.014)
    strap_w = p.u("strap_width", 0.016, 0.024)
    if case == "round":
        parts = [
            revolve([(0.0, 0.0), (r * 0.9, 0.0), (r, t * 0.4), (r * 0.95, t), (0.0, t)], 36),
            torus(r * 0.92, 0.0015, 36, 6).moved(z=t),
        ]
    else:
        parts = [
            loft([superellipse(2 * r * s, 2.3 * r * s, 5, 32) for s in (0.9, 1.0, 0.95)], [0.0, t * 0.5, t])
        ]
    parts.append(cylinder(0.0025, 0.004, 12).rotated("y", 90).moved(r, 0, t / 2))
    for sy in (-1, 1):
        strap = np.array([[0, sy * (r + i * 0.01), -0.004 - 0.0015 * i * i] for i in range(6)])
        parts.append(sweep(strap, 1.0, profile=rounded_rect(strap_w, 0.003, 0.0, 1), caps=True))
    feats = [
        Feature("case", 1, (case, size_word(t, 0.008, 0.014, ["thin", "thick"]))),
        Feature("crown", 1, ("side",)),
        Feature("strap", 2, (size_word(strap_w, 0.016, 0.024, ["narrow", "wide"]),)),
    ]
    return Design(parts, feats)


@register("wall_clock", "10-01", "clock", ("Clock", "Wall clock", "Analog clock", "Clock face"))
def wall_clock(p: Params) -> Design:
    r = p.u("radius", 0.12, 0.2)
    depth = p.u("depth", 0.03, 0.06)
    frame = p.c("frame", ["round", "square", "octagon"])
    k = {"round": 48, "square": 4, "octagon": 8}[frame]
    contour = circle(r, k) if frame != "square" else rounded_rect(2 * r, 2 * r, r * 0.1, 4)
    body = extrude(contour, depth).rotated("x", 90).moved(0, depth, 0)
    parts = [body]
    face = extrude(circle(r * 0.85, 48), 0.002).rotated("x", 90).moved(0, 0.0005, 0)
    parts.append(face.with_glass([len(face.faces) - 2, len(face.faces) - 1]))
    marks = p.i("hour_marks", 0, 12)
    for i in range(marks):
        a = 360 * i / max(marks, 1)
        parts.append(box(0.004, 0.003, r * 0.1, (0, -0.002, r * 0.72)).rotated("y", a))
    parts.append(box(0.006, 0.003, r * 0.5, (0, -0.004, r * 0.22)).rotated("y", p.u("hand_angle", 0, 360)))
    parts.append(box(0.005, 0.003, r * 0.35, (0, -0.005, r * 0.15)).rotated("y", 120))
    feats = [
        Feature("frame", 1, (frame,)),
        Feature("dial", 1, ("round",), f"with {marks} hour marks" if marks else "plain"),
        Feature("hand", 2, ()),
    ]
    return Design(parts, feats)
