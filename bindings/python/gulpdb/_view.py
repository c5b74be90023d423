"""gulpdb.view: the dataset viewer, the server ``gulpdb view`` runs, from Python.

The server is C++ (the same one as the command's), answering from threads of
its own without the GIL; Python only starts and stops it. See docs/view.md.
"""

from __future__ import annotations

import os
import webbrowser
from typing import Any, Optional, Union

from . import _gulpdb
from ._dataset import Dataset


class Viewer:
    """A running viewer of one dataset: open :attr:`url` in a browser.

    Made by :func:`gulpdb.view`. A context manager: leaving the ``with``
    block stops the server (as :meth:`close`).
    """

    def __init__(self, native: _gulpdb.ViewServer, dataset: Dataset) -> None:
        self._native = native
        self._dataset = dataset  # the read-only handle the server reads

    @property
    def url(self) -> str:
        """``http://HOST:PORT/?token=TOKEN``: the page, with the token that opens it."""
        return self._native.url

    @property
    def port(self) -> int:
        """The port the server listens on."""
        return self._native.port

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._native.closed

    def open_browser(self) -> bool:
        """Opens :attr:`url` in the default browser; False when none could be started."""
        return webbrowser.open(self.url)

    def close(self) -> None:
        """Stops the server: requests in flight finish, kept-alive browser
        connections are closed within two seconds. Safe to call twice."""
        if not self._native.closed:
            self._native.close()
        self._dataset.close()

    def __enter__(self) -> "Viewer":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __del__(self) -> None:
        native = getattr(self, "_native", None)
        if native is not None and not native.closed:
            try:
                self.close()
            except Exception:  # at interpreter exit modules may be gone
                pass

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"port={self.port}"
        return f"<gulpdb.Viewer {self._dataset.path!r} {state}>"


def view(
    dataset: Union[str, "os.PathLike[str]", Dataset],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    label_key: str = "label",
    thumb_size: int = 160,
    index_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
    open_browser: bool = False,
) -> Viewer:
    """Serves a read-only web page for browsing ``dataset``, as ``gulpdb view`` does.

    Args:
        dataset: a dataset directory, an ``s3://`` URL of a published
            dataset, or an open :class:`Dataset` (the viewer opens its own
            read-only handle on the same data; a remote one keeps its
            generation).
        host: the address to listen on; anything but a loopback address
            reaches other machines (the token still guards every request).
        port: the port; 0 lets the system choose a free one (see
            :attr:`Viewer.port`).
        label_key: the meta key shown as each video's label and charted.
        thumb_size: the longest side of a thumbnail, 16 to 1024 pixels.
        index_dir: where the index lives, for a path (as :class:`Dataset`).
        open_browser: also open the page in the default browser.

    Returns:
        A running :class:`Viewer` (``.url``, ``.close()``, a context manager).

    Raises:
        FileNotFoundError: no dataset there. ValueError: a bad port, host or
        thumbnail size. OSError: the address cannot be listened on.
        TypeError: an argument of the wrong type.
    """
    for name, value in (("port", port), ("thumb_size", thumb_size)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    for name, value in (("host", host), ("label_key", label_key)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if isinstance(dataset, Dataset):
        if index_dir is not None:
            raise ValueError("index_dir applies to a path, not to an open Dataset")
        reader = dataset._reopened(verify_checksums=True)
    elif isinstance(dataset, (str, os.PathLike)):
        reader = Dataset(dataset, index_dir=index_dir, verify_checksums=True)
    else:
        raise TypeError(
            f"dataset must be a path, an s3:// URL or a gulpdb.Dataset, not {type(dataset).__name__}"
        )
    try:
        native = _gulpdb.ViewServer(reader._native(), host, port, label_key, thumb_size)
    except BaseException:
        reader.close()
        raise
    viewer = Viewer(native, reader)
    if open_browser:
        viewer.open_browser()
    return viewer
