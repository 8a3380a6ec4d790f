"""3-D primitives as polygon meshes: lofts, extrusions, surfaces of revolution, sweeps, tori, boxes.

Coordinates are right-handed with ``x`` to the article's right, ``y`` towards its back and ``z`` up; the
front of an article faces ``-y``. Every primitive is built from one routine, ``grid``, which joins rings of
points (sections ``[n, k, 3]``) by quads, so the renderer knows which edges run along a surface
("longitudinal" edges, where shading lines go) and which faces are caps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Mesh:
    """A polygon mesh of one part.

    ``vertices`` is ``[V, 3]``; ``faces`` lists vertex-index tuples (3 or more, counter-clockwise seen from
    outside on a closed mesh). ``closed`` meshes have their back faces culled; open ones (a lampshade, a
    bowl) show both sides. ``env`` marks an environment part drawn in broken lines; ``glass`` holds the
    indices of faces drawn with oblique reflection strokes (screens, lenses); ``longitudinal`` holds the
    vertex pairs ``(a, b)`` with ``a < b`` of edges that run along a curved surface.
    """

    vertices: np.ndarray
    faces: list[tuple[int, ...]]
    closed: bool = True
    env: bool = False
    glass: set[int] = field(default_factory=set)
    longitudinal: set[tuple[int, int]] = field(default_factory=set)

    def transformed(self, matrix: np.ndarray | None = None, offset: Sequence[float] = (0, 0, 0)) -> Mesh:
        """A copy with ``v @ matrix.T + offset`` applied to every vertex (``matrix`` is ``[3, 3]``)."""
        v = self.vertices if matrix is None else self.vertices @ np.asarray(matrix, dtype=float).T
        faces = self.faces
        if matrix is not None and np.linalg.det(matrix) < 0:
            faces = [tuple(reversed(f)) for f in faces]
        return Mesh(
            v + np.asarray(offset, dtype=float),
            faces,
            self.closed,
            self.env,
            set(self.glass),
            set(self.longitudinal),
        )

    def moved(self, x: float = 0.0, y: float = 0.0, z: float = 0.0) -> Mesh:
        return self.transformed(None, (x, y, z))

    def rotated(self, axis: str, degrees: float) -> Mesh:
        return self.transformed(rotation(axis, degrees))

    def scaled(self, sx: float, sy: float | None = None, sz: float | None = None) -> Mesh:
        return self.transformed(np.diag([sx, sx if sy is None else sy, sx if sz is None else sz]))

    def as_env(self) -> Mesh:
        m = self.transformed()
        m.env = True
        return m

    def with_glass(self, faces: Sequence[int]) -> Mesh:
        m = self.transformed()
        m.glass = set(faces)
        return m


def rotation(axis: str, degrees: float) -> np.ndarray:
    """The ``[3, 3]`` matrix of a right-handed rotation about ``x``, ``y`` or ``z``."""
    a = np.radians(degrees)
    c, s = np.cos(a), np.sin(a)
    if axis == "x":
        return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
    if axis == "y":
        return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    if axis == "z":
        return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    raise ValueError(f"axis must be 'x', 'y' or 'z', got {axis!r}")


# -- 2-D contours --------------------------------------------------------------------------------
def circle(radius: float, k: int = 32, rx: float | None = None) -> np.ndarray:
    """``[k, 2]`` points of a circle (or an ellipse with x-radius ``rx``), counter-clockwise."""
    t = np.linspace(0, 2 * np.pi, k, endpoint=False)
    return np.stack([(radius if rx is None else rx) * np.cos(t), radius * np.sin(t)], axis=1)


def rounded_rect(w: float, h: float, r: float, per_corner: int = 4) -> np.ndarray:
    """``[4 * per_corner, 2]`` points of a ``w`` x ``h`` rectangle centred at 0 with corner radius ``r``.

    ``per_corner=1`` (or ``r=0``) gives the plain rectangle's four corners."""
    r = float(min(max(r, 0.0), w / 2 * 0.999, h / 2 * 0.999))
    if r <= 0 or per_corner <= 1:
        return np.array([[w / 2, -h / 2], [w / 2, h / 2], [-w / 2, h / 2], [-w / 2, -h / 2]], dtype=float)
    pts = []
    centres = [
        (w / 2 - r, -h / 2 + r),
        (w / 2 - r, h / 2 - r),
        (-w / 2 + r, h / 2 - r),
        (-w / 2 + r, -h / 2 + r),
    ]
    for i, (cx, cy) in enumerate(centres):
        for t in np.linspace(-np.pi / 2 + i * np.pi / 2, i * np.pi / 2, per_corner):
            pts.append((cx + r * np.cos(t), cy + r * np.sin(t)))
    return np.array(pts, dtype=float)


def superellipse(w: float, h: float, n: float = 4.0, k: int = 32) -> np.ndarray:
    """``[k, 2]`` points of a superellipse ``|x/a|^n + |y/b|^n = 1`` (a squircle for ``n = 4``)."""
    t = np.linspace(0, 2 * np.pi, k, endpoint=False)
    c, s = np.cos(t), np.sin(t)
    return np.stack([w / 2 * np.sign(c) * np.abs(c) ** (2 / n), h / 2 * np.sign(s) * np.abs(s) ** (2 / n)], 1)


# -- the one mesh builder ----------------------------------------------------------------------------
def grid(
    sections: np.ndarray,
    close_ring: bool = True,
    close_path: bool = False,
    cap_start: bool = False,
    cap_end: bool = False,
    closed: bool | None = None,
) -> Mesh:
    """Join ``n`` rings of ``k`` points (``sections`` ``[n, k, 3]``) by quads.

    A ring whose points coincide becomes one apex vertex (its quads become triangles). ``cap_start`` and
    ``cap_end`` close the first and last ring by one polygon. The mesh is ``closed`` (back faces culled)
    when both ends are capped or apexes, or the path is closed; faces of a closed mesh are oriented
    outwards (by the sign of the enclosed volume).
    """
    sections = np.asarray(sections, dtype=float)
    n, k, _ = sections.shape
    index = np.zeros((n, k), dtype=np.int64)
    verts: list[np.ndarray] = []
    apex = []
    for i in range(n):
        ring = sections[i]
        if np.ptp(ring, axis=0).max() < 1e-9:
            index[i, :] = len(verts)
            verts.append(ring[0])
            apex.append(True)
        else:
            index[i, :] = np.arange(len(verts), len(verts) + k)
            verts.extend(ring)
            apex.append(False)
    faces: list[tuple[int, ...]] = []
    longitudinal: set[tuple[int, int]] = set()
    rows = range(n) if close_path else range(n - 1)
    cols = range(k) if close_ring else range(k - 1)
    for i in rows:
        i2 = (i + 1) % n
        for j in cols:
            j2 = (j + 1) % k
            quad = (index[i, j], index[i, j2], index[i2, j2], index[i2, j])
            face = tuple(int(q) for q2, q in enumerate(quad) if q != quad[q2 - 1])
            if len(face) >= 3:
                faces.append(face)
        for j in range(k if k >= 20 else 0):  # shading lines only on finely divided curved surfaces
            a, b = int(index[i, j]), int(index[i2, j])
            if a != b:
                longitudinal.add((min(a, b), max(a, b)))
    if cap_start and not apex[0]:
        faces.append(tuple(int(q) for q in index[0, ::-1]))
    if cap_end and not apex[-1]:
        faces.append(tuple(int(q) for q in index[-1]))
    if closed is None:
        closed = close_path or ((cap_start or apex[0]) and (cap_end or apex[-1]))
    v = np.array(verts)
    if closed and _signed_volume(v, faces) < 0:
        faces = [tuple(reversed(f)) for f in faces]
    return Mesh(v, faces, closed=closed, longitudinal=longitudinal)


def _signed_volume(v: np.ndarray, faces: list[tuple[int, ...]]) -> float:
    tris = np.array([(f[0], f[j], f[j + 1]) for f in faces for j in range(1, len(f) - 1)], dtype=np.int64)
    if len(tris) == 0:
        return 0.0
    a, b, c = v[tris[:, 0]], v[tris[:, 1]], v[tris[:, 2]]
    cross = np.stack(
        [
            b[:, 1] * c[:, 2] - b[:, 2] * c[:, 1],
            b[:, 2] * c[:, 0] - b[:, 0] * c[:, 2],
            b[:, 0] * c[:, 1] - b[:, 1] * c[:, 0],
        ],
        1,
    )
    return float(np.einsum("ij,ij->", a, cross)) / 6.0


# -- primitives ------------------------------------------------------------------------------------
def loft(contours: Sequence[np.ndarray], zs: Sequence[float], caps: bool = True) -> Mesh:
    """Stack 2-D contours (each ``[k, 2]``, equal ``k``) at heights ``zs`` along ``z``; cap both ends."""
    sections = np.stack([np.column_stack([c, np.full(len(c), z)]) for c, z in zip(contours, zs, strict=True)])
    return grid(sections, cap_start=caps, cap_end=caps)


def extrude(contour: np.ndarray, height: float, z0: float = 0.0) -> Mesh:
    """A prism: the 2-D ``contour`` ``[k, 2]`` extruded along ``z`` from ``z0`` to ``z0 + height``."""
    return loft([contour, contour], [z0, z0 + height])


def box(sx: float, sy: float, sz: float, center: Sequence[float] = (0, 0, 0), radius: float = 0.0) -> Mesh:
    """An axis-aligned box centred at ``center``; ``radius > 0`` rounds its vertical edges."""
    contour = rounded_rect(sx, sy, radius, per_corner=4 if radius > 0 else 1)
    return extrude(contour, sz, -sz / 2).moved(*center)


def revolve(
    profile: Sequence[tuple[float, float]], k: int = 32, caps: bool = True, closed: bool | None = None
) -> Mesh:
    """A surface of revolution about ``z`` of the ``(radius, z)`` profile; a zero radius is an apex."""
    ring = circle(1.0, k)
    sections = np.stack([np.column_stack([ring * r, np.full(k, z)]) for r, z in profile])
    return grid(sections, cap_start=caps, cap_end=caps, closed=closed)


def cylinder(radius: float, height: float, k: int = 32, z0: float = 0.0) -> Mesh:
    return revolve([(radius, z0), (radius, z0 + height)], k)


def cone(r0: float, r1: float, height: float, k: int = 32, z0: float = 0.0) -> Mesh:
    return revolve([(r0, z0), (r1, z0 + height)], k)


def sweep(
    path: np.ndarray,
    radius: float | Sequence[float],
    k: int = 12,
    closed_path: bool = False,
    caps: bool = True,
    profile: np.ndarray | None = None,
) -> Mesh:
    """A tube along the 3-D polyline ``path`` ``[n, 3]`` (parallel-transport frames).

    ``radius`` is one value or one per path point; ``profile`` (``[k, 2]``, unit scale) replaces the circle.
    """
    path = np.asarray(path, dtype=float)
    n = len(path)
    radii = np.broadcast_to(np.asarray(radius, dtype=float), (n,))
    if closed_path:
        tangents = np.roll(path, -1, 0) - np.roll(path, 1, 0)
    else:
        tangents = np.gradient(path, axis=0)
    tangents /= np.linalg.norm(tangents, axis=1, keepdims=True)
    ref = np.array([0.0, 0.0, 1.0]) if abs(tangents[0, 2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    normal = np.cross(tangents[0], ref)
    normal /= np.linalg.norm(normal)
    shape = circle(1.0, k) if profile is None else np.asarray(profile, dtype=float)
    sections = []
    for i in range(n):
        t = tangents[i]
        normal = normal - np.dot(normal, t) * t
        normal /= np.linalg.norm(normal)
        binormal = np.cross(t, normal)
        sections.append(path[i] + radii[i] * (shape[:, :1] * normal + shape[:, 1:] * binormal))
    return grid(
        np.stack(sections),
        close_path=closed_path,
        cap_start=caps and not closed_path,
        cap_end=caps and not closed_path,
    )


def tube(p0: Sequence[float], p1: Sequence[float], radius: float, k: int = 12) -> Mesh:
    """A capped cylinder from point ``p0`` to point ``p1``."""
    return sweep(np.array([p0, p1], dtype=float), radius, k)


def torus(major: float, minor: float, k_major: int = 32, k_minor: int = 12) -> Mesh:
    """A torus about ``z`` centred at the origin."""
    t = np.linspace(0, 2 * np.pi, k_major, endpoint=False)
    path = np.stack([major * np.cos(t), major * np.sin(t), np.zeros_like(t)], 1)
    return sweep(path, minor, k_minor, closed_path=True)


def arc_path(radius: float, start_deg: float, end_deg: float, n: int = 12, plane: str = "xz") -> np.ndarray:
    """``[n, 3]`` points of a circular arc in the ``xz``, ``yz`` or ``xy`` plane centred at the origin."""
    t = np.radians(np.linspace(start_deg, end_deg, n))
    a, b = radius * np.cos(t), radius * np.sin(t)
    zero = np.zeros_like(t)
    if plane == "xz":
        return np.stack([a, zero, b], 1)
    if plane == "yz":
        return np.stack([zero, a, b], 1)
    if plane == "xy":
        return np.stack([a, b, zero], 1)
    raise ValueError(f"plane must be 'xz', 'yz' or 'xy', got {plane!r}")


def bounds(meshes: Sequence[Mesh]) -> tuple[np.ndarray, np.ndarray]:
    """The ``[3]`` lower and upper corners of the meshes' bounding box."""
    v = np.concatenate([m.vertices for m in meshes])
    return v.min(0), v.max(0)
