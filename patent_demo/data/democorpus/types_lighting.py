"""Lighting types: lamps, standard lamps and pendants 26-05, torches and hand lamps 26-02."""

from __future__ import annotations

import numpy as np

from patent_demo.data.democorpus.designs import Design, Feature, Params, register, size_word
from patent_demo.data.democorpus.geometry import (
    box,
    cylinder,
    revolve,
    sweep,
    torus,
    tube,
)


def _shade(p: Params, r_bottom: float, r_top: float, h: float, z0: float) -> object:
    style = p.c("shade", ["drum", "cone", "bell"])
    if style == "drum":
        prof = [(r_bottom, z0), (r_bottom, z0 + h)]
    elif style == "cone":
        prof = [(r_bottom, z0), (r_top, z0 + h)]
    else:
        prof = [
            (r_bottom, z0),
            (r_bottom * 0.8, z0 + h * 0.3),
            (r_top * 1.1, z0 + h * 0.7),
            (r_top * 0.6, z0 + h),
        ]
    return revolve(prof, 36, caps=False), style


@register("table_lamp", "26-05", "lamp", ("Table lamp", "Lamp", "Bedside lamp", "Lamp with shade"))
def table_lamp(p: Params) -> Design:
    base = p.c("base", ["disc", "vase", "square"])
    br = p.u("base_radius", 0.06, 0.12)
    stem_h = p.u("stem_height", 0.2, 0.4)
    sr = p.u("shade_radius", 0.12, 0.2)
    sh = p.u("shade_height", 0.12, 0.22)
    if base == "disc":
        parts = [cylinder(br, 0.02, 32), cylinder(0.008, stem_h, 12, 0.02)]
    elif base == "vase":
        parts = [
            revolve(
                [
                    (0.0, 0.0),
                    (br * 0.6, 0.0),
                    (br, stem_h * 0.35),
                    (br * 0.5, stem_h * 0.75),
                    (0.012, stem_h),
                    (0.0, stem_h),
                ],
                32,
            )
        ]
    else:
        parts = [box(br * 1.6, br * 1.6, 0.03, (0, 0, 0.015), radius=0.01), cylinder(0.01, stem_h, 12, 0.03)]
    shade, style = _shade(p, sr, sr * p.u("shade_taper", 0.55, 0.9), sh, stem_h * 0.85)
    parts.append(shade)
    feats = [
        Feature("base", 1, (base,)),
        Feature("stem", 1, (size_word(stem_h, 0.2, 0.4, ["short", "tall"]),)),
        Feature("shade", 1, (style, "open")),
    ]
    return Design(parts, feats, env="")


@register("floor_lamp", "26-05", "floor lamp", ("Floor lamp", "Standard lamp", "Standing lamp", "Lamp"))
def floor_lamp(p: Params) -> Design:
    h = p.u("height", 1.3, 1.8)
    br = p.u("base_radius", 0.12, 0.18)
    arc = p.b("arched", 0.4)
    parts = [cylinder(br, 0.025, 32)]
    sr = p.u("shade_radius", 0.15, 0.25)
    if arc:
        reach = p.u("reach", 0.4, 0.8)
        t = np.linspace(0, 1, 16)
        path = np.stack(
            [reach * (1 - np.cos(t * np.pi / 2)), np.zeros_like(t), 0.025 + h * np.sin(t * np.pi / 2)], 1
        )
        parts.append(sweep(path, 0.012, 10))
        parts.append(
            revolve([(sr, h - 0.2), (sr * 0.4, h - 0.06), (0.02, h - 0.02)], 36, caps=False).moved(
                reach, 0, 0
            )
        )
        feats = [Feature("stand", 1, ("arched",)), Feature("reflector", 1, ("dome-shaped",))]
    else:
        parts.append(cylinder(0.012, h - 0.2, 12, 0.025))
        shade, style = _shade(p, sr, sr * 0.7, 0.25, h - 0.25)
        parts.append(shade)
        feats = [Feature("stand", 1, ("straight", "tall")), Feature("shade", 1, (style,))]
    feats.insert(0, Feature("base", 1, ("round", "weighted")))
    return Design(parts, feats)


@register("desk_lamp", "26-05", "desk lamp", ("Desk lamp", "Task lamp", "Architect lamp", "Reading lamp"))
def desk_lamp(p: Params) -> Design:
    br = p.u("base_radius", 0.06, 0.1)
    a1, a2 = p.u("lower_arm", 0.2, 0.35), p.u("upper_arm", 0.2, 0.35)
    ang1, ang2 = np.radians(p.u("lower_angle", 55, 80)), np.radians(p.u("upper_angle", -40, 10))
    head = p.c("head", ["cone", "dome", "bar"])
    j1 = np.array([0.0, 0.0, 0.04])
    j2 = j1 + a1 * np.array([np.cos(ang1), 0, np.sin(ang1)])
    j3 = j2 + a2 * np.array([np.cos(ang2), 0, np.sin(ang2)])
    parts = [
        cylinder(br, 0.03, 32),
        tube(j1, j2, 0.008, 10),
        tube(j2, j3, 0.008, 10),
        torus(0.015, 0.006, 12, 6).rotated("x", 90).moved(*j2),
    ]
    if head == "cone":
        parts.append(revolve([(0.07, -0.09), (0.02, 0.0), (0.0, 0.01)], 32, caps=False).moved(*j3))
    elif head == "dome":
        parts.append(
            revolve([(0.08, -0.07), (0.065, -0.02), (0.03, 0.01), (0.0, 0.015)], 32, caps=False).moved(*j3)
        )
    else:
        parts.append(box(0.25, 0.05, 0.02, (j3[0] + 0.1, 0, j3[2])))
    feats = [
        Feature("base", 1, ("round",)),
        Feature("arm", 2, ("articulated", "tubular"), "with an elbow joint"),
        Feature("head", 1, (head,)),
    ]
    return Design(parts, feats)


@register(
    "pendant_lamp",
    "26-05",
    "pendant lamp",
    ("Pendant lamp", "Ceiling light", "Hanging lamp", "Pendant light"),
)
def pendant_lamp(p: Params) -> Design:
    sr = p.u("shade_radius", 0.12, 0.3)
    sh = p.u("shade_height", 0.1, 0.3)
    cord = p.u("cord_length", 0.3, 0.8)
    form = p.c("form", ["dome", "cone", "cylinder", "globe"])
    if form == "dome":
        t = np.linspace(0, np.pi / 2, 8)
        shade = revolve([(sr * np.cos(a), sh * np.sin(a)) for a in t[:-1]] + [(0.0, sh)], 36, caps=False)
    elif form == "cone":
        shade = revolve([(sr, 0.0), (0.03, sh), (0.0, sh)], 36, caps=False)
    elif form == "cylinder":
        shade = revolve([(sr * 0.6, 0.0), (sr * 0.6, sh), (0.0, sh)], 36, caps=False)
    else:
        t = np.linspace(-np.pi / 2, np.pi / 2, 13)
        shade = revolve(
            [(0.0, -sr * 0.8)]
            + [(sr * 0.8 * np.cos(a), sr * 0.8 * np.sin(a)) for a in t[1:-1]]
            + [(0.0, sr * 0.8)],
            36,
        )
    top = shade.vertices[:, 2].max()
    parts = [shade, cylinder(0.005, cord, 8, top), cylinder(0.05, 0.02, 24, top + cord)]
    feats = [
        Feature("shade", 1, (form,)),
        Feature("cord", 1, (size_word(cord, 0.3, 0.8, ["short", "long"]),)),
        Feature("ceiling canopy", 1, ("round",)),
    ]
    return Design(parts, feats)


@register("flashlight", "26-02", "flashlight", ("Flashlight", "Torch", "Hand lamp", "Portable light"))
def flashlight(p: Params) -> Design:
    ln = p.u("length", 0.12, 0.25)
    r = p.u("radius", 0.012, 0.02)
    head = p.u("head_ratio", 1.2, 1.9)
    grip = p.i("grip_rings", 0, 5)
    prof = [
        (0.0, 0.0),
        (r * 0.9, 0.0),
        (r, 0.004),
        (r, ln * 0.7),
        (r * head, ln * 0.85),
        (r * head, ln),
        (0.0, ln),
    ]
    parts = [revolve(prof, 32)]
    for i in range(grip):
        parts.append(torus(r, 0.0015, 32, 6).moved(z=ln * 0.1 + i * ln * 0.08))
    lens = cylinder(r * head * 0.85, 0.002, 32, ln)
    parts.append(lens)
    parts.append(box(0.008, 0.006, 0.015, (0, -r, ln * 0.5)))
    feats = [
        Feature("barrel", 1, ("cylindrical",), f"with {grip} grip rings" if grip else ""),
        Feature("head", 1, ("flared" if head > 1.5 else "slightly flared",)),
        Feature("switch", 1, ("side",)),
    ]
    return Design([m.rotated("x", -90) for m in parts], feats)
