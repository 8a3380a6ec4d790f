"""Furniture types (Locarno class 06): seats 06-01, beds 06-02, tables 06-03, storage furniture 06-04."""

from __future__ import annotations

import numpy as np

from patent_demo.data.democorpus.designs import Design, Feature, Params, register, size_word
from patent_demo.data.democorpus.geometry import (
    Mesh,
    box,
    circle,
    cylinder,
    extrude,
    loft,
    revolve,
    rounded_rect,
    sweep,
    torus,
    tube,
)


def _legs(
    p: Params, w: float, d: float, h: float, inset: float, prefix: str = "leg"
) -> tuple[list[Mesh], Feature]:
    """Four legs under a ``w`` x ``d`` frame whose underside is at height ``h``."""
    shape = p.c(f"{prefix}_shape", ["square", "round", "tapered"])
    t = p.u(f"{prefix}_thickness", 0.035, 0.07)
    splay = p.u(f"{prefix}_splay", 0.0, 0.05) if shape != "square" else 0.0
    parts = []
    for sx in (-1, 1):
        for sy in (-1, 1):
            top = (sx * (w / 2 - inset), sy * (d / 2 - inset), h)
            foot = (top[0] + sx * splay, top[1] + sy * splay, 0.0)
            if shape == "square":
                parts.append(box(t, t, h, (top[0], top[1], h / 2)))
            elif shape == "round":
                parts.append(tube(foot, top, t / 2, 12))
            else:
                parts.append(sweep(np.array([foot, top]), [t * 0.28, t * 0.55], 12))
    words = {"square": ("square", "straight"), "round": ("round",), "tapered": ("tapered", "round")}[shape]
    adjs = words + (("splayed",) if splay > 0.025 else ())
    return parts, Feature(prefix, 4, adjs)


@register("dining_chair", "06-01", "chair", ("Chair", "Dining chair", "Side chair", "Chair with backrest"))
def dining_chair(p: Params) -> Design:
    w, d = p.u("seat_width", 0.40, 0.52), p.u("seat_depth", 0.38, 0.50)
    h = p.u("seat_height", 0.42, 0.48)
    st = p.u("seat_thickness", 0.025, 0.06)
    corner = p.u("seat_corner", 0.0, 0.08)
    parts = [box(w, d, st, (0, 0, h + st / 2), radius=corner)]
    legs, leg_f = _legs(p, w, d, h, 0.04)
    parts += legs
    back_h = p.u("back_height", 0.35, 0.55)
    back = p.c("back", ["panel", "slats", "rails", "frame"])
    y = d / 2 - 0.02
    post = 0.035
    feats = [Feature("seat", 1, ("rounded",) if corner > 0.04 else ("rectangular",)), leg_f]
    if back == "panel":
        parts.append(box(w, 0.03, back_h, (0, y, h + st + back_h / 2), radius=0.01))
        feats.append(
            Feature("backrest", 1, ("solid", size_word(back_h, 0.35, 0.55, ["low", "medium", "high"])))
        )
    else:
        for sx in (-1, 1):
            parts.append(box(post, post, back_h, (sx * (w / 2 - post / 2), y, h + st + back_h / 2)))
        parts.append(box(w, 0.035, 0.07, (0, y, h + st + back_h - 0.035)))
        n = p.i("back_slats", 2, 5)
        if back == "slats":
            gap = (w - 2 * post) / n
            for i in range(n):
                parts.append(
                    box(
                        gap * 0.45,
                        0.02,
                        back_h - 0.1,
                        (-w / 2 + post + gap * (i + 0.5), y, h + st + (back_h - 0.07) / 2),
                    )
                )
            feats.append(Feature("backrest", 1, ("open",), f"with {n} vertical slats"))
        elif back == "rails":
            for i in range(n - 1):
                z = h + st + (back_h - 0.07) * (i + 1) / n
                parts.append(box(w - 2 * post, 0.025, 0.04, (0, y, z)))
            feats.append(Feature("backrest", 1, ("ladder",), f"with {n - 1} horizontal rails"))
        else:
            parts.append(box(w - 2 * post, 0.02, back_h * 0.45, (0, y, h + st + back_h * 0.35)))
            feats.append(Feature("backrest", 1, ("framed",), "with a centre panel"))
    if p.b("stretchers", 0.4):
        for sx in (-1, 1):
            parts.append(box(0.025, d - 0.08, 0.025, (sx * (w / 2 - 0.04), 0, h * 0.3)))
        feats.append(Feature("stretcher", 2, ("side",)))
    return Design(parts, feats)


@register("stool", "06-01", "stool", ("Stool", "Bar stool", "Seat", "Stool with footrest"))
def stool(p: Params) -> Design:
    r = p.u("seat_radius", 0.16, 0.22)
    h = p.u("seat_height", 0.45, 0.78)
    st = p.u("seat_thickness", 0.03, 0.07)
    n = p.i("legs", 3, 4)
    spread = p.u("leg_spread", 0.0, 0.12)
    lt = p.u("leg_thickness", 0.018, 0.03)
    dished = p.b("dished_seat", 0.5)
    if dished:
        seat = revolve(
            [
                (0, h),
                (r * 0.9, h),
                (r, h + st * 0.5),
                (r, h + st),
                (r * 0.6, h + st * 0.7),
                (0, h + st * 0.65),
            ],
            32,
        )
    else:
        seat = cylinder(r, st, 32, h)
    parts = [seat]
    for i in range(n):
        a = 2 * np.pi * (i + 0.5) / n
        top = np.array([np.cos(a) * r * 0.65, np.sin(a) * r * 0.65, h])
        foot = np.array([np.cos(a) * (r * 0.65 + spread), np.sin(a) * (r * 0.65 + spread), 0])
        parts.append(tube(foot, top, lt, 10))
    feats = [
        Feature("seat", 1, ("round", "dished" if dished else "flat")),
        Feature("leg", n, ("slender", "splayed" if spread > 0.05 else "straight")),
    ]
    if p.b("footring", 0.6):
        zr = h * p.u("footring_height", 0.3, 0.45)
        rr = r * 0.65 + spread * (1 - zr / h)
        parts.append(torus(rr, lt * 0.8, 32, 8).moved(z=zr))
        feats.append(Feature("footring", 1, ("circular",)))
    if p.b("low_back", 0.3):
        parts.append(box(r * 1.2, 0.025, 0.12, (0, r * 0.9, h + st + 0.12)))
        for sx in (-1, 1):
            parts.append(box(0.02, 0.02, 0.12, (sx * r * 0.5, r * 0.9, h + st + 0.06)))
        feats.append(Feature("backrest", 1, ("low",)))
    return Design(parts, feats)


@register("armchair", "06-01", "armchair", ("Armchair", "Lounge chair", "Upholstered chair", "Club chair"))
def armchair(p: Params) -> Design:
    w = p.u("width", 0.7, 1.0)
    d = p.u("depth", 0.7, 0.9)
    base_h = p.u("base_height", 0.12, 0.32)
    cushion = p.u("cushion", 0.1, 0.16)
    arm_w = p.u("arm_width", 0.08, 0.18)
    arm_h = p.u("arm_height", 0.55, 0.7)
    back_h = p.u("back_height", 0.75, 1.0)
    r = p.u("roundness", 0.0, 0.05)
    feet = p.c("feet", ["plinth", "legs"])
    parts = []
    body_z = 0.12 if feet == "legs" else 0.0
    parts.append(box(w - 2 * arm_w, d - 0.15, base_h, (0, -0.05, body_z + base_h / 2), radius=r))
    parts.append(
        box(w - 2 * arm_w, d - 0.2, cushion, (0, -0.1, body_z + base_h + cushion / 2), radius=max(r, 0.02))
    )
    for sx in (-1, 1):
        parts.append(
            box(arm_w, d, arm_h - body_z, (sx * (w - arm_w) / 2, 0, body_z + (arm_h - body_z) / 2), radius=r)
        )
    parts.append(
        box(
            w - 2 * arm_w, 0.15, back_h - body_z, (0, d / 2 - 0.075, body_z + (back_h - body_z) / 2), radius=r
        )
    )
    feats = [
        Feature("seat cushion", 1, ("thick" if cushion > 0.13 else "thin",)),
        Feature("armrest", 2, (size_word(arm_w, 0.08, 0.18, ["narrow", "wide"]), "box-shaped")),
        Feature("backrest", 1, (size_word(back_h, 0.75, 1.0, ["low", "high"]), "upholstered")),
    ]
    if feet == "legs":
        for sx in (-1, 1):
            for sy in (-1, 1):
                parts.append(
                    revolve([(0.015, 0), (0.025, 0.12)], 12).moved(sx * (w / 2 - 0.06), sy * (d / 2 - 0.06))
                )
        feats.append(Feature("foot", 4, ("short", "tapered")))
    else:
        feats.append(Feature("base", 1, ("plinth",)))
    return Design(parts, feats)


@register("office_chair", "06-01", "office chair", ("Office chair", "Swivel chair", "Task chair", "Chair"))
def office_chair(p: Params) -> Design:
    n = p.i("base_arms", 4, 5)
    reach = p.u("base_reach", 0.28, 0.36)
    h = p.u("seat_height", 0.45, 0.55)
    w = p.u("seat_width", 0.45, 0.52)
    back_h = p.u("back_height", 0.4, 0.7)
    back_shape = p.c("back_shape", ["rectangular", "rounded", "tapered"])
    parts, caster = [], 0.03
    for i in range(n):
        a = 2 * np.pi * i / n + np.pi / 2
        end = (np.cos(a) * reach, np.sin(a) * reach, caster * 2 + 0.03)
        parts.append(tube((0, 0, caster * 2 + 0.05), end, 0.022, 8))
        parts.append(torus(caster * 0.6, caster * 0.4, 12, 6).rotated("y", 90).moved(end[0], end[1], caster))
    parts.append(cylinder(0.035, h - 0.15, 16, 0.08))
    parts.append(cylinder(0.02, 0.06, 12, h - 0.1))
    parts.append(box(w, w, 0.07, (0, 0, h), radius=0.05))
    bw = {
        "rectangular": (w * 0.95, w * 0.95),
        "rounded": (w * 0.8, w * 0.95),
        "tapered": (w * 0.95, w * 0.6),
    }[back_shape]
    back = [rounded_rect(bw[0], 0.05, 0.02, 3), rounded_rect(bw[1], 0.05, 0.02, 3)]
    if back_shape == "rounded":
        back.insert(1, rounded_rect(w, 0.05, 0.02, 3))
    zs = np.linspace(0, back_h, len(back))
    parts.append(loft(back, zs).moved(0, w / 2 - 0.02, h + 0.12))
    parts.append(box(0.05, 0.03, 0.16, (0, w / 2 - 0.01, h + 0.05)))
    feats = [
        Feature("star base", 1, (f"{n}-spoke",), f"with {n} casters"),
        Feature("gas column", 1, ("central",)),
        Feature("seat", 1, ("padded", "square")),
        Feature("backrest", 1, (back_shape, size_word(back_h, 0.4, 0.7, ["mid", "high"]))),
    ]
    if p.b("arms", 0.6):
        for sx in (-1, 1):
            parts.append(box(0.03, 0.04, 0.2, (sx * (w / 2 + 0.02), 0, h + 0.12)))
            parts.append(box(0.06, w * 0.55, 0.03, (sx * (w / 2 + 0.02), 0, h + 0.23), radius=0.012))
        feats.append(Feature("armrest", 2, ("T-shaped",)))
    return Design(parts, feats)


@register("bed", "06-02", "bed", ("Bed", "Bed frame", "Platform bed", "Bed with headboard"))
def bed(p: Params) -> Design:
    w = p.u("width", 1.0, 1.8)
    length = p.u("length", 2.0, 2.2)
    frame_h = p.u("frame_height", 0.2, 0.4)
    head_h = p.u("headboard_height", 0.4, 0.9)
    head = p.c("headboard", ["panel", "arched", "slatted"])
    parts = [box(w, length, 0.15, (0, 0, frame_h + 0.075))]
    parts.append(box(w - 0.06, length - 0.08, 0.2, (0, -0.02, frame_h + 0.25), radius=0.05))
    for sx in (-1, 1):
        for sy in (-1, 1):
            parts.append(
                box(0.07, 0.07, frame_h, (sx * (w / 2 - 0.035), sy * (length / 2 - 0.035), frame_h / 2))
            )
    top = frame_h + 0.15 + head_h
    yb = length / 2 + 0.02
    if head == "panel":
        parts.append(box(w + 0.04, 0.05, top, (0, yb, top / 2), radius=0.015))
    elif head == "arched":
        t = np.linspace(0, np.pi, 17)
        prof = np.concatenate(
            [
                [[w / 2 + 0.02, 0]],
                np.stack([np.cos(t) * (w / 2 + 0.02), top - 0.15 + 0.15 * np.sin(t)], 1),
                [[-w / 2 - 0.02, 0]],
            ]
        )
        parts.append(extrude(prof, 0.05).rotated("x", 90).moved(0, yb + 0.025, 0))
    else:
        for sx in (-1, 1):
            parts.append(box(0.06, 0.06, top, (sx * (w / 2 + 0.01), yb, top / 2)))
        parts.append(box(w, 0.05, 0.08, (0, yb, top - 0.04)))
        n = int(w / 0.15)
        for i in range(n):
            parts.append(
                box(
                    0.05,
                    0.03,
                    head_h - 0.08,
                    (-w / 2 + (i + 0.5) * w / n, yb, frame_h + 0.15 + (head_h - 0.08) / 2),
                )
            )
    feats = [
        Feature("headboard", 1, (head, size_word(head_h, 0.4, 0.9, ["low", "medium", "tall"]))),
        Feature("mattress", 1, ("rectangular",)),
        Feature("leg", 4, ("short", "square")),
        Feature("side rail", 2, ()),
    ]
    if p.b("footboard", 0.5):
        parts.append(box(w + 0.04, 0.05, frame_h + 0.35, (0, -length / 2 - 0.02, (frame_h + 0.35) / 2)))
        feats.append(Feature("footboard", 1, ("low",)))
    return Design(parts, feats)


@register("crib", "06-02", "crib", ("Crib", "Baby cot", "Infant bed", "Cot"))
def crib(p: Params) -> Design:
    w, length = p.u("width", 0.6, 0.75), p.u("length", 1.1, 1.3)
    h = p.u("height", 0.85, 1.0)
    base = p.u("base_height", 0.25, 0.4)
    bar_gap = p.u("bar_gap", 0.06, 0.1)
    parts = []
    for sx in (-1, 1):
        for sy in (-1, 1):
            parts.append(box(0.05, 0.05, h, (sx * w / 2, sy * length / 2, h / 2)))
    parts.append(box(w, length, 0.05, (0, 0, base)))
    for sx in (-1, 1):
        parts.append(box(0.04, length, 0.05, (sx * w / 2, 0, h - 0.05)))
        parts.append(box(0.04, length, 0.05, (sx * w / 2, 0, base + 0.05)))
        n = int(length / bar_gap)
        for i in range(1, n):
            parts.append(
                box(0.02, 0.02, h - base - 0.15, (sx * w / 2, -length / 2 + i * length / n, (h + base) / 2))
            )
    for sy in (-1, 1):
        parts.append(box(w, 0.04, h - base, (0, sy * length / 2, (h + base) / 2)))
    feats = [
        Feature("side", 2, ("barred",), f"with bars about {int(bar_gap * 100)} cm apart"),
        Feature("end panel", 2, ("solid",)),
        Feature("corner post", 4, ("square",)),
    ]
    if p.b("wheels", 0.3):
        for sx in (-1, 1):
            for sy in (-1, 1):
                parts.append(
                    torus(0.03, 0.012, 12, 6).rotated("y", 90).moved(sx * w / 2, sy * length / 2, 0.0)
                )
        feats.append(Feature("caster", 4, ("small",)))
    return Design(parts, feats)


@register("table", "06-03", "table", ("Table", "Dining table", "Kitchen table", "Table top and base"))
def table(p: Params) -> Design:
    top = p.c("top", ["rectangular", "round", "oval"])
    w = p.u("width", 0.9, 1.8)
    d = p.u("depth", 0.7, 1.0) if top != "round" else w * 0.999
    h = p.u("height", 0.7, 0.78)
    t = p.u("top_thickness", 0.025, 0.06)
    base = p.c("base", ["legs", "pedestal", "trestle"])
    if top == "rectangular":
        contour = rounded_rect(w, d, p.u("corner", 0.0, 0.1), 5)
    else:
        contour = circle(d / 2, 40, rx=w / 2)
    parts = [extrude(contour, t, h - t)]
    feats = [Feature("top", 1, (top, size_word(t, 0.025, 0.06, ["thin", "thick"])))]
    if base == "legs":
        legs, f = _legs(
            p,
            w * (0.75 if top != "rectangular" else 1.0),
            d * (0.75 if top != "rectangular" else 1.0),
            h - t,
            0.06,
        )
        parts += legs
        feats.append(f)
        if top == "rectangular" and p.b("apron", 0.6):
            parts.append(box(w - 0.16, d - 0.16, 0.08, (0, 0, h - t - 0.04)))
            feats.append(Feature("apron", 1, ("plain",)))
    elif base == "pedestal":
        foot_r = p.u("foot_radius", 0.2, 0.35)
        parts.append(
            revolve([(foot_r, 0), (foot_r, 0.03), (0.06, 0.08), (0.05, h - t - 0.05), (0.12, h - t)], 32)
        )
        feats.append(Feature("pedestal", 1, ("central", "round"), "on a disc foot"))
    else:
        for sx in (-1, 1):
            x = sx * w * 0.35
            parts.append(box(0.06, d * 0.7, 0.05, (x, 0, 0.025)))
            parts.append(box(0.06, 0.08, h - t - 0.05, (x, 0, (h - t) / 2)))
            parts.append(box(0.06, d * 0.7, 0.05, (x, 0, h - t - 0.025)))
        parts.append(box(w * 0.7, 0.05, 0.06, (0, 0, h * 0.4)))
        feats.append(Feature("trestle", 2, ("T-shaped",), "joined by a stretcher"))
    return Design(parts, feats)


@register("desk", "06-03", "desk", ("Desk", "Writing desk", "Computer desk", "Office desk"))
def desk(p: Params) -> Design:
    w, d, h = p.u("width", 1.1, 1.6), p.u("depth", 0.55, 0.75), p.u("height", 0.72, 0.78)
    ped_w = p.u("pedestal_width", 0.35, 0.45)
    drawers = p.i("drawers", 2, 4)
    side = p.c("pedestal_side", ["right", "left", "both"])
    parts = [box(w, d, 0.03, (0, 0, h - 0.015))]
    sides = {"right": [1], "left": [-1], "both": [-1, 1]}[side]
    for sx in (-1, 1):
        x = sx * (w / 2 - ped_w / 2)
        if sx in sides:
            parts.append(box(ped_w, d - 0.04, h - 0.03, (x, 0, (h - 0.03) / 2)))
            dh = (h - 0.08) / drawers
            for i in range(drawers):
                z = 0.05 + (i + 0.5) * dh
                parts.append(box(ped_w - 0.04, 0.02, dh - 0.02, (x, -d / 2 + 0.01, z)))
                parts.append(box(0.1, 0.03, 0.015, (x, -d / 2 - 0.01, z + dh * 0.2)))
        else:
            parts.append(box(0.04, d - 0.04, h - 0.03, (sx * (w / 2 - 0.02), 0, (h - 0.03) / 2)))
    parts.append(box(w - 0.1, 0.02, h * 0.4, (0, d / 2 - 0.05, h * 0.7)))
    feats = [
        Feature("work top", 1, ("rectangular",)),
        Feature(
            "drawer pedestal",
            len(sides),
            (side if side != "both" else "twin",),
            f"with {drawers} drawers each",
        ),
        Feature("modesty panel", 1, ("rear",)),
    ]
    return Design(parts, feats)


@register(
    "coffee_table", "06-03", "coffee table", ("Coffee table", "Low table", "Side table", "Occasional table")
)
def coffee_table(p: Params) -> Design:
    w = p.u("width", 0.6, 1.2)
    d = p.u("depth", 0.45, 0.7)
    h = p.u("height", 0.35, 0.5)
    shelf = p.b("shelf", 0.6)
    frame = p.c("frame", ["sled", "legs", "box"])
    parts = [box(w, d, 0.03, (0, 0, h - 0.015), radius=p.u("corner", 0.0, 0.06))]
    feats = [Feature("top", 1, ("rectangular", "low"))]
    if frame == "sled":
        for sx in (-1, 1):
            x = sx * (w / 2 - 0.03)
            parts.append(box(0.03, 0.03, h - 0.03, (x, -d / 2 + 0.04, (h - 0.03) / 2)))
            parts.append(box(0.03, 0.03, h - 0.03, (x, d / 2 - 0.04, (h - 0.03) / 2)))
            parts.append(box(0.03, d - 0.05, 0.03, (x, 0, 0.015)))
        feats.append(Feature("sled frame", 2, ("tubular",)))
    elif frame == "legs":
        legs, f = _legs(p, w, d, h - 0.03, 0.05)
        parts += legs
        feats.append(f)
    else:
        for sx in (-1, 1):
            parts.append(box(0.03, d, h - 0.03, (sx * (w / 2 - 0.015), 0, (h - 0.03) / 2)))
        feats.append(Feature("side panel", 2, ("solid",)))
    if shelf:
        parts.append(box(w - 0.08, d - 0.08, 0.02, (0, 0, h * 0.3)))
        feats.append(Feature("lower shelf", 1, ()))
    return Design(parts, feats)


@register("bookcase", "06-04", "bookcase", ("Bookcase", "Shelving unit", "Shelf", "Open bookshelf"))
def bookcase(p: Params) -> Design:
    w, d, h = p.u("width", 0.6, 1.2), p.u("depth", 0.25, 0.4), p.u("height", 0.8, 2.0)
    n = p.i("shelves", 2, 6)
    t = p.u("board", 0.018, 0.04)
    back = p.b("back_panel", 0.6)
    parts = [box(t, d, h, (sx * (w / 2 - t / 2), 0, h / 2)) for sx in (-1, 1)]
    for i in range(n + 1):
        z = t / 2 + 0.05 + i * (h - 0.05 - t) / n
        parts.append(box(w - 2 * t, d, t, (0, 0, z)))
    feats = [
        Feature("shelf", n + 1, ("horizontal", "evenly spaced")),
        Feature("side panel", 2, (size_word(h, 0.8, 2.0, ["low", "tall"]),)),
    ]
    if back:
        parts.append(box(w - 2 * t, 0.01, h - 0.05, (0, d / 2 - 0.005, 0.025 + h / 2)))
        feats.append(Feature("back panel", 1, ("closed",)))
    return Design(parts, feats)


@register(
    "chest_of_drawers",
    "06-04",
    "chest of drawers",
    ("Chest of drawers", "Dresser", "Drawer cabinet", "Cabinet"),
)
def chest_of_drawers(p: Params) -> Design:
    w, d, h = p.u("width", 0.5, 1.2), p.u("depth", 0.4, 0.55), p.u("height", 0.6, 1.3)
    rows = p.i("rows", 2, 5)
    cols = p.i("columns", 1, 2)
    pull = p.c("pull", ["knob", "bar"])
    legs_h = p.u("leg_height", 0.0, 0.15)
    parts = [box(w, d, h - legs_h, (0, 0, legs_h + (h - legs_h) / 2))]
    dh = (h - legs_h - 0.04) / rows
    dw = (w - 0.04) / cols
    for r in range(rows):
        for c in range(cols):
            x = -w / 2 + 0.02 + (c + 0.5) * dw
            z = legs_h + 0.02 + (r + 0.5) * dh
            parts.append(box(dw - 0.015, 0.015, dh - 0.015, (x, -d / 2 - 0.0075, z)))
            if pull == "knob":
                parts.append(cylinder(0.015, 0.025, 12).rotated("x", 90).moved(x, -d / 2 - 0.015, z))
            else:
                parts.append(box(dw * 0.35, 0.02, 0.015, (x, -d / 2 - 0.025, z)))
    feats = [
        Feature("drawer", rows * cols, ("flush",), f"in {rows} rows"),
        Feature("pull", rows * cols, (pull,)),
    ]
    if legs_h > 0.05:
        for sx in (-1, 1):
            for sy in (-1, 1):
                parts.append(box(0.04, 0.04, legs_h, (sx * (w / 2 - 0.04), sy * (d / 2 - 0.04), legs_h / 2)))
        feats.append(Feature("leg", 4, ("short",)))
    else:
        feats.append(Feature("plinth", 1, ("flush",)))
    return Design(parts, feats)
