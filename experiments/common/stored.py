"""Reading the files the package writes, checked: a file is read from its plain form or, where
only that exists, its gzip-compressed form ``<name>.gz`` (the archive of full-size results
keeps its run files so); a file that is not a regular file, too large, not UTF-8 or not
gzip data is refused with one ValueError naming it, before it is read whole; a JSON
document is checked against the shape its reader expects (:func:`check_shape`). The compressed
form is made here too (:func:`compress_bytes`), so that the two forms have one home."""
from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

from resharpen.experiments.common.io import file_kind, quiet_exists, short_repr
from resharpen.experiments.common.json_text import loads_json

MAX_READ_BYTES = 256 * 2**20
"""The largest file the package reads as text or JSON (256 MiB: a long run's metrics.jsonl has a
few MB, a sweep table of 100,000 runs about 100 MB): a larger one is refused, before it is read,
with one ValueError naming it, so ``--baseline /dev/zero`` cannot read until memory runs out."""


COMPRESSED_SUFFIX = ".gz"
"""The suffix of a file kept gzip-compressed where its plain form would be (``summary.json.gz``
for ``summary.json``): the archive of full-size results keeps its run files so. Every reader
reads either form (:func:`read_text_file`, through :func:`stored_file`); writers of live results
write the plain form."""


def compressed_path(path: str | os.PathLike) -> Path:
    """The compressed form of ``path``: ``<path>.gz`` (:data:`COMPRESSED_SUFFIX`)."""
    path = Path(path)
    return path.with_name(path.name + COMPRESSED_SUFFIX)


def stored_file(path: str | os.PathLike) -> Path:
    """The file that holds the content of ``path``: ``path`` itself when anything is there (a
    file, or a folder or link that its reader then refuses), else its compressed form
    ``<path>.gz`` when that exists, else ``path`` (missing: the reader names it)."""
    path = Path(path)
    packed = compressed_path(path)
    return packed if not os.path.lexists(path) and os.path.lexists(packed) else path


def stored_exists(path: str | os.PathLike) -> bool:
    """Whether ``path`` exists in either form, plain or compressed (:func:`stored_file`)."""
    return quiet_exists(stored_file(path))


def compress_bytes(data: bytes) -> bytes:
    """``data`` gzip-compressed, the same bytes for the same data (no time or name stored)."""
    import gzip

    return gzip.compress(data, compresslevel=9, mtime=0)


def decompress_bytes(data: bytes, path: Path, what: str, kind: str,
                     max_bytes: int = MAX_READ_BYTES) -> bytes:
    """The content of the gzip-compressed file ``path`` (its bytes ``data``), never more than
    ``max_bytes`` + 1 bytes of it (a file that expands beyond ``max_bytes`` is refused, like a
    plain one that large); ValueError naming the file when it is not gzip data."""
    import gzip
    import io as _io
    import zlib

    try:
        with gzip.GzipFile(fileobj=_io.BytesIO(data)) as handle:
            plain = handle.read(max_bytes + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise ValueError(f"{what} {str(path)!r} is not a gzip-compressed {kind} (corrupt?): "
                         f"{exc}") from None
    if len(plain) > max_bytes:
        raise ValueError(f"{what} {str(path)!r} expands to more than {max_bytes} bytes, more "
                         f"than any {kind} the package writes; it is refused")
    return plain


def read_text_file(path: str | os.PathLike, what: str, kind: str,
                   max_bytes: int = MAX_READ_BYTES) -> str:
    """The UTF-8 text of ``path``, read from its compressed form ``<path>.gz`` when only that
    exists (:func:`stored_file`); FileNotFoundError when neither exists, ValueError naming the
    file (``what``) when it is a folder, not a regular file (a device such as /dev/zero, a FIFO,
    a socket), larger than ``max_bytes`` (compressed or expanded), unreadable, not gzip data
    (the compressed form) or not UTF-8 (``kind``: what it should be)."""
    path = Path(path)
    source = stored_file(path)
    data = read_bytes_file(source, what, kind, max_bytes)
    if source != path:
        data = decompress_bytes(data, source, what, kind, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{what} {str(source)!r} is not UTF-8 text (corrupt?)") from None


def read_bytes_file(path: str | os.PathLike, what: str, kind: str,
                    max_bytes: int = MAX_READ_BYTES) -> bytes:
    """The bytes of ``path``, as they are on disk; FileNotFoundError when it is missing,
    ValueError naming the file (``what``) when it is a folder, not a regular file, larger than
    ``max_bytes`` or unreadable (``kind``: what it should be). The file is opened without
    blocking (a FIFO with no writer) and never read beyond ``max_bytes`` + 1 bytes."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} {str(path)!r} does not exist") from None
    except OSError as exc:  # unreadable: permissions, an I/O error, a symlink loop
        raise ValueError(f"{what} {str(path)!r} cannot be read: {exc.strerror or exc}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ValueError(f"{what} {str(path)!r} is a folder, not a {kind}")
        raise ValueError(f"{what} {str(path)!r} is {file_kind(path, info.st_mode)}, not a "
                         f"{kind}: the package reads only regular files")
    with os.fdopen(fd, "rb") as handle:
        too_big = (f"{what} {str(path)!r} has more than {max_bytes} bytes, more than any "
                   f"{kind} the package writes; it is refused unread")
        if info.st_size > max_bytes:
            raise ValueError(too_big)
        try:
            data = handle.read(max_bytes + 1)
        except OSError as exc:
            raise ValueError(f"{what} {str(path)!r} cannot be read: {exc.strerror or exc}"
                             ) from None
    if len(data) > max_bytes:  # grew while being read
        raise ValueError(too_big)
    return data


def read_json(path: str | os.PathLike, what: str = "file", shape: object = None,
              max_bytes: int = MAX_READ_BYTES) -> object:
    """The JSON document in ``path``, checked against ``shape`` (:func:`check_shape`) when
    given; ValueError naming the file (and the line, or the field) when it is not valid JSON or
    UTF-8, nests too deep, has the wrong shape or is too large (:func:`read_text_file`);
    FileNotFoundError when it is missing."""
    text = read_text_file(path, what, "JSON file", max_bytes)
    try:
        value = loads_json(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} {str(path)!r} is corrupt: line {exc.lineno}: {exc.msg}"
                         ) from None
    except RecursionError:
        raise ValueError(f"{what} {str(path)!r} nests its arrays or objects too deep to read "
                         "(no file of the package nests more than a few levels)") from None
    if shape is not None:
        check_shape(value, shape, f"{what} {str(path)!r}")
    return value


def read_jsonl(path: str | os.PathLike, what: str = "file", shape: object = None,
               max_bytes: int = MAX_READ_BYTES) -> list:
    """The JSON lines of ``path`` (blank lines skipped), each checked (against ``shape`` too,
    when given); ValueError naming the file and the line of the first bad one,
    FileNotFoundError when it is missing."""
    text = read_text_file(path, what, "JSON lines file", max_bytes)
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                rows.append(loads_json(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{what} {str(path)!r} is corrupt: line {number}: {exc.msg}"
                                 ) from None
            except RecursionError:
                raise ValueError(f"{what} {str(path)!r}: line {number} nests too deep to read"
                                 ) from None
            if shape is not None:
                check_shape(rows[-1], shape, f"{what} {str(path)!r}, line {number}")
    return rows


NUMBER = "number"
"""A :func:`check_shape` shape: an int or float (not a bool), NaN and infinities allowed."""


FINITE = "finite number"
"""A :func:`check_shape` shape: a finite int or float (not a bool)."""


def check_shape(value: object, shape: object, where: str, field: str = "") -> None:
    """ValueError naming ``where`` and the field (``by_weights.raw.ood_kl``, ``[3]``) unless
    ``value`` has ``shape``:

    - a type (``dict``, ``list``, ``str``, ``bool``, ``type(None)``), :data:`NUMBER` or
      :data:`FINITE`;
    - a tuple of shapes: any one of them;
    - a dict ``{key: shape}``: a JSON object holding every key, each of that shape (other keys
      are allowed); a key written ``"key?"`` may be missing;
    - a one-item list ``[shape]``: a JSON array whose every item has that shape."""
    if isinstance(shape, tuple):
        errors = []
        for option in shape:
            try:
                check_shape(value, option, where, field)
                return
            except ValueError as exc:
                errors.append(exc)
        raise _shape_error(where, field, value, " or ".join(_shape_name(o) for o in shape))
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            raise _shape_error(where, field, value, "an object")
        for key, inner in shape.items():
            optional = key.endswith("?")
            key = key.rstrip("?")
            if key not in value:
                if optional:
                    continue
                raise ValueError(f"{where}: {_join(field, key)} is missing")
            check_shape(value[key], inner, where, _join(field, key))
        return
    if isinstance(shape, list):
        if not isinstance(value, list):
            raise _shape_error(where, field, value, "an array")
        for index, item in enumerate(value):
            check_shape(item, shape[0], where, f"{field}[{index}]")
        return
    if shape in (NUMBER, FINITE):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok and shape == FINITE and not math.isfinite(value):
            raise ValueError(f"{where}: {field or 'the value'} is {value}, not a finite number")
        if ok:
            return
        raise _shape_error(where, field, value, _shape_name(shape))
    if not (isinstance(value, shape) and (shape is bool or not isinstance(value, bool))):
        raise _shape_error(where, field, value, _shape_name(shape))


def _join(field: str, key: str) -> str:
    return f"{field}.{key}" if field else key


def _shape_name(shape: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "true or false",
             type(None): "null", int: "an integer", float: "a number"}
    if isinstance(shape, str):
        return f"a {shape}"
    if isinstance(shape, dict):
        return "an object"
    if isinstance(shape, list):
        return "an array"
    return names.get(shape, getattr(shape, "__name__", str(shape)))


def _shape_error(where: str, field: str, value: object, expected: str) -> ValueError:
    shown = ("an object" if isinstance(value, dict) else "an array" if isinstance(value, list)
             else "null" if value is None else str(value).lower() if isinstance(value, bool)
             else short_repr(value, 40) if isinstance(value, str) else repr(value))
    return ValueError(f"{where}: {field or 'the document'} is {shown}, not {expected} (a file "
                      "this package did not write, or a corrupt one)")
