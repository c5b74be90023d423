"""How reads decode frames: :class:`DecodeOptions`, and the one place where the
decode keyword arguments of the public API become one.

Every read that decodes — :meth:`gulpdb.Dataset.read` and
:meth:`~gulpdb.Dataset.read_batch`, the datasets of :mod:`gulpdb.torch` —
takes ``decode=DecodeOptions(...)``, or the same options as keyword
arguments (``colorspace="bgr"``, ``size=(112, 112)``, ...), or both (the
keywords then change those fields of ``decode``). :func:`decode_options`
turns them into one checked :class:`DecodeOptions`; nothing else restates
the list.

The options (``DecodeOptions(colorspace="rgb", dct="fast", downscale=1,
lenient=False, size=None, resize="short_edge", crop="center")``):

- ``colorspace``: ``"rgb"`` (default) or ``"bgr"`` give H×W×3 frames,
  ``"gray"`` H×W×1; ``"auto"`` gives RGB for colour JPEGs and H×W (no channel
  axis) for grayscale ones, as GulpIO2 does.
- ``dct``: ``"fast"`` (GulpIO2's pixels exactly) or ``"accurate"`` (libjpeg's
  defaults: GulpIO, Pillow, OpenCV).
- ``downscale``: decode at 1/1, 1/2, 1/4 or 1/8 of the size (cheaper).
- ``lenient``: accept JPEGs that libjpeg only warns about.
- ``size``: ``(height, width)``: every frame comes out that size, resized
  (and cropped or padded) in C++ on the decode threads, so frames of any sizes
  make one N×height×width×C array. Cannot be combined with ``downscale``: the
  decoder picks the DCT scaling itself (the largest 1/2, 1/4, 1/8 that still
  covers the scaled frame), then resizes bilinearly.
- ``resize``: with ``size``. ``"short_edge"``: keep the aspect ratio and scale
  until the frame covers ``size`` (the side that limits gets exactly its
  target, the other is rounded), then crop. ``"fit"``: keep the aspect ratio
  and scale until the frame fits inside ``size``, centred on black (zero)
  padding. ``"stretch"``: scale each axis to ``size``.
- ``crop``: with ``"short_edge"``: ``"center"`` keeps the middle window
  (offsets rounded down); ``"random"`` a window drawn from the read's
  ``crop_seed``. ``None`` is refused there (the scaled frame is larger than
  ``size``). ``"fit"`` and ``"stretch"`` keep the whole frame: ``"center"`` or
  ``None``.

A DecodeOptions is checked when it is made (TypeError for a value of the
wrong type, ValueError for a bad value or combination), is immutable
(:meth:`DecodeOptions.replace` makes a changed copy), compares and hashes by
value, and pickles.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from . import _gulpdb
from ._gulpdb import DecodeOptions

__all__ = ["DecodeOptions", "DECODE_KEYWORDS", "decode_options"]

#: The keyword arguments that stand for DecodeOptions fields.
DECODE_KEYWORDS = ("colorspace", "dct", "downscale", "lenient", "size", "resize", "crop")

_DEFAULT = _gulpdb.DecodeOptions()


def decode_options(
    decode: Optional[DecodeOptions], keywords: Dict[str, Any], where: str
) -> DecodeOptions:
    """``decode`` (default: ``DecodeOptions()``) with the fields in ``keywords``
    changed. TypeError naming ``where`` (the function or class the caller
    called) for a keyword that is not an option, or a ``decode`` that is not
    a DecodeOptions; the option checks' TypeError and ValueError otherwise."""
    for name in keywords:
        if name not in DECODE_KEYWORDS:
            raise TypeError(f"{where}() got an unexpected keyword argument {name!r}")
    if decode is None:
        decode = _DEFAULT
    elif not isinstance(decode, DecodeOptions):
        raise TypeError(
            f"{where}(): decode must be a gulpdb.DecodeOptions, not {type(decode).__name__}"
        )
    return decode.replace(**keywords) if keywords else decode
