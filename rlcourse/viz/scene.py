"""Scenes: a frame as a short list of drawing primitives, and the rasteriser that paints them.

A :class:`Scene` is ``(width, height, shapes)`` in logical pixels (origin top-left, y down). Each
shape is a plain tuple whose first two items are its kind and its style:

- ``("r", style, x, y, w, h)`` a rectangle;
- ``("l", style, x0, y0, x1, y1, ...)`` a polyline (stroked, never filled; butt caps);
- ``("p", style, x0, y0, x1, y1, ...)`` a closed polygon;
- ``("c", style, cx, cy, radius)`` a circle;
- ``("t", style, x, y, text)`` one line of text, vertically centred on ``y``.

``style`` is ``(fill, stroke, width, align)``: colours as ``"#rrggbb"`` or ``None``; ``width``
is the stroke width (the font size for text); ``align`` is ``0`` left, ``1`` centre, ``2`` right
(text only). Coordinates are rounded to 0.1 px when a shape is made, so equal-looking shapes are
equal tuples: the player stores each distinct shape once, however many frames show it.

The same shapes are drawn by Pillow here (:func:`rasterize`, for ``render`` and GIFs) and by the
browser's canvas in the HTML player, so what a test checks in the array is what a student sees.
"""

from __future__ import annotations

import functools
import math
import numbers
import os
import re
from typing import NamedTuple

import numpy as np

from ..core._checks import check_nonnegative

__all__ = ["Scene", "rasterize"]

_KINDS = {"r": 4, "l": None, "p": None, "c": 3, "t": 3}  # number of values after the style
_SUPERSAMPLE = 2  # draw at 2x and average 2x2 blocks: cheap anti-aliasing for diagonal edges


class Scene(NamedTuple):
    """One frame: ``width`` x ``height`` logical pixels and ``shapes`` drawn in order.

    ``shapes`` is a tuple of shape tuples (see the module docstring); a white background is
    implied. :func:`rasterize` turns it into an RGB array of ``[height * scale, width * scale, 3]``.
    """

    width: int
    height: int
    shapes: tuple


def _num(v) -> float | int:
    """``v`` rounded to 0.1, as an int when whole: short JSON and hashable, equal-looking shapes."""
    v = round(float(v), 1)
    return int(v) if v == int(v) else v


def style(fill=None, stroke=None, width=1.0, align=1) -> tuple:
    return (fill, stroke, _num(width), int(align))


def rect(x, y, w, h, fill=None, stroke=None, width=1.0) -> tuple:
    return ("r", style(fill, stroke, width), _num(x), _num(y), _num(w), _num(h))


def line(points, stroke, width=1.0) -> tuple:
    """A polyline through ``points`` (an iterable of ``(x, y)``)."""
    return ("l", style(None, stroke, width), *(_num(v) for p in points for v in p))


def polygon(points, fill=None, stroke=None, width=1.0) -> tuple:
    return ("p", style(fill, stroke, width), *(_num(v) for p in points for v in p))


def circle(cx, cy, r, fill=None, stroke=None, width=1.0) -> tuple:
    return ("c", style(fill, stroke, width), _num(cx), _num(cy), _num(r))


def text(x, y, s, fill="#222222", size=10, align=1) -> tuple:
    """Text centred vertically on ``y``; ``align`` 0 left, 1 centre, 2 right of ``x``."""
    return ("t", style(fill, None, size, align), _num(x), _num(y), str(s))


def shifted(shape: tuple, dx: float, dy: float) -> tuple:
    """``shape`` moved by ``(dx, dy)`` (used to lay panels side by side in one frame)."""
    kind, st, *values = shape
    if kind == "t":
        return (kind, st, _num(values[0] + dx), _num(values[1] + dy), values[2])
    if kind in "rc":
        return (kind, st, _num(values[0] + dx), _num(values[1] + dy), *values[2:])
    return (kind, st, *(_num(v + (dx if j % 2 == 0 else dy)) for j, v in enumerate(values)))


_COLOUR = re.compile(r"#[0-9a-fA-F]{6}")
MAX_PIXELS = 16_000_000  # rasterize refuses a larger image (4000 x 4000): it would exhaust memory


def _real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) \
        and math.isfinite(value)


def check_scene(name: str, scene) -> Scene:
    """``scene`` as a :class:`Scene`, or an error naming ``name`` and the first bad shape.

    Width and height are finite numbers > 0; every shape has a known kind, a style ``(fill,
    stroke, width, align)`` with colours ``"#rrggbb"`` or ``None``, a finite ``width >= 0`` and
    ``align`` 0, 1 or 2, and finite numbers for coordinates (a string for a text's text).
    """
    if not isinstance(scene, Scene):
        raise TypeError(f"{name}: expected a Scene (width, height, shapes), got {type(scene).__name__}")
    if not (_real(scene.width) and _real(scene.height) and scene.width > 0 and scene.height > 0):
        raise ValueError(f"{name}: expected a finite positive width and height, got "
                         f"{scene.width!r} x {scene.height!r}")
    if not isinstance(scene.shapes, (tuple, list)):
        raise TypeError(f"{name}: expected shapes as a tuple of shape tuples, got "
                        f"{type(scene.shapes).__name__}")
    for j, shape in enumerate(scene.shapes):
        kind = shape[0] if isinstance(shape, tuple) and shape else None
        if kind not in _KINDS or len(shape) < 3 or not isinstance(shape[1], tuple) or len(shape[1]) != 4:
            raise ValueError(f"{name}: shape {j} is {shape!r}; expected (kind, style, ...) with kind "
                             f"one of r l p c t and style (fill, stroke, width, align)")
        count = len(shape) - 2
        if kind in "lp" and (count < 4 or count % 2):
            raise ValueError(f"{name}: shape {j} ({kind!r}) needs an even number >= 4 of "
                             f"coordinates, got {count}")
        if kind not in "lp" and count != _KINDS[kind]:
            raise ValueError(f"{name}: shape {j} ({kind!r}) needs {_KINDS[kind]} values, got {count}")
        fill, stroke, width, align = shape[1]
        for colour in (fill, stroke):
            if colour is not None and not (isinstance(colour, str) and _COLOUR.fullmatch(colour)):
                raise ValueError(f"{name}: shape {j} has colour {colour!r}; expected \"#rrggbb\" or None")
        if not (_real(width) and width >= 0) or align not in (0, 1, 2) or isinstance(align, bool):
            raise ValueError(f"{name}: shape {j} has style {shape[1]!r}; expected a finite width "
                             f">= 0 and align 0, 1 or 2")
        values = shape[2:-1] if kind == "t" else shape[2:]
        if not all(_real(v) for v in values) or (kind == "t" and not isinstance(shape[-1], str)):
            raise ValueError(f"{name}: shape {j} is {shape!r}; expected finite numbers as its "
                             "coordinates" + (" and a string as its text" if kind == "t" else ""))
    return scene


@functools.lru_cache(maxsize=32)
def _font(size: float):
    """DejaVu Sans from matplotlib's own data (present wherever matplotlib is), laid out with the
    basic engine so text pixels do not depend on whether libraqm is installed."""
    from matplotlib import get_data_path
    from PIL import ImageFont

    path = os.path.join(get_data_path(), "fonts", "ttf", "DejaVuSans.ttf")
    try:
        return ImageFont.truetype(path, max(1, round(size)), layout_engine=ImageFont.Layout.BASIC)
    except OSError:  # Pillow without FreeType: a bitmap font, size ignored
        return ImageFont.load_default()


def rasterize(scene: Scene, scale: float = 2.0) -> np.ndarray:
    """Paint ``scene`` on white: ``uint8 [round(height * scale), round(width * scale), 3]``.

    Deterministic (the same scene gives the same bytes). Shapes are drawn at twice the size and
    averaged down, so slanted edges are smooth; the inside of a shape keeps its exact colour.
    ``scale`` is a finite number > 0; an image of more than 16 million pixels (4000 x 4000) is
    refused rather than exhausting memory. A bad ``scene`` (see :func:`check_scene`) is an error.
    """
    from PIL import Image, ImageDraw

    scene = check_scene("scene", scene)
    scale = check_nonnegative("scale", scale, positive=True)
    w, h = max(1, round(scene.width * scale)), max(1, round(scene.height * scale))
    if w * h > MAX_PIXELS:
        raise ValueError(f"scale: the scene ({scene.width} x {scene.height}) at scale {scale:g} would "
                         f"be a {w} x {h} image, more than {MAX_PIXELS} pixels; lower the scale or "
                         "the scene size")
    s = scale * _SUPERSAMPLE
    image = Image.new("RGB", (w * _SUPERSAMPLE, h * _SUPERSAMPLE), "#ffffff")
    draw = ImageDraw.Draw(image)
    for shape in scene.shapes:
        kind, (fill, stroke, width, align), *v = shape
        px = max(1, round(width * s))
        # Pillow draws an outline inside the shape's box, a canvas centres it on the edge: the
        # outline goes in a box grown by half its width, so both draw the same pixels.
        half = px / 2
        if kind == "r":
            x, y, rw, rh = (c * s for c in v)
            if fill:
                draw.rectangle([x, y, x + rw - 1, y + rh - 1], fill=fill)
            if stroke:
                draw.rectangle([x - half, y - half, x + rw - 1 + half, y + rh - 1 + half],
                               outline=stroke, width=px)
        elif kind == "c":
            cx, cy, r = (c * s for c in v)
            if fill:
                draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=fill)
            if stroke:
                r += half
                draw.ellipse([cx - r, cy - r, cx + r, cy + r], outline=stroke, width=px)
        elif kind == "l":
            points = [(v[j] * s, v[j + 1] * s) for j in range(0, len(v), 2)]
            draw.line(points, fill=stroke, width=px, joint="curve" if len(points) > 2 else None)
        elif kind == "p":
            points = [(v[j] * s, v[j + 1] * s) for j in range(0, len(v), 2)]
            draw.polygon(points, fill=fill, outline=stroke, width=px if stroke else 0)
        else:
            anchor = ("lm", "mm", "rm")[align]
            draw.text((v[0] * s, v[1] * s), v[2], fill=fill, font=_font(width * s), anchor=anchor)
    image = image.reduce(_SUPERSAMPLE)
    return np.asarray(image, dtype=np.uint8).copy()
