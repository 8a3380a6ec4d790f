"""Technical types: tools 08-02/08-04/08-05/08-06, vehicles and parts 12-08/12-11/12-15/12-16."""

from __future__ import annotations

import numpy as np

from patent_demo.data.democorpus.designs import Design, Feature, Params, register, size_word
from patent_demo.data.democorpus.geometry import (
    Mesh,
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


def _grip(p: Params, length: float, r: float) -> tuple[Mesh, str]:
    """A handle about ``z`` from 0 to ``length``: straight, waisted or ribbed."""
    kind = p.c("grip", ["straight", "waisted", "bulbous"])
    if kind == "straight":
        prof = [(0.0, 0.0), (r, 0.0), (r, length * 0.95), (r * 0.8, length), (0.0, length)]
    elif kind == "waisted":
        prof = [
            (0.0, 0.0),
            (r * 1.1, 0.0),
            (r * 1.15, length * 0.1),
            (r * 0.85, length * 0.5),
            (r, length * 0.9),
            (r * 0.7, length),
            (0.0, length),
        ]
    else:
        prof = [
            (0.0, 0.0),
            (r * 0.9, 0.0),
            (r * 1.2, length * 0.3),
            (r * 1.2, length * 0.6),
            (r * 0.8, length),
            (0.0, length),
        ]
    return revolve(prof, 24), kind


@register("hammer", "08-02", "hammer", ("Hammer", "Hand hammer", "Hammer with handle", "Striking tool"))
def hammer(p: Params) -> Design:
    ln = p.u("handle_length", 0.25, 0.38)
    r = p.u("handle_radius", 0.012, 0.02)
    head_len = p.u("head_length", 0.09, 0.16)
    head = p.c("head", ["claw", "mallet", "cross peen"])
    handle, grip = _grip(p, ln, r)
    parts = [handle]
    hz = ln + 0.015
    if head == "mallet":
        parts.append(cylinder(0.03, head_len, 24).rotated("y", 90).moved(-head_len / 2, 0, hz))
    else:
        parts.append(box(head_len * 0.55, 0.025, 0.03, (-head_len * 0.2, 0, hz)))
        parts.append(cylinder(0.016, head_len * 0.2, 20).rotated("y", -90).moved(-head_len * 0.45, 0, hz))
        if head == "claw":
            for sy in (-1, 1):
                path = arc_path(0.06, 90, 20, 8, "xz") + [head_len * 0.05, sy * 0.007, hz - 0.06]
                parts.append(sweep(path, np.linspace(0.008, 0.004, 8), 8))
        else:
            parts.append(
                loft(
                    [rounded_rect(0.025, 0.03, 0.0, 1), rounded_rect(0.004, 0.03, 0.0, 1)],
                    [0, head_len * 0.4],
                )
                .rotated("y", 90)
                .moved(head_len * 0.05, 0, hz)
            )
    feats = [
        Feature("handle", 1, (grip, size_word(ln, 0.25, 0.38, ["short", "long"]))),
        Feature("head", 1, (head,)),
    ]
    return Design([m.rotated("y", 90) for m in parts], feats)


@register(
    "screwdriver", "08-04", "screwdriver", ("Screwdriver", "Hand screwdriver", "Driver", "Screwdriver handle")
)
def screwdriver(p: Params) -> Design:
    ln = p.u("handle_length", 0.08, 0.13)
    r = p.u("handle_radius", 0.012, 0.02)
    shaft = p.u("shaft_length", 0.06, 0.2)
    tip = p.c("tip", ["flat", "cross"])
    handle, grip = _grip(p, ln, r)
    parts = [handle, cylinder(0.0035, shaft, 12, -shaft)]
    flutes = p.i("flutes", 0, 6)
    for i in range(flutes):
        a = 2 * np.pi * i / max(flutes, 1)
        parts.append(box(0.004, 0.004, ln * 0.5, (np.cos(a) * r, np.sin(a) * r, ln * 0.45)))
    if tip == "flat":
        parts.append(
            loft([rounded_rect(0.007, 0.007, 0, 1), rounded_rect(0.007, 0.0015, 0, 1)], [0, 0.012])
            .rotated("x", 180)
            .moved(z=-shaft)
        )
    else:
        parts.append(revolve([(0.0035, -shaft), (0.0, -shaft - 0.01)], 4))
    feats = [
        Feature("handle", 1, (grip,), f"with {flutes} flutes" if flutes else ""),
        Feature("shaft", 1, (size_word(shaft, 0.06, 0.2, ["stubby", "long"]), "round")),
        Feature("tip", 1, (tip,)),
    ]
    return Design([m.rotated("y", 90) for m in parts], feats)


@register("wrench", "08-05", "wrench", ("Wrench", "Spanner", "Open-end wrench", "Hand tool"))
def wrench(p: Params) -> Design:
    ln = p.u("length", 0.15, 0.25)
    jaw = p.u("jaw", 0.012, 0.022)
    t = p.u("thickness", 0.005, 0.01)
    ends = p.c("ends", ["open-open", "open-ring", "ring-ring"])
    bw = jaw * 0.9
    parts = [box(ln, bw, t, (0, 0, t / 2))]

    def open_end(x: float, s: float) -> Mesh:
        a = np.radians(np.linspace(40, 320, 15))
        outer = np.stack([np.cos(a), np.sin(a)], 1) * jaw * 1.6
        inner = np.stack([np.cos(a[::-1]), np.sin(a[::-1])], 1) * jaw * 0.9 + [jaw * 0.6, 0]
        return extrude(np.concatenate([outer, inner]), t).scaled(s, 1, 1).moved(x, 0, 0)

    def ring_end(x: float) -> Mesh:
        return torus(jaw * 1.15, t * 0.6, 24, 8).scaled(1, 1, 0.9).moved(x, 0, t / 2)

    kinds = ends.split("-")
    for kind, s in zip(kinds, (-1, 1), strict=True):
        x = s * ln / 2
        parts.append(open_end(x, -s) if kind == "open" else ring_end(x))
    feats = [
        Feature("shank", 1, ("flat", size_word(ln, 0.15, 0.25, ["short", "long"]))),
        Feature("end", 2, tuple(sorted(set(kinds)))),
        Feature("jaw", 1, (size_word(jaw, 0.012, 0.022, ["small", "large"]),)),
    ]
    return Design([m.rotated("x", 90) for m in parts], feats)


@register("door_handle", "08-06", "handle", ("Door handle", "Handle", "Door handle set", "Handle for a door"))
def door_handle(p: Params) -> Design:
    rose = p.c("rose", ["round", "square", "plate"])
    kind = p.c("kind", ["lever", "knob"])
    rr = p.u("rose_radius", 0.025, 0.035)
    if rose == "round":
        parts = [cylinder(rr, 0.01, 32)]
    elif rose == "square":
        parts = [extrude(rounded_rect(rr * 2, rr * 2, 0.006, 3), 0.01)]
    else:
        parts = [extrude(rounded_rect(rr * 1.8, rr * 6, 0.01, 4), 0.01).moved(0, -rr * 1.5, 0)]
    parts.append(cylinder(rr * 0.5, 0.04, 24, 0.01))
    if kind == "lever":
        ln = p.u("lever_length", 0.1, 0.15)
        bend = p.u("lever_bend", 0.0, 0.03)
        path = np.array([[0, 0, 0.045], [ln * 0.3, 0, 0.05], [ln * 0.7, 0, 0.05], [ln, 0, 0.05 - bend]])
        parts.append(sweep(path, [0.009, 0.008, 0.008, 0.009], 12))
        feats = [
            Feature(
                "lever",
                1,
                (size_word(ln, 0.1, 0.15, ["short", "long"]), "curved" if bend > 0.015 else "straight"),
            )
        ]
    else:
        kr = p.u("knob_radius", 0.022, 0.032)
        parts.append(
            revolve(
                [
                    (rr * 0.5, 0.05),
                    (kr, 0.05 + kr * 0.5),
                    (kr * 0.95, 0.05 + kr * 1.1),
                    (0.0, 0.05 + kr * 1.2),
                ],
                32,
            )
        )
        feats = [Feature("knob", 1, ("round", size_word(kr, 0.022, 0.032, ["small", "large"])))]
    feats += [Feature("rose", 1, (rose,)), Feature("neck", 1, ("cylindrical",))]
    return Design([m.rotated("x", 90) for m in parts], feats)


def _spoked_rim(p: Params, r: float, width: float) -> tuple[list[Mesh], list[Feature]]:
    n = p.i("spokes", 3, 10)
    style = p.c("spoke_style", ["flat", "twin", "round"])
    parts = [
        revolve(
            [
                (r, -width / 2),
                (r * 1.04, -width / 2),
                (r * 1.04, -width * 0.45),
                (r, -width * 0.4),
                (r, width / 2),
            ],
            48,
            caps=False,
        )
    ]
    parts.append(cylinder(r * 0.18, width * 0.5, 24, -width * 0.5))
    for i in range(n):
        a = 2 * np.pi * i / n
        for off in (-0.08, 0.08) if style == "twin" else (0.0,):
            end = r * np.array([np.cos(a + off), np.sin(a + off), -0.4 * width / r])
            if style == "round":
                parts.append(tube((0, 0, -width * 0.4), end, r * 0.05, 8))
            else:
                spoke = box(
                    r * 0.85,
                    r * 0.09 if style == "flat" else r * 0.05,
                    width * 0.12,
                    (r * 0.5, 0, -width * 0.4),
                )
                parts.append(spoke.rotated("z", np.degrees(a + off)))
    for i in range(5):
        a = 2 * np.pi * i / 5
        parts.append(
            cylinder(r * 0.02, width * 0.08, 8, -width * 0.58).moved(
                np.cos(a) * r * 0.1, np.sin(a) * r * 0.1, 0
            )
        )
    return parts, [
        Feature("spoke", n * (2 if style == "twin" else 1), (style,)),
        Feature("hub", 1, ("central",), "with five lug holes"),
    ]


@register("wheel_rim", "12-16", "wheel", ("Vehicle wheel", "Wheel rim", "Wheel", "Alloy wheel"))
def wheel_rim(p: Params) -> Design:
    r = p.u("radius", 0.18, 0.24)
    width = p.u("width", 0.18, 0.26)
    parts, feats = _spoked_rim(p, r, width)
    feats.insert(0, Feature("rim", 1, (size_word(width, 0.18, 0.26, ["narrow", "wide"]),)))
    env = ""
    if p.b("tyre_env", 0.35):
        parts.append(torus(r * 1.22, r * 0.2, 36, 10).scaled(1, 1, width / (r * 0.4)).as_env())
        env = "tire"
    return Design([m.rotated("x", 90) for m in parts], feats, env=env)


@register(
    "side_mirror",
    "12-16",
    "vehicle mirror",
    ("Vehicle side mirror", "Side view mirror", "Rearview mirror", "Mirror for a vehicle"),
)
def side_mirror(p: Params) -> Design:
    w = p.u("width", 0.18, 0.28)
    h = p.u("height", 0.1, 0.16)
    d = p.u("depth", 0.06, 0.1)
    sq = p.u("squareness", 2.5, 5.0)
    contour = superellipse(w, h, sq, 32)
    shell = loft([contour * 0.7, contour * 0.95, contour], [d, d * 0.35, 0.0])
    glass = extrude(contour * 0.92, 0.004, -0.004)
    cap = len(glass.faces) - 1
    parts = [shell, glass.with_glass([cap, cap - 1])]
    arm = p.c("arm", ["stalk", "wedge"])
    if arm == "stalk":
        parts.append(tube((w * 0.3, 0, d * 0.8), (w * 0.55, 0, d * 1.8), 0.012, 10))
    else:
        parts.append(
            loft(
                [rounded_rect(0.06, 0.04, 0.005, 3), rounded_rect(0.09, 0.06, 0.005, 3)], [d * 0.8, d * 1.8]
            ).moved(w * 0.3, 0, 0)
        )
    feats = [
        Feature("housing", 1, ("rounded" if sq < 3.5 else "squared",)),
        Feature("mirror glass", 1, ("flat",)),
        Feature("mounting arm", 1, (arm,)),
    ]
    return Design([m.rotated("x", 90) for m in parts], feats)


@register("tyre", "12-15", "tire", ("Tire", "Vehicle tire", "Tyre", "Tire tread"))
def tyre(p: Params) -> Design:
    r = p.u("radius", 0.28, 0.36)
    section = p.u("section", 0.07, 0.12)
    aspect = p.u("aspect", 0.9, 1.5)
    grooves = p.i("grooves", 2, 4)
    parts = [torus(r, section, 48, 14).scaled(1, 1, aspect)]
    for i in range(grooves):
        z = section * aspect * (-0.6 + 1.2 * (i + 0.5) / grooves)
        parts.append(torus(r + section * 0.97, 0.006, 48, 6).moved(z=z))
    lugs = p.i("lugs", 0, 24)
    for i in range(lugs):
        a = 360 * i / max(lugs, 1)
        parts.append(box(0.02, 0.012, section * aspect * 0.5, (r + section * 0.99, 0, 0)).rotated("z", a))
    feats = [
        Feature("tread", 1, ("circumferential",), f"with {grooves} grooves"),
        Feature("sidewall", 2, ("rounded", size_word(aspect, 0.9, 1.5, ["low-profile", "tall"]))),
    ]
    if lugs:
        feats.append(Feature("tread block", lugs, ("transverse",)))
    return Design([m.rotated("y", 90) for m in parts], feats)


@register("car", "12-08", "vehicle", ("Car", "Automobile", "Vehicle", "Toy car", "Passenger car"))
def car(p: Params) -> Design:
    ln = p.u("length", 3.8, 4.8)
    w = p.u("width", 1.6, 1.9)
    h = p.u("height", 1.3, 1.8)
    body = p.c("body", ["sedan", "hatchback", "van"])
    hood = p.u("hood", 0.18, 0.3) if body != "van" else 0.05
    clear = 0.25
    belt = clear + (h - clear) * 0.5
    if body == "sedan":
        xs = [0, 0, hood, 0.32, 0.72, 0.85, 1.0, 1.0]
    elif body == "hatchback":
        xs = [0, 0, hood, 0.35, 0.9, 0.98, 1.0, 1.0]
    else:
        xs = [0, 0, hood, 0.12, 0.95, 0.98, 1.0, 1.0]
    zs = [clear, belt - 0.05, belt, h, h, belt + 0.05, belt, clear]
    side = np.array([[x * ln - ln / 2, z] for x, z in zip(xs, zs, strict=True)])
    side = np.array([q for i, q in enumerate(side) if i == 0 or np.abs(q - side[i - 1]).sum() > 1e-6])
    shell = extrude(side[::-1], w, -w / 2).rotated("x", 90)
    parts = [shell]
    wr = p.u("wheel_radius", 0.3, 0.38)
    for x in (-ln * 0.32, ln * 0.32):
        for sy in (-1, 1):
            parts.append(
                torus(wr * 0.72, wr * 0.28, 24, 8).rotated("x", 90).moved(x, sy * (w / 2 - 0.12), wr)
            )
            parts.append(cylinder(wr * 0.5, 0.05, 16).rotated("x", 90).moved(x, sy * (w / 2 - 0.05), wr))
    for sy in (-1, 1):
        parts.append(box(0.1, 0.12, 0.08, (-ln / 2 + 0.05, sy * w * 0.32, belt - 0.12)))
    feats = [
        Feature("body", 1, (body, size_word(h, 1.3, 1.8, ["low", "tall"]))),
        Feature("wheel", 4, ("round",)),
        Feature("hood", 1, ("short" if hood < 0.24 else "long",)),
        Feature("headlamp", 2, ()),
    ]
    return Design([m.rotated("z", 90) for m in parts], feats)


@register(
    "scooter", "12-11", "scooter", ("Scooter", "Kick scooter", "Electric scooter", "Personal transporter")
)
def scooter(p: Params) -> Design:
    deck = p.u("deck_length", 0.5, 0.75)
    wr = p.u("wheel_radius", 0.08, 0.13)
    stem_h = p.u("stem_height", 0.7, 1.0)
    rake = p.u("rake", 5.0, 18.0)
    bar = p.u("bar_width", 0.35, 0.55)
    parts = [box(deck, 0.13, 0.04, (0, 0, wr + 0.02), radius=0.02)]
    fx, rx = -deck / 2 - wr * 0.8, deck / 2 + wr * 0.8
    for x in (fx, rx):
        parts.append(torus(wr * 0.75, wr * 0.25, 24, 8).rotated("x", 90).moved(x, 0, wr))
    top = np.array([fx + np.tan(np.radians(rake)) * stem_h, 0, wr + stem_h])
    parts.append(tube((fx, 0, wr), top, 0.018, 12))
    parts.append(tube((top[0], -bar / 2, top[2]), (top[0], bar / 2, top[2]), 0.015, 10))
    for sy in (-1, 1):
        parts.append(tube((top[0], sy * bar / 2, top[2]), (top[0], sy * (bar / 2 - 0.1), top[2]), 0.02, 10))
    parts.append(tube((-deck / 2, 0, wr + 0.02), (fx + 0.02, 0, wr + 0.06), 0.02, 10))
    feats = [
        Feature("deck", 1, (size_word(deck, 0.5, 0.75, ["short", "long"]), "flat")),
        Feature("wheel", 2, (size_word(wr, 0.08, 0.13, ["small", "large"]),)),
        Feature("steering column", 1, ("raked",)),
        Feature("handlebar", 1, ("T-shaped",), "with two grips"),
    ]
    if p.b("fender", 0.5):
        parts.append(sweep(arc_path(wr * 1.15, 20, 120, 8, "xz") + [rx, 0, wr], 0.01, 6))
        feats.append(Feature("rear fender", 1, ("curved",)))
    return Design([m.rotated("z", 90) for m in parts], feats)
