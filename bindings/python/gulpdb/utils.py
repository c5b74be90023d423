"""GulpIO2's helpers (``gulpio2.utils``) for custom adapters, over gulpdb.

Adapters written for GulpIO2 import these names from ``gulpio2.utils``; with
``import gulpdb as gulpio2`` they are ``gulpio2.utils.<name>``, or import them
from ``gulpdb.utils``. Signatures and results are GulpIO2's:

- :func:`img_to_jpeg_bytes` / :func:`jpeg_bytes_to_img` use gulpdb's codec
  (libjpeg-turbo, as GulpIO2's simplejpeg): quality 90 and 4:4:4 chroma when
  encoding (the bytes are identical to GulpIO2's: the tests compare them with
  the fixtures GulpIO2 wrote), the fast IDCT with fast upsampling when decoding
  (GulpIO2's pixels exactly). A gray image (H×W) encodes as a one-channel JPEG
  and decodes back to H×W.
- :func:`resize_images` / :func:`resize_by_short_edge` read images with Pillow
  and resize with Pillow's ``BILINEAR`` filter, exactly as GulpIO2 does (same
  pixels for the same Pillow version; Pillow's bilinear filter widens its
  support when it shrinks an image, so it averages all covered pixels). The
  older GulpIO (``gulpio.utils``) used OpenCV instead: ``cv2.imread`` (BGR
  channel order, libjpeg's accurate IDCT) and ``cv2.resize`` with
  ``INTER_LINEAR``, which interpolates between the two nearest source pixels
  per axis whatever the scale (no averaging when shrinking): code ported from
  GulpIO gets RGB instead of BGR and Pillow's filter instead of OpenCV's, so
  its resized pixels are not GulpIO's. OpenCV is not used here.
- :func:`burst_video_into_frames` runs ``ffmpeg`` (``-q:v 1``, one JPEG per
  frame, ``-r frame_rate`` when given) into a temporary folder from
  :func:`temp_dir_for_bursting`.

Differences, all in what happens on failure: an image Pillow cannot open is
an :class:`ImageNotFound` (GulpIO2 lets Pillow's error through, so its own
adapters' ``except ImageNotFound`` never skips such an image); the temporary
folder of :func:`temp_dir_for_bursting` is removed even when the block raises;
:func:`get_single_video_path` raises an AssertionError that says what it found.
"""

from __future__ import annotations

import contextlib
import glob
import os
import random
import shutil
import subprocess
from typing import Any, Iterable, Iterator, List, Optional, Union

import numpy as np

from . import _gulpdb

__all__ = [
    "FFMPEGNotFound",
    "ImageNotFound",
    "DuplicateIdException",
    "check_ffmpeg_exists",
    "temp_dir_for_bursting",
    "img_to_jpeg_bytes",
    "jpeg_bytes_to_img",
    "burst_frames_to_shm",
    "burst_video_into_frames",
    "resize_images",
    "resize_by_short_edge",
    "remove_entries_with_duplicate_ids",
    "find_images_in_folder",
    "get_single_video_path",
]

# GulpIO2's JPEG quality, under both of the names its versions used. As in
# GulpIO2, _JPEG_WRITE_QUALITY is read when images are encoded, not when this
# module is imported: GulpIO2's own tests set it (to 100) before writing, and
# every gulpdb writer that encodes images without an explicit quality
# (img_to_jpeg_bytes, GulpChunk.append, ChunkWriter, GulpIngestor) uses its
# value at that moment (_write_quality()).
_JPEG_WRITE_QUALITY = 90
_DEFAULT_JPEG_QUALITY = 90


def _write_quality() -> int:
    """The JPEG quality of images encoded without an explicit one: the current
    value of ``gulpdb.utils._JPEG_WRITE_QUALITY`` (GulpIO2's knob; 90)."""
    return int(_JPEG_WRITE_QUALITY)


class FFMPEGNotFound(Exception):
    """``ffmpeg`` is not on the PATH."""


class ImageNotFound(Exception):
    """An image file that does not exist or cannot be read as an image."""


class DuplicateIdException(Exception):
    """Every item of an ingest is already in the output directory."""


def check_ffmpeg_exists() -> bool:
    """True if ``ffmpeg -version`` runs."""
    try:
        return (
            subprocess.run(
                ["ffmpeg", "-version"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            ).returncode
            == 0
        )
    except OSError:
        return False


@contextlib.contextmanager
def temp_dir_for_bursting(shm_dir_path: str = "/dev/shm") -> Iterator[str]:
    """A new folder with a random 128-bit name in ``shm_dir_path``, removed afterwards."""
    temp_dir = os.path.join(shm_dir_path, str(random.getrandbits(128)))
    os.makedirs(temp_dir)
    try:
        yield temp_dir
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)


def img_to_jpeg_bytes(img: np.ndarray, jpeg_encode_quality: Optional[int] = None) -> bytes:
    """Encodes a uint8 image, H×W (gray) or H×W×3 (RGB), as JPEG (4:4:4), at
    ``jpeg_encode_quality`` (default: ``_write_quality()``, read now)."""
    img = np.asarray(img)
    if img.ndim not in (2, 3):
        raise ValueError(f"Unsupported img shape: {img.shape}")
    quality = _write_quality() if jpeg_encode_quality is None else int(jpeg_encode_quality)
    return _gulpdb.encode_jpeg(img, quality, "444")


def jpeg_bytes_to_img(jpeg_bytes: bytes, colorspace: Optional[str] = None) -> np.ndarray:
    """Decodes a JPEG as GulpIO2 does: H×W×3 RGB, or H×W for a gray JPEG.

    ``colorspace`` (``"RGB"`` or ``"GRAY"``, of GulpIO2's earlier versions)
    forces one output: H×W×3, or H×W.
    """
    if colorspace is None:
        return _gulpdb.decode_jpeg(jpeg_bytes, "auto", "fast")
    spelled = colorspace.upper()
    if spelled == "RGB":
        return _gulpdb.decode_jpeg(jpeg_bytes, "rgb", "fast")
    if spelled in ("GRAY", "GREY"):
        return _gulpdb.decode_jpeg(jpeg_bytes, "gray", "fast")[..., 0]
    raise ValueError(f"colorspace must be None, 'RGB' or 'GRAY', not {colorspace!r}")


def burst_frames_to_shm(
    vid_path: str, temp_burst_dir: str, frame_rate: Optional[Union[int, str]] = None
) -> None:
    """Writes the frames of a video as ``temp_burst_dir/%04d.jpg`` with ffmpeg.

    Raises FFMPEGNotFound without ffmpeg; a failing ffmpeg is reported on
    stdout and leaves the frames it wrote (GulpIO2's behaviour).
    """
    if not check_ffmpeg_exists():
        raise FFMPEGNotFound()
    args = ["ffmpeg", "-nostdin", "-loglevel", "error", "-i", os.fspath(vid_path)]
    if frame_rate:
        args += ["-r", str(frame_rate)]
    args += ["-q:v", "1", "-f", "image2", os.path.join(temp_burst_dir, "%04d.jpg")]
    try:
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except subprocess.CalledProcessError as e:
        print(repr(e), e.stderr.decode("utf-8", "replace").strip())


def burst_video_into_frames(
    vid_path: str, temp_burst_dir: str, frame_rate: Optional[Union[int, str]] = None
) -> List[str]:
    """Bursts a video into ``temp_burst_dir`` and returns the frame paths, sorted."""
    burst_frames_to_shm(vid_path, temp_burst_dir, frame_rate=frame_rate)
    return find_images_in_folder(temp_burst_dir, formats=["jpg"])


def _open_image(path: str) -> Any:
    import PIL.Image

    try:
        image = PIL.Image.open(path)
        image.load()
    except (OSError, ValueError) as e:
        raise ImageNotFound(f"cannot read image {path}: {e}") from e
    return image


def resize_images(imgs: Iterable[str], img_size: int = -1) -> Iterator[np.ndarray]:
    """Yields each image file as an array, resized by its short edge when ``img_size > 0``.

    Arrays are what Pillow reads (H×W×3 for RGB files, H×W for gray ones).
    """
    for path in imgs:
        image = _open_image(path)
        if img_size > 0:
            yield resize_by_short_edge(image, img_size)
        else:
            yield np.asarray(image)


def resize_by_short_edge(img: Any, size: int) -> np.ndarray:
    """Resizes so that the short edge is ``size`` pixels (bilinear), as GulpIO2.

    ``img`` is a file path, a Pillow image or an array. The long edge becomes
    ``int(size * long / short)``; a square image becomes ``size``×``size``.
    With ``size < 1`` the image is returned unchanged, as an array.
    """
    import PIL.Image

    if isinstance(img, np.ndarray):
        img = PIL.Image.fromarray(img)
    elif isinstance(img, (str, os.PathLike)):
        img = _open_image(os.fspath(img))
    if size < 1:
        return np.asarray(img)
    w, h = img.width, img.height
    if h < w:
        new_size = (int(size * (w / float(h))), size)
    else:
        new_size = (size, int(size * (h / float(w))))
    return np.asarray(img.resize(new_size, PIL.Image.BILINEAR))


def _remove_duplicates_in_metadict(meta_dict: List[Any]) -> List[Any]:
    """The entries of ``meta_dict`` with the first of each id (others reported on stdout)."""
    seen = set()
    out = []
    for entry in meta_dict:
        id_ = entry["id"]
        if id_ in seen:
            print(f"Id {id_} more than once in json file, I skip it!")
            continue
        seen.add(id_)
        out.append(entry)
    return out


def remove_entries_with_duplicate_ids(output_directory: str, meta_dict: List[Any]) -> List[Any]:
    """Drops entries whose id repeats an earlier one or is already in ``output_directory``.

    ``meta_dict`` is a list of dicts with an ``'id'``. Raises
    DuplicateIdException when nothing is left to add.
    """
    if isinstance(meta_dict, (str, bytes, bytearray)):
        raise TypeError(
            f"meta_dict must be a list of dicts with an 'id', not {type(meta_dict).__name__}"
        )
    from .fileio import GulpDirectory

    meta_dict = _remove_duplicates_in_metadict(list(meta_dict))
    directory = GulpDirectory(output_directory, quiet=True)
    new_meta = []
    for entry in meta_dict:
        if str(entry["id"]) in directory:
            print(f"Id {entry['id']} already in GulpDirectory, I skip it!")
        else:
            new_meta.append(entry)
    if not new_meta:
        print("no items to add... Abort")
        raise DuplicateIdException
    return new_meta


def find_images_in_folder(folder: str, formats: Iterable[str] = ("jpg",)) -> List[str]:
    """Paths of the ``*.<format>`` files in ``folder``, sorted."""
    if isinstance(formats, str):
        formats = [formats]
    images: List[str] = []
    for format_ in formats:
        images.extend(glob.glob(f"{folder}/*.{format_}"))
    return sorted(images)


def get_single_video_path(folder_name: str, format_: str = "mp4") -> str:
    """The one ``*.<format_>`` file in ``folder_name``; AssertionError unless there is one."""
    found = glob.glob(f"{folder_name}/*.{format_}")
    if len(found) != 1:
        raise AssertionError(
            f"expected exactly one *.{format_} file in {folder_name}, found {len(found)}"
            + (f": {sorted(found)[:5]}" if found else "")
        )
    return found[0]
