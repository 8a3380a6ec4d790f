"""Household and personal types: tableware 07-01, cookware 07-02, bottles 09-01, boxes 09-03,
footwear 02-04, headwear 02-03, luggage 03-01, taps 23-01."""

from __future__ import annotations

import numpy as np

from patent_demo.data.democorpus.designs import Design, Feature, Params, register, size_word
from patent_demo.data.democorpus.geometry import (
    arc_path,
    box,
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


def _vessel(
    r_foot: float,
    r_belly: float,
    r_rim: float,
    h: float,
    wall: float,
    belly_at: float = 0.5,
    foot_h: float = 0.0,
) -> list:
    """A thin-walled open vessel about ``z``: outer profile up to the rim, inner profile back down."""
    outer = [(0.0, 0.0), (r_foot, 0.0), (r_foot, foot_h), (r_belly, h * belly_at), (r_rim, h)]
    inner = [
        (r_rim - wall, h),
        (r_belly - wall, h * belly_at),
        (max(r_foot - wall, 0.01), foot_h + wall),
        (0.0, foot_h + wall),
    ]
    prof = [q for i, q in enumerate(outer) if i == 0 or q != outer[i - 1]]
    return prof + inner


def _handle(x: float, z0: float, z1: float, reach: float, r: float, shape: str) -> object:
    """A loop handle on the ``+x`` side from height ``z0`` to ``z1``."""
    zc, half = (z0 + z1) / 2, (z1 - z0) / 2
    if shape == "ear":
        path = arc_path(1.0, -90, 90, 14) * [reach, 1, half] + [x, 0, zc]
    else:
        pts = np.array(
            [
                [x, 0, z1],
                [x + reach * 0.8, 0, z1],
                [x + reach, 0, z1 - half * 0.3],
                [x + reach, 0, z0 + half * 0.3],
                [x + reach * 0.8, 0, z0],
                [x, 0, z0],
            ]
        )
        path = pts
    return sweep(path, r, 10)


@register("mug", "07-01", "mug", ("Mug", "Cup", "Coffee mug", "Drinking cup", "Cup with handle"))
def mug(p: Params) -> Design:
    r = p.u("radius", 0.035, 0.05)
    h = p.u("height", 0.07, 0.12)
    taper = p.u("taper", -0.15, 0.25)
    belly = p.u("belly", 0.0, 0.15)
    prof = _vessel(r * (1 - taper), r * (1 + belly), r, h, 0.004, 0.5, 0.004)
    handle = p.c("handle", ["ear", "square"])
    reach = p.u("handle_reach", 0.02, 0.035)
    parts = [
        revolve(prof, 36, caps=False),
        _handle(r * (1 + belly / 2) - 0.002, h * 0.2, h * 0.85, reach, 0.0045, handle),
    ]
    feats = [
        Feature(
            "body",
            1,
            (
                "cylindrical" if abs(taper) < 0.07 else ("tapered" if taper > 0 else "flared"),
                size_word(h / r, 1.4, 3.4, ["squat", "tall"]),
            ),
        ),
        Feature("handle", 1, ("ear-shaped" if handle == "ear" else "angular", "loop")),
        Feature("rim", 1, ("plain",)),
    ]
    if belly > 0.08:
        feats.append(Feature("belly", 1, ("bulging",)))
    return Design(parts, feats)


@register("bowl", "07-01", "bowl", ("Bowl", "Serving bowl", "Salad bowl", "Dish"))
def bowl(p: Params) -> Design:
    r = p.u("radius", 0.06, 0.14)
    h = p.u("height", 0.04, 0.09)
    foot = p.u("foot_ratio", 0.3, 0.55)
    curve = p.u("curvature", 0.6, 0.95)
    foot_h = p.u("foot_height", 0.0, 0.012)
    parts = [revolve(_vessel(r * foot, r * curve, r, h, 0.004, 0.45, foot_h), 40, caps=False)]
    feats = [
        Feature("bowl body", 1, (size_word(h / r, 0.3, 1.5, ["shallow", "deep"]), "rounded")),
        Feature("foot ring" if foot_h > 0.005 else "base", 1, ("circular",)),
    ]
    if p.b("rim_lip", 0.4):
        parts.append(torus(r, 0.004, 40, 8).moved(z=h))
        feats.append(Feature("rim", 1, ("rolled",)))
    return Design(parts, feats)


@register("wine_glass", "07-01", "drinking glass", ("Wine glass", "Drinking glass", "Stemware", "Goblet"))
def wine_glass(p: Params) -> Design:
    foot_r = p.u("foot_radius", 0.03, 0.045)
    stem_h = p.u("stem_height", 0.04, 0.11)
    bowl_r = p.u("bowl_radius", 0.03, 0.05)
    bowl_h = p.u("bowl_height", 0.06, 0.1)
    rim = p.u("rim_ratio", 0.6, 1.05)
    knop = p.b("knop", 0.35)
    stem = [(foot_r, 0.0), (foot_r, 0.003), (0.004, 0.01), (0.004, stem_h * 0.5)]
    if knop:
        stem += [(0.009, stem_h * 0.55), (0.004, stem_h * 0.65)]
    stem += [
        (0.004, stem_h),
        (bowl_r * 0.8, stem_h + bowl_h * 0.25),
        (bowl_r, stem_h + bowl_h * 0.55),
        (bowl_r * rim, stem_h + bowl_h),
    ]
    inner = [
        (bowl_r * rim - 0.002, stem_h + bowl_h),
        (bowl_r - 0.002, stem_h + bowl_h * 0.55),
        (0.0, stem_h + 0.004),
    ]
    parts = [revolve([(0.0, 0.0)] + stem + inner, 36, caps=False)]
    feats = [
        Feature("foot", 1, ("round", "flat")),
        Feature(
            "stem", 1, (size_word(stem_h, 0.04, 0.11, ["short", "long"]),), "with a knop" if knop else ""
        ),
        Feature("bowl", 1, ("tulip-shaped" if rim < 0.85 else "open",)),
    ]
    return Design(parts, feats)


@register("plate", "07-01", "plate", ("Plate", "Dinner plate", "Serving plate", "Dish"))
def plate(p: Params) -> Design:
    r = p.u("radius", 0.09, 0.15)
    well = p.u("well_ratio", 0.55, 0.75)
    depth = p.u("depth", 0.008, 0.025)
    shape = p.c("outline", ["round", "square"])
    if shape == "round":
        parts = [revolve(_vessel(r * well * 0.8, r * well, r, depth, 0.003, 0.3, 0.002), 48, caps=False)]
    else:
        outline = [superellipse(2 * r * s, 2 * r * s, 5, 32) for s in (well * 0.8, well, 1.0, 1.0)]
        parts = [loft(outline, [0, depth * 0.3, depth, depth + 0.004])]
    feats = [
        Feature("plate body", 1, (shape, size_word(depth, 0.008, 0.025, ["flat", "deep"]))),
        Feature("rim", 1, ("wide" if well < 0.65 else "narrow",)),
        Feature("well", 1, ("central",)),
    ]
    return Design(parts, feats)


@register("teapot", "07-01", "teapot", ("Teapot", "Tea pot", "Coffee pot", "Pot with lid"))
def teapot(p: Params) -> Design:
    r = p.u("radius", 0.06, 0.09)
    h = p.u("height", 0.08, 0.14)
    body = [(0.0, 0.0), (r * 0.7, 0.0), (r, h * 0.4), (r * 0.8, h * 0.85), (r * 0.5, h), (0.0, h)]
    parts = [revolve(body, 32)]
    knob = p.c("knob", ["ball", "cone"])
    parts.append(revolve([(r * 0.5, h), (r * 0.45, h + 0.008), (0.0, h + 0.015)], 32))
    parts.append(
        revolve(
            [
                (0.0, h + 0.012),
                (0.008, h + 0.015),
                (0.012, h + 0.03),
                (0.0, h + (0.04 if knob == "cone" else 0.032)),
            ],
            12,
        )
    )
    spout_len = p.u("spout_length", 0.05, 0.09)
    t = np.linspace(0, 1, 10)
    spout = np.stack([-(r * 0.85 + spout_len * t), np.zeros_like(t), h * 0.3 + (h * 0.6) * t**1.5], 1)
    parts.append(sweep(spout, np.linspace(0.012, 0.006, 10), 10))
    parts.append(
        _handle(
            r * 0.85,
            h * 0.25,
            h * 0.8,
            p.u("handle_reach", 0.03, 0.05),
            0.006,
            p.c("handle", ["ear", "square"]),
        )
    )
    feats = [
        Feature("body", 1, ("globular", size_word(h / r, 1.0, 2.0, ["squat", "tall"]))),
        Feature("spout", 1, ("curved", size_word(spout_len, 0.05, 0.09, ["short", "long"]))),
        Feature("lid", 1, ("domed",), f"with a {knob} knob"),
        Feature("handle", 1, ("loop",)),
    ]
    return Design(parts, feats)


@register("saucepan", "07-02", "saucepan", ("Saucepan", "Cooking pot", "Pan", "Pot"))
def saucepan(p: Params) -> Design:
    r = p.u("radius", 0.08, 0.12)
    h = p.u("height", 0.06, 0.14)
    lid = p.b("lid", 0.6)
    handle = p.c("handle", ["long", "two ears"])
    parts = [revolve(_vessel(r, r, r, h, 0.003, 0.5, 0.0), 36, caps=False), torus(r, 0.004, 36, 6).moved(z=h)]
    feats = [Feature("pot body", 1, ("cylindrical", size_word(h / r, 0.6, 1.4, ["shallow", "deep"])))]
    if handle == "long":
        ln = p.u("handle_length", 0.14, 0.22)
        parts.append(
            sweep(
                np.array([[r - 0.005, 0, h * 0.8], [r + ln * 0.5, 0, h * 0.9], [r + ln, 0, h * 1.0]]),
                [0.008, 0.01, 0.012],
                10,
            )
        )
        feats.append(Feature("handle", 1, ("long", "straight")))
    else:
        ear = _handle(r, h * 0.7, h * 0.9, 0.02, 0.005, "square")
        parts += [ear, ear.scaled(-1, 1, 1)]
        feats.append(Feature("side handle", 2, ("loop",)))
    if lid:
        parts.append(revolve([(r + 0.004, h + 0.002), (r * 0.6, h + 0.02), (0.0, h + 0.025)], 36))
        parts.append(revolve([(0.0, h + 0.024), (0.012, h + 0.026), (0.012, h + 0.04), (0.0, h + 0.04)], 12))
        feats.append(Feature("lid", 1, ("domed",), "with a knob"))
    return Design(parts, feats)


@register("bottle", "09-01", "bottle", ("Bottle", "Beverage bottle", "Water bottle", "Container"))
def bottle(p: Params) -> Design:
    r = p.u("radius", 0.03, 0.045)
    h = p.u("height", 0.18, 0.3)
    neck_r = p.u("neck_radius", 0.01, 0.016)
    shoulder = p.u("shoulder", 0.55, 0.8)
    style = p.c("shoulder_style", ["round", "conical", "stepped"])
    waist = p.b("waist", 0.4)
    prof = [(0.0, 0.0), (r * 0.92, 0.0), (r, 0.008)]
    if waist:
        prof += [(r, h * 0.25), (r * 0.85, h * 0.35), (r, h * 0.45)]
    prof += [(r, h * shoulder)]
    neck_z = h * 0.88
    if style == "round":
        prof += [
            (r * 0.9, h * shoulder + (neck_z - h * shoulder) * 0.35),
            (r * 0.6, h * shoulder + (neck_z - h * shoulder) * 0.7),
        ]
    elif style == "stepped":
        prof += [(r * 0.7, h * shoulder + 0.005), (r * 0.7, (h * shoulder + neck_z) / 2)]
    prof += [(neck_r, neck_z), (neck_r, h), (0.0, h)]
    parts = [revolve(prof, 32)]
    cap = p.c("cap", ["screw", "sport", "none"])
    if cap == "screw":
        parts.append(cylinder(neck_r * 1.25, h * 0.07, 24, h - h * 0.05))
    elif cap == "sport":
        parts.append(
            revolve(
                [
                    (neck_r * 1.3, h - 0.01),
                    (neck_r * 1.3, h + 0.01),
                    (neck_r * 0.6, h + 0.02),
                    (neck_r * 0.6, h + 0.035),
                    (0, h + 0.035),
                ],
                24,
            )
        )
    feats = [
        Feature(
            "body",
            1,
            ("cylindrical", size_word(h / r, 4, 10, ["stout", "slender"])),
            "with a waist grip" if waist else "",
        ),
        Feature("shoulder", 1, (style,)),
        Feature("neck", 1, ("narrow",)),
    ]
    if cap != "none":
        feats.append(Feature("cap", 1, (cap,)))
    return Design(parts, feats)


@register("flask", "09-01", "flask", ("Flask", "Hip flask", "Canteen", "Flat bottle"))
def flask(p: Params) -> Design:
    w = p.u("width", 0.08, 0.14)
    t = p.u("thickness", 0.025, 0.05)
    h = p.u("height", 0.1, 0.18)
    n = p.u("squareness", 2.2, 5.0)
    curve = p.u("curve", 0.0, 0.02)
    zs = np.linspace(0, h, 6)
    contours = [
        superellipse(w * (0.85 + 0.15 * np.sin(np.pi * z / h)), t + curve * np.sin(np.pi * z / h), n, 32)
        for z in zs
    ]
    parts = [loft(contours, zs)]
    parts.append(cylinder(0.009, 0.015, 16, h))
    parts.append(cylinder(0.012, 0.015, 16, h + 0.015))
    feats = [
        Feature("body", 1, ("flat", "rounded" if n < 3 else "squared")),
        Feature("neck", 1, ("short",)),
        Feature("cap", 1, ("screw",)),
    ]
    return Design(parts, feats)


@register(
    "storage_box", "09-03", "container", ("Storage box", "Container", "Box with lid", "Storage container")
)
def storage_box(p: Params) -> Design:
    w, d, h = p.u("width", 0.2, 0.5), p.u("depth", 0.15, 0.35), p.u("height", 0.1, 0.3)
    r = p.u("corner", 0.005, 0.04)
    taper = p.u("taper", 0.0, 0.08)
    lid_h = p.u("lid_height", 0.015, 0.04)
    parts = [loft([rounded_rect(w * (1 - taper), d * (1 - taper), r, 4), rounded_rect(w, d, r, 4)], [0, h])]
    parts.append(extrude(rounded_rect(w + 0.01, d + 0.01, r + 0.005, 4), lid_h, h))
    feats = [
        Feature("tub", 1, ("tapered" if taper > 0.03 else "straight-sided", "rectangular")),
        Feature("lid", 1, ("flat", "overhanging")),
    ]
    if p.b("clips", 0.5):
        for sx in (-1, 1):
            parts.append(box(0.01, d * 0.3, 0.04, (sx * (w / 2 + 0.008), 0, h - 0.01)))
        feats.append(Feature("clip", 2, ("side",)))
    return Design(parts, feats)


@register("shoe", "02-04", "shoe", ("Shoe", "Sneaker", "Athletic shoe", "Footwear", "Shoe upper"))
def shoe(p: Params) -> Design:
    ln = p.u("length", 0.26, 0.3)
    w = p.u("width", 0.08, 0.11)
    sole_h = p.u("sole_height", 0.015, 0.045)
    collar = p.u("collar_height", 0.06, 0.1)
    toe = p.u("toe_spring", 0.0, 0.02)
    outline = superellipse(ln, w, 2.6, 32) * [1, 1] + [0, 0]
    outline[:, 1] *= 1 + 0.15 * np.cos(np.linspace(0, 2 * np.pi, 32, endpoint=False))
    parts = [loft([outline * 0.98, outline, outline], [0, sole_h * 0.3, sole_h])]
    zs = np.linspace(sole_h, sole_h + collar, 5)
    ups = []
    for i, _z in enumerate(zs):
        f = i / (len(zs) - 1)
        c = outline * [1 - 0.55 * f, 1 - 0.25 * f] + [ln * 0.2 * f, 0]
        ups.append(c)
    parts.append(loft(ups, zs))
    feats = [
        Feature("sole", 1, (size_word(sole_h, 0.015, 0.045, ["thin", "thick"]), "flat")),
        Feature("upper", 1, ("low-cut" if collar < 0.08 else "mid-cut",)),
        Feature("toe cap", 1, ("rounded",)),
    ]
    if p.b("laces", 0.6):
        for i in range(4):
            x = -ln * 0.05 + i * ln * 0.06
            parts.append(
                box(0.012, w * 0.35, 0.006, (x, 0, sole_h + collar * (0.55 + 0.12 * i))).rotated("y", -20)
            )
        feats.append(Feature("lacing", 1, ("crossed",), "with four lace bars"))
    if p.b("heel_tab", 0.5):
        parts.append(box(0.01, 0.03, collar * 0.5, (ln * 0.44, 0, sole_h + collar * 0.9)))
        feats.append(Feature("heel tab", 1, ("raised",)))
    parts = [m.transformed(np.diag([1.0, 1.0, 1.0])) for m in parts]
    if toe > 0.01:
        feats.append(Feature("toe spring", 1, ("upturned",)))
        for m in parts:
            m.vertices[:, 2] += toe * np.clip((-m.vertices[:, 0] - ln * 0.3) / (ln * 0.2), 0, 1)
    return Design([m.rotated("z", 90) for m in parts], feats)


@register("boot", "02-04", "boot", ("Boot", "Ankle boot", "Work boot", "Footwear"))
def boot(p: Params) -> Design:
    ln = p.u("length", 0.27, 0.31)
    w = p.u("width", 0.09, 0.11)
    shaft = p.u("shaft_height", 0.12, 0.3)
    heel = p.u("heel_height", 0.02, 0.06)
    outline = superellipse(ln, w, 2.6, 32)
    parts = [loft([outline, outline], [0, 0.02])]
    parts.append(box(0.07, w * 0.9, heel, (ln * 0.38, 0, heel / 2)))
    zs = np.linspace(0.02, 0.02 + shaft, 6)
    ups = []
    for i, _z in enumerate(zs):
        f = min(1.0, i / 2)
        ups.append(outline * [1 - 0.62 * f, 1 - 0.15 * f] + [ln * 0.28 * f, 0])
    parts.append(loft(ups, zs + np.array([0, 0, heel, heel, heel, heel])))
    feats = [
        Feature("shaft", 1, (size_word(shaft, 0.12, 0.3, ["ankle-high", "mid-calf", "knee-high"]),)),
        Feature("heel", 1, (size_word(heel, 0.02, 0.06, ["low", "raised"]), "block")),
        Feature("sole", 1, ("lug",)),
    ]
    if p.b("pull_loop", 0.5):
        parts.append(
            sweep(arc_path(0.02, 0, 180, 8, "xz") + [ln * 0.28 + ln * 0.19, 0, shaft + heel + 0.01], 0.003, 6)
        )
        feats.append(Feature("pull loop", 1, ("rear",)))
    return Design([m.rotated("z", 90) for m in parts], feats)


@register("hat", "02-03", "hat", ("Hat", "Sun hat", "Brimmed hat", "Headwear"))
def hat(p: Params) -> Design:
    crown_r = p.u("crown_radius", 0.08, 0.1)
    crown_h = p.u("crown_height", 0.06, 0.14)
    brim = p.u("brim_width", 0.02, 0.09)
    droop = p.u("brim_droop", -0.01, 0.025)
    crown = p.c("crown", ["flat", "dome", "pinched"])
    top = (
        [(crown_r * 0.95, crown_h), (0.0, crown_h)]
        if crown == "flat"
        else [
            (crown_r * 0.8, crown_h * 0.95),
            (crown_r * 0.4, crown_h * (1.05 if crown == "dome" else 0.9)),
            (0.0, crown_h * (1.08 if crown == "dome" else 0.95)),
        ]
    )
    prof = [
        (crown_r + brim, -droop),
        (crown_r + brim * 0.5, -droop * 0.4),
        (crown_r, 0.0),
        (crown_r, crown_h * 0.8),
    ] + top
    parts = [revolve(prof, 40, caps=False), torus(crown_r, 0.005, 40, 6).moved(z=0.012)]
    feats = [
        Feature("crown", 1, (crown, size_word(crown_h, 0.06, 0.14, ["low", "high"]))),
        Feature(
            "brim",
            1,
            (
                size_word(brim, 0.02, 0.09, ["narrow", "medium", "wide"]),
                "downturned" if droop > 0.008 else "flat",
            ),
        ),
        Feature("hat band", 1, ()),
    ]
    return Design(parts, feats)


@register("suitcase", "03-01", "suitcase", ("Suitcase", "Luggage case", "Trolley case", "Travel case"))
def suitcase(p: Params) -> Design:
    w, d, h = p.u("width", 0.35, 0.5), p.u("depth", 0.2, 0.3), p.u("height", 0.5, 0.75)
    r = p.u("corner", 0.02, 0.06)
    ribs = p.i("ribs", 0, 4)
    body = extrude(rounded_rect(w, d, r, 5), h, 0.05)
    parts = [body]
    for i in range(ribs):
        x = -w / 2 + (i + 1) * w / (ribs + 1)
        parts.append(box(0.015, d + 0.006, h - 0.06, (x, 0, 0.05 + h / 2)))
    parts.append(box(w + 0.004, d * 0.04, h, (0, 0, 0.05 + h / 2)))
    for sx in (-1, 1):
        for sy in (-1, 1):
            parts.append(
                cylinder(0.025, 0.012, 16)
                .rotated("y", 90)
                .moved(sx * (w / 2 - 0.05), sy * (d / 2 - 0.04), 0.025)
            )
    parts.append(box(w * 0.35, 0.03, 0.03, (0, 0, 0.05 + h + 0.03)))
    feats = [
        Feature(
            "shell",
            1,
            ("hard", "rounded" if r > 0.04 else "rectangular"),
            f"with {ribs} raised ribs" if ribs else "",
        ),
        Feature("wheel", 4, ("spinner",)),
        Feature("top handle", 1, ()),
    ]
    if p.b("telescopic", 0.6):
        for sx in (-1, 1):
            parts.append(box(0.02, 0.02, 0.3, (sx * w * 0.2, d / 2 - 0.02, 0.05 + h + 0.15)))
        parts.append(box(w * 0.45, 0.03, 0.03, (0, d / 2 - 0.02, 0.05 + h + 0.3)))
        feats.append(Feature("telescopic handle", 1, ("extended",)))
    return Design(parts, feats)


@register("faucet", "23-01", "faucet", ("Faucet", "Tap", "Mixer tap", "Kitchen faucet"))
def faucet(p: Params) -> Design:
    h = p.u("height", 0.15, 0.35)
    reach = p.u("reach", 0.12, 0.22)
    r = p.u("pipe_radius", 0.01, 0.018)
    form = p.c("spout", ["gooseneck", "angular", "straight"])
    parts = [cylinder(r * 2.4, 0.02, 32), cylinder(r * 1.3, h * 0.4, 24, 0.02)]
    if form == "gooseneck":
        t = np.linspace(0, np.pi, 16)
        path = np.stack(
            [-reach / 2 * (1 - np.cos(t)), np.zeros_like(t), h * 0.4 + (h * 0.6) * np.sin(t) + 0.02], 1
        )
        path[-1, 2] = max(path[-1, 2], h * 0.3)
        parts.append(sweep(path, r, 12))
    elif form == "angular":
        path = np.array(
            [[0, 0, h * 0.4], [0, 0, h * 0.95], [-reach * 0.1, 0, h], [-reach, 0, h], [-reach, 0, h * 0.85]]
        )
        parts.append(sweep(path, r, 12))
    else:
        parts.append(tube((0, 0, h * 0.4), (0, 0, h * 0.75), r * 1.1, 12))
        parts.append(tube((0, 0, h * 0.7), (-reach, 0, h * 0.6), r, 12))
    lever = p.c("lever", ["side", "top", "cross"])
    if lever == "side":
        parts.append(tube((r * 1.3, 0, h * 0.3), (r * 1.3 + 0.06, 0, h * 0.36), r * 0.5, 10))
    elif lever == "top":
        parts.append(box(0.07, 0.015, 0.012, (0.03, 0, h * 0.42)))
    else:
        for a in (0, 90):
            parts.append(box(0.08, 0.012, 0.012, (0, 0, h * 0.42)).rotated("z", a + 45))
    feats = [
        Feature(
            "spout",
            1,
            (
                {"gooseneck": "arched", "angular": "bent", "straight": "straight"}[form],
                size_word(reach, 0.12, 0.22, ["short", "long"]),
            ),
        ),
        Feature("lever", 1, (lever,)),
        Feature("body", 1, ("cylindrical",)),
        Feature("deck plate", 1, ("round",)),
    ]
    env = ""
    if p.b("basin_env", 0.4):
        parts.append(box(reach * 3, reach * 2.2, 0.02, (-reach / 2, 0, -0.01)).as_env())
        env = "mounting surface"
    return Design(parts, feats, env=env)
