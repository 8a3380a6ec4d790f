"""Projection and hidden-line drawing of meshes in the style of a design-patent sheet.

Hidden lines are removed by a painter's algorithm: faces are filled white from back to front and each
face's outline edges are drawn right after it, so nearer faces cover what lies behind. An edge is drawn
when it is a boundary, a crease (the faces meet at more than ``CREASE_DEG``), or a silhouette (one face
turns to the viewer and the other away); edges inside one flat or smooth surface are not drawn. Curved
surfaces get thin shading lines along their longitudinal edges where they turn away from the viewer,
glass faces get oblique strokes, environment parts are drawn in broken lines. Drawing happens at
``supersample`` times the size and is reduced with a Lanczos filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from patent_demo.data.democorpus.geometry import Mesh

CREASE_DEG = 40.0
_LIGHT = np.array([-0.55, 0.55, -0.63]) / np.linalg.norm(
    [-0.55, 0.55, -0.63]
)  # camera space: from upper left
VIEWS = ("perspective", "rear_perspective", "front", "rear", "left", "right", "top", "bottom")

# camera: forward direction (from the eye into the scene) and the up direction on the sheet
_ORTHO = {
    "front": ((0, 1, 0), (0, 0, 1)),
    "rear": ((0, -1, 0), (0, 0, 1)),
    "left": ((1, 0, 0), (0, 0, 1)),
    "right": ((-1, 0, 0), (0, 0, 1)),
    "top": ((0, 0, -1), (0, 1, 0)),
    "bottom": ((0, 0, 1), (0, 1, 0)),
}


@dataclass(frozen=True)
class Style:
    """How one patent's sheets are drawn (fixed per patent, so all its views match)."""

    line: float = 1.6  # outline width in output pixels
    shading: bool = True  # shading lines on curved surfaces
    label: bool = True  # "FIG. n" under the drawing
    azimuth: float = 35.0  # perspective: degrees from the front towards the article's right
    elevation: float = 24.0  # perspective: degrees above the horizon
    margin: float = 0.08  # blank border as a fraction of the sheet


@dataclass
class Scene:
    """Meshes merged into flat arrays, with the edge table the hidden-line pass needs.

    ``vertices`` ``[V, 3]``; ``normals`` ``[F, 3]`` unit face normals; ``edges`` ``[E, 4]`` rows of
    (vertex a, vertex b, face 0, face 1 or -1); ``crease`` ``[E]``; ``longitudinal`` ``[E]``.
    """

    vertices: np.ndarray
    faces: list[tuple[int, ...]]
    normals: np.ndarray
    face_vertex_mean: np.ndarray
    closed: np.ndarray
    env: np.ndarray
    glass: np.ndarray
    edges: np.ndarray
    crease: np.ndarray
    longitudinal: np.ndarray


def build_scene(meshes: Sequence[Mesh]) -> Scene:
    """Merge ``meshes`` and find every edge's faces, creases and longitudinal edges."""
    verts, faces, closed, env, glass = [], [], [], [], []
    longitudinal: set[tuple[int, int]] = set()
    offset = 0
    for m in meshes:
        verts.append(m.vertices)
        for fi, f in enumerate(m.faces):
            faces.append(tuple(offset + i for i in f))
            closed.append(m.closed)
            env.append(m.env)
            glass.append(fi in m.glass)
        longitudinal.update((a + offset, b + offset) for a, b in m.longitudinal)
        offset += len(m.vertices)
    v = np.concatenate(verts).astype(float)
    lens = np.array([len(f) for f in faces], dtype=np.int64)
    kmax = int(lens.max())
    idx = np.zeros((len(faces), kmax), dtype=np.int64)
    for fi, f in enumerate(faces):
        idx[fi, : len(f)] = f
    col = np.arange(kmax)[None, :]
    valid = col < lens[:, None]
    nxt = np.take_along_axis(idx, (col + 1) % lens[:, None], axis=1)
    p, q = v[idx], v[nxt]
    w = valid[:, :, None].astype(float)
    # Newell's method: a robust normal of a planar polygon
    normals = np.stack(
        [
            ((p[..., 1] - q[..., 1]) * (p[..., 2] + q[..., 2]) * w[..., 0]).sum(1),
            ((p[..., 2] - q[..., 2]) * (p[..., 0] + q[..., 0]) * w[..., 0]).sum(1),
            ((p[..., 0] - q[..., 0]) * (p[..., 1] + q[..., 1]) * w[..., 0]).sum(1),
        ],
        1,
    )
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-12)
    means = (p * w).sum(1) / lens[:, None]
    a, b = idx[valid], nxt[valid]
    face_of = np.broadcast_to(np.arange(len(faces))[:, None], idx.shape)[valid]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    key = lo * len(v) + hi
    order = np.argsort(key, kind="stable")
    key, lo, hi, face_of = key[order], lo[order], hi[order], face_of[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    counts = np.diff(np.r_[starts, len(key)])
    f0 = face_of[starts]
    f1 = np.where(counts >= 2, face_of[np.minimum(starts + 1, len(key) - 1)], -1)
    rows = np.stack([lo[starts], hi[starts], f0, f1], 1)
    cos = np.einsum("ij,ij->i", normals[f0], normals[np.maximum(f1, 0)])
    crease = (counts > 2) | ((f1 >= 0) & (cos < np.cos(np.radians(CREASE_DEG))))
    if longitudinal:
        lk = np.array([x * len(v) + y for x, y in longitudinal], dtype=np.int64)
        longi = np.isin(key[starts], lk)
    else:
        longi = np.zeros(len(starts), dtype=bool)
    return Scene(
        vertices=v,
        faces=faces,
        normals=normals,
        face_vertex_mean=means,
        closed=np.array(closed, dtype=bool),
        env=np.array(env, dtype=bool),
        glass=np.array(glass, dtype=bool),
        edges=rows,
        crease=crease,
        longitudinal=longi,
    )


def camera(view: str, style: Style) -> tuple[np.ndarray, bool]:
    """The ``[3, 3]`` world-to-camera rotation (rows: right, up, forward) and whether to use perspective."""
    if view in _ORTHO:
        fwd, up = (np.array(x, dtype=float) for x in _ORTHO[view])
        persp = False
    elif view in ("perspective", "rear_perspective"):
        az = np.radians(style.azimuth + (180.0 if view == "rear_perspective" else 0.0))
        el = np.radians(style.elevation)
        eye_dir = np.array([np.sin(az) * np.cos(el), -np.cos(az) * np.cos(el), np.sin(el)])
        fwd, up = -eye_dir, np.array([0.0, 0.0, 1.0])
        persp = True
    else:
        raise ValueError(f"unknown view {view!r}; use one of {VIEWS}")
    right = np.cross(fwd, up)
    right /= np.linalg.norm(right)
    up = np.cross(right, fwd)
    return np.stack([right, up, fwd]), persp


def project(scene: Scene, view: str, style: Style) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Camera-space projection of a scene.

    Returns ``xy`` ``[V, 2]`` (sheet units, y up), ``depth`` ``[F]`` (larger is farther) and ``front``
    ``[F]`` (the face turns towards the eye).
    """
    rot, persp = camera(view, style)
    lo, hi = scene.vertices.min(0), scene.vertices.max(0)
    centre = (lo + hi) / 2
    cam = (scene.vertices - centre) @ rot.T
    n_cam = scene.normals @ rot.T
    m_cam = (scene.face_vertex_mean - centre) @ rot.T
    if persp:
        dist = 3.2 * float(np.linalg.norm(hi - lo))
        z = cam[:, 2] + dist
        xy = cam[:, :2] * (dist / z)[:, None]
        eye = np.array([0.0, 0.0, -dist])
        front = np.einsum("ij,ij->i", n_cam, eye - m_cam) > 0
        depth = np.linalg.norm(m_cam - eye, axis=1)
    else:
        xy = cam[:, :2]
        front = n_cam[:, 2] < 0
        depth = m_cam[:, 2]
    return xy, depth, front


@lru_cache(maxsize=8)
def _font(size: int) -> ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def render_view(
    scene: Scene, view: str, size: int = 256, style: Style = Style(), label: str = "", supersample: int = 2
) -> Image.Image:
    """Draw one view of ``scene`` on a white ``size`` x ``size`` sheet; returns a mode ``"L"`` image."""
    s = size * supersample
    xy, depth, front = project(scene, view, style)
    visible = front | ~scene.closed
    label_h = 0.13 * s if label and style.label else 0.0
    lo, hi = xy.min(0), xy.max(0)
    span = np.maximum(hi - lo, 1e-9)
    avail = np.array([s * (1 - 2 * style.margin), s * (1 - 2 * style.margin) - label_h])
    scale = float(np.min(avail / span))
    centre = (lo + hi) / 2
    px = np.empty_like(xy)
    px[:, 0] = s / 2 + (xy[:, 0] - centre[0]) * scale
    px[:, 1] = (s - label_h) / 2 + (centre[1] - xy[:, 1]) * scale
    pts = [tuple(p) for p in px.tolist()]

    img = Image.new("L", (s, s), 255)
    draw = ImageDraw.Draw(img)
    width = max(1, round(style.line * supersample))
    thin = max(1, round(0.55 * style.line * supersample))

    order = np.argsort(-depth, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))

    e = scene.edges
    fa, fb = e[:, 2], e[:, 3]
    has_b = fb >= 0
    fb_safe = np.where(has_b, fb, fa)
    vis_a, vis_b = visible[fa], visible[fb_safe] & has_b
    silhouette = has_b & (front[fa] != front[fb_safe])
    outline = (vis_a | vis_b) & (~has_b | scene.crease | silhouette)
    owner = np.where(vis_b & (~vis_a | (rank[fb_safe] > rank[fa])), fb_safe, fa)
    shade = np.zeros(len(e), dtype=bool)
    if style.shading:
        rot = camera(view, style)[0]
        n_cam = scene.normals @ rot.T
        toward = np.where(front[:, None], n_cam, -n_cam)  # the visible side of two-sided faces
        lit = toward @ _LIGHT
        grazing = np.abs(n_cam[:, 2])
        dark = np.maximum(lit[fa], lit[fb_safe]) < 0.15
        shade = (
            scene.longitudinal
            & ~outline
            & vis_a
            & vis_b
            & dark
            & (np.minimum(grazing[fa], grazing[fb_safe]) > 0.06)
        )

    env_edges = outline & scene.env[fa]
    solid = outline & ~scene.env[fa]
    # environment: broken lines, drawn first so the claimed article covers what lies behind it
    _dashed(draw, [(pts[a], pts[b]) for a, b in e[env_edges][:, :2].tolist()], width, 7 * supersample)

    by_face: dict[int, list[tuple[int, int, int]]] = {}
    for (a, b), o, w in zip(
        e[solid | shade][:, :2].tolist(),
        owner[solid | shade].tolist(),
        np.where(solid, width, thin)[solid | shade].tolist(),
        strict=True,
    ):
        by_face.setdefault(o, []).append((a, b, w))
    faces = scene.faces
    glass = scene.glass
    drawn = visible & ~scene.env
    for f in order.tolist():
        if not drawn[f]:
            continue
        poly = [pts[i] for i in faces[f]]
        draw.polygon(poly, fill=255)
        if glass[f] and front[f]:
            _glass_strokes(draw, poly, thin)
        for a, b, w in by_face.get(f, ()):
            draw.line([pts[a], pts[b]], fill=0, width=w)
    if label_h:
        font = _font(int(0.075 * s))
        draw.text((s / 2, s - label_h * 0.55), label, fill=0, font=font, anchor="mm")
    if supersample > 1:
        img = img.reduce(supersample)
    return img


def _glass_strokes(draw: ImageDraw.ImageDraw, poly: list[tuple[float, float]], width: int) -> None:
    """Two short oblique strokes across a (roughly quadrilateral) face, the patent convention for glass."""
    if len(poly) < 4:
        return
    p = np.array(poly[:4]) if len(poly) == 4 else _quad_of(np.array(poly))

    def at(u: float, v: float) -> tuple[float, float]:
        return tuple((1 - u) * (1 - v) * p[0] + u * (1 - v) * p[1] + u * v * p[2] + (1 - u) * v * p[3])

    for u0, v0, u1, v1 in ((0.18, 0.55, 0.45, 0.2), (0.3, 0.75, 0.6, 0.35), (0.62, 0.85, 0.82, 0.58)):
        draw.line([at(u0, v0), at(u1, v1)], fill=0, width=width)


def _quad_of(poly: np.ndarray) -> np.ndarray:
    """Four extreme points of a polygon, in its order (a quadrilateral standing in for it)."""
    c = poly.mean(0)
    keys = [poly @ d for d in (np.array([1, 1]), np.array([1, -1]), np.array([-1, -1]), np.array([-1, 1]))]
    idx = sorted({int(np.argmax(k)) for k in keys})
    if len(idx) < 4:
        idx = [0, len(poly) // 4, len(poly) // 2, 3 * len(poly) // 4]
    q = poly[idx]
    return c + 0.92 * (q - c)


def _dashed(draw: ImageDraw.ImageDraw, segments: list, width: int, dash: float) -> None:
    """Draw segments as one broken line: dash, gap, dash ... with the phase carried from one to the next."""
    phase = 0.0
    period = 1.7 * dash
    for (x0, y0), (x1, y1) in segments:
        length = float(np.hypot(x1 - x0, y1 - y0))
        if length < 1e-6:
            continue
        t = -phase
        while t < length:
            a, b = max(t, 0.0), min(t + dash, length)
            if b > a:
                draw.line(
                    [
                        (x0 + (x1 - x0) * a / length, y0 + (y1 - y0) * a / length),
                        (x0 + (x1 - x0) * b / length, y0 + (y1 - y0) * b / length),
                    ],
                    fill=0,
                    width=width,
                )
            t += period
        phase = (phase + length) % period
