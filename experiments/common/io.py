"""Atomic file output: write to a temporary file in the same folder, then rename.

A reader (or a crash) never sees a half-written file: either the old content or the new. The
temporary file of ``name`` is ``.<name>.resharpen-<random>.tmp`` (:data:`TEMP_MARK`), so that the
clean-up after a killed writer (:func:`remove_stale_temporaries`) removes only files this package
wrote, for the names it writes, in the folders it writes them to.

Two more guarantees for a folder the user names:

- nothing is written outside it through a symbolic link inside it (:func:`check_within`: a
  ``runs/`` that links elsewhere is refused before the first write);
- a write that fails (a full disk: ``OSError`` ENOSPC, named with the file by
  :func:`atomic_write_with`) leaves no half-written result: :func:`undo_on_failure` removes the
  files written and the folders created in the block, only those, and the command line prints
  one line (``resharpen.cli.main``)."""
from __future__ import annotations

import contextlib
import errno
import json
import os
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

TEMP_MARK = ".resharpen-"
"""What every temporary file of this package has after its target's name: ``.<name>.resharpen-``."""


def ensure_writable_dir(path: str | os.PathLike, what: str = "output folder",
                        try_write: bool = True) -> Path:
    """Create ``path`` (and parents) if needed; ValueError if it cannot be a writable folder
    (writability is tried with a temporary file, not ``os.access``, which is true for root;
    ``try_write=False`` when the caller writes there at once anyway)."""
    path = Path(path)
    check_names(path, what)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ValueError(f"{what} {str(path)!r} exists and is not a folder") from None
    except OSError as exc:
        raise ValueError(f"{what} {str(path)!r} cannot be created: {exc.strerror}") from None
    if not path.is_dir():
        raise ValueError(f"{what} {str(path)!r} exists and is not a folder")
    if try_write:
        try_writing(path, f"{what} {str(path)!r}")
    return path


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long, a symlink loop: nothing that exists
        return False


def check_names(path: Path, what: str) -> None:
    """ValueError if a component of ``path`` is longer than the file system allows."""
    probe = Path(path)
    while not _exists(probe) and probe.parent != probe:
        probe = probe.parent
    try:
        name_max = os.pathconf(probe if _exists(probe) else ".", "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    for part in Path(path).parts:
        if len(os.fsencode(part)) > name_max:
            raise ValueError(f"{what} {_short(str(path), 60)}: the name {_short(part, 24)} has "
                             f"{len(os.fsencode(part))} bytes; the file system allows {name_max}")


def _short(text: str, width: int) -> str:
    return repr(text) if len(text) <= width else repr(text[:width]) + "..."


def try_writing(folder: Path, what: str) -> None:
    """ValueError naming ``what`` unless a file can be created in the existing ``folder``
    (``os.access`` would not do: it is true for root everywhere, and false on some writable
    network file systems). The file is an unnamed one (Linux ``O_TMPFILE``), so a process killed
    mid-check leaves nothing; where the file system has no unnamed files, a named temporary file
    (this package's temp-file pattern) is created and removed at once."""
    try:
        fd = os.open(folder, getattr(os, "O_TMPFILE", 0) | os.O_WRONLY, 0o600)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
            raise ValueError(f"{what} is not writable ({str(folder)!r}: {exc.strerror})") from None
    else:
        os.close(fd)
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".probe{TEMP_MARK}", suffix=".tmp")
    except OSError as exc:
        raise ValueError(f"{what} is not writable ({str(folder)!r}: {exc.strerror})") from None
    os.close(fd)
    os.unlink(tmp)


def check_writable_target(path: str | os.PathLike, what: str = "output path") -> Path:
    """ValueError unless ``path`` could be created as (or is) a writable folder; creates nothing
    that stays (writability is tried with a temporary file in the nearest existing folder).

    Used before long work so that a bad --out fails first, without leaving empty folders."""
    path = Path(path)
    check_names(path, what)
    probe = path
    while not _exists(probe):
        if probe.parent == probe:
            break
        probe = probe.parent
    if _exists(probe) and not probe.is_dir():
        raise ValueError(f"{what} {str(path)!r} is blocked: {str(probe)!r} is not a folder")
    try_writing(probe, f"{what} {str(path)!r}")
    return path


def check_within(root: str | os.PathLike, path: str | os.PathLike, what: str = "output") -> Path:
    """ValueError unless ``path`` (a folder or file this package will write under the named
    folder ``root``) stays inside ``root`` once symbolic links are followed: a link inside the
    named folder (say a ``runs/`` pointing elsewhere) would make the package write outside the
    folder the user named. ``root`` itself may be anywhere (it is resolved too)."""
    root, path = Path(root), Path(path)
    try:
        real_root, real = root.resolve(), path.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise ValueError(f"{what} {str(path)!r} cannot be resolved: {exc}") from None
    if real != real_root and real_root not in real.parents:
        raise ValueError(f"{what} {str(path)!r} leads outside {str(root)!r} (to {str(real)!r}, "
                         "through a symbolic link); the package writes only inside the folder "
                         "named; remove the link or choose another folder")
    return path


_JOURNALS: list[list[Path]] = []
"""The open :func:`undo_on_failure` blocks' lists of the files created in them (innermost last)."""


def _record_new_file(path: Path) -> None:
    for journal in _JOURNALS:
        journal.append(path)


@contextlib.contextmanager
def undo_on_failure(folder: str | os.PathLike, remove_written: bool = True,
                    own_files: tuple[str, ...] = ()) -> Iterator[Path]:
    """Run a block that writes into ``folder``; if it raises (a full disk, an interrupt, a bug),
    remove what the block made and nothing else, then re-raise:

    - the files it created through :func:`atomic_write_with` (with ``remove_written``; a file
      that existed before and was replaced stays replaced: its old bytes are gone);
    - ``folder`` and its missing parents, each only if this block created it (it did not exist
      when the block began), once empty: its empty sub-folders go with it, and with them the
      package's ``own_files`` (e.g. a sweep's lock file); a file anyone else put there keeps the
      folder.

    Nested blocks each undo their own writes (a sweep keeps its finished runs when a later one
    fails: each run is its own block)."""
    folder = Path(folder)
    created, probe = [], folder
    while not _exists(probe) and probe.parent != probe:
        created.append(probe)
        probe = probe.parent
    journal: list[Path] = []
    _JOURNALS.append(journal)
    try:
        yield folder
    except BaseException:
        if remove_written:
            for path in reversed(journal):
                with contextlib.suppress(OSError):
                    path.unlink()
        for made in created:  # deepest first
            _prune(made, own_files)
        raise
    finally:  # by identity: two journals with the same files are equal lists
        del _JOURNALS[next(i for i, j in enumerate(_JOURNALS) if j is journal)]


def _prune(folder: Path, own_files: tuple[str, ...]) -> None:
    """Remove ``folder`` (made by this package in this invocation) if nothing is left in it
    but empty folders and the package's ``own_files``."""
    if folder.is_symlink() or not folder.is_dir():
        return
    for entry in list(folder.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            _prune(entry, own_files)
    left = list(folder.iterdir())
    if all(entry.name in own_files and entry.is_file() and not entry.is_symlink()
           for entry in left):  # only the package's own files: they go with the folder
        with contextlib.suppress(OSError):
            for entry in left:
                entry.unlink()
            folder.rmdir()


def check_output_file(path: str | os.PathLike, what: str = "output file") -> Path:
    """ValueError unless a file could be written at ``path`` (atomically: its folder must be
    creatable and writable, and ``path`` must not be a folder); creates nothing that stays.
    ``what`` names the flag or file in the message (e.g. ``"--json"``)."""
    path = Path(path)
    check_names(path, what)
    if path.is_dir():
        raise ValueError(f"{what} {str(path)!r} is a folder; name the file to write")
    check_writable_target(path.parent, f"{what} {str(path)!r}: its folder")
    return path


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    return atomic_write_with(path, lambda handle: handle.write(data))


def atomic_write_with(path: str | os.PathLike, write) -> Path:
    """Atomic write whose content ``write(handle)`` streams into the temporary file (a binary
    file object), so a large file (a construction's weights) needs no copy in memory."""
    path = Path(path)
    ensure_writable_dir(path.parent, try_write=False)
    new = not os.path.lexists(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}{TEMP_MARK}",
                                   suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a written file gets the usual mode
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno in DISK_FULL:  # name the file it was writing
            raise OSError(exc.errno, os.strerror(exc.errno), str(path)) from None
        raise
    if new:
        _record_new_file(path)
    return path


DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
"""The errors of a full disk or an exhausted quota: the command line prints them as one line."""


def _umask() -> int:
    """The process's file-creation mask (read by setting it and putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def remove_stale_temporaries(folder: str | os.PathLike, names: Iterable[str]) -> list[Path]:
    """Remove the temporary files a killed writer of ``folder/<name>`` left, for each of
    ``names`` (``.<name>.resharpen-*.tmp``), in ``folder`` only (not below it). Nothing else is
    touched, whoever wrote it. Returns what was removed."""
    folder = Path(folder)
    removed = []
    if not folder.is_dir():
        return removed
    for name in names:
        for stale in folder.glob(f".{glob_escape(name)}{TEMP_MARK}*.tmp"):
            if stale.is_file() and not stale.is_symlink():
                stale.unlink(missing_ok=True)
                removed.append(stale)
    return removed


def read_text_file(path: str | os.PathLike, what: str, kind: str) -> str:
    """The UTF-8 text of ``path``; FileNotFoundError when it is missing, ValueError naming the
    file (``what``) when it is a folder or not UTF-8 (``kind``: what it should be)."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} {str(path)!r} does not exist") from None
    except IsADirectoryError:
        raise ValueError(f"{what} {str(path)!r} is a folder, not a {kind}") from None
    except UnicodeDecodeError:
        raise ValueError(f"{what} {str(path)!r} is not UTF-8 text (corrupt?)") from None
    except OSError as exc:  # unreadable: permissions, an I/O error, a special file
        raise ValueError(f"{what} {str(path)!r} cannot be read: {exc.strerror or exc}") from None


def read_json(path: str | os.PathLike, what: str = "file") -> object:
    """The JSON document in ``path``; ValueError naming the file (and the line) when it is not
    valid JSON or UTF-8, FileNotFoundError when it is missing."""
    text = read_text_file(path, what, "JSON file")
    try:
        return loads_json(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} {str(path)!r} is corrupt: line {exc.lineno}: {exc.msg}"
                         ) from None


def read_jsonl(path: str | os.PathLike, what: str = "file") -> list:
    """The JSON lines of ``path`` (blank lines skipped), each checked; ValueError naming the file
    and the line of the first bad one, FileNotFoundError when it is missing."""
    text = read_text_file(path, what, "JSON lines file")
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                rows.append(loads_json(line))
            except json.JSONDecodeError as exc:
                raise ValueError(f"{what} {str(path)!r} is corrupt: line {number}: {exc.msg}"
                                 ) from None
    return rows


def glob_escape(name: str) -> str:
    """``name`` with glob metacharacters escaped (a file name used as a glob pattern)."""
    import glob

    return glob.escape(name)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


NONFINITE_SUFFIX = "_nonfinite"
_NONFINITE = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def strict_json_value(obj: object) -> object:
    """``obj`` with every non-finite float (NaN, inf, -inf) replaced by None and the reason kept
    beside it: in a dict, key ``k`` gets a sibling ``k_nonfinite``, ``"nan"``, ``"inf"`` or
    ``"-inf"``, or for a list value {index: reason} (nested lists nest), e.g.
    ``{"b": [1.0, inf]}`` -> ``{"b": [1.0, null], "b_nonfinite": {"1": "inf"}}``. Strict JSON has
    no NaN or Infinity tokens, and a reader must still tell a missing value from an overflow;
    :func:`loads_json` restores the floats."""
    value, _ = _strict(obj)
    return value


def _strict(obj: object) -> tuple[object, object]:
    if isinstance(obj, float):
        if obj != obj:
            return None, "nan"
        return (obj, None) if abs(obj) != float("inf") else (None, "inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        out = {}
        for key, item in obj.items():
            out[key], reason = _strict(item)
            if reason is not None:
                out[f"{key}{NONFINITE_SUFFIX}"] = reason
        return out, None
    if isinstance(obj, (list, tuple)):
        items, reasons = [], {}
        for index, item in enumerate(obj):
            clean, reason = _strict(item)
            items.append(clean)
            if reason is not None:
                reasons[str(index)] = reason
        return items, (reasons or None)
    return obj, None


def restore_nonfinite(obj: object) -> object:
    """Inverse of :func:`strict_json_value`: null values with a ``k_nonfinite`` reason become
    the float NaN, inf or -inf again (and the reason keys go)."""
    if isinstance(obj, dict):
        out = {}
        for key, item in obj.items():
            if key.endswith(NONFINITE_SUFFIX) and key[:-len(NONFINITE_SUFFIX)] in obj:
                continue
            reason = obj.get(f"{key}{NONFINITE_SUFFIX}")
            out[key] = _put_back(restore_nonfinite(item), reason)
        return out
    if isinstance(obj, list):
        return [restore_nonfinite(item) for item in obj]
    return obj


def _put_back(value: object, reason: object) -> object:
    if reason is None:
        return value
    if value is None and isinstance(reason, str):
        return _NONFINITE.get(reason, value)
    if isinstance(value, list) and isinstance(reason, dict):
        return [_put_back(item, reason.get(str(i))) for i, item in enumerate(value)]
    return value


def loads_json(text: str) -> object:
    """The one JSON reader of run files: ``json.loads`` and :func:`restore_nonfinite` (files
    written before strict JSON, with NaN tokens, still read)."""
    return restore_nonfinite(json.loads(text))


def dumps_json(obj: object, indent: int | None = 2, sort_keys: bool = False) -> str:
    """The one JSON writer of the package: strict JSON (``allow_nan=False``) of
    :func:`strict_json_value` (obj), so NaN and inf are written as null with a reason field."""
    return json.dumps(strict_json_value(obj), indent=indent, sort_keys=sort_keys, allow_nan=False)


def dumps_jsonl(rows: Iterable[object]) -> str:
    """JSON Lines: one :func:`dumps_json` object per line."""
    return "".join(dumps_json(row, indent=None) + "\n" for row in rows)


def atomic_write_json(path: str | os.PathLike, obj: object, indent: int | None = 2,
                      sort_keys: bool = False) -> Path:
    return atomic_write_text(path, dumps_json(obj, indent, sort_keys) + "\n")


def atomic_write_weights(path: str | os.PathLike, tensors: dict, metadata: dict[str, str]
                         ) -> Path:
    """Tensors {name: torch.Tensor} as a safetensors file with string ``metadata``, written
    atomically and streaming (:func:`write_safetensors` into :func:`atomic_write_with`'s
    temporary file): no copy of the file is made in memory."""
    return atomic_write_with(path, lambda handle: write_safetensors(handle, tensors, metadata))


SAFETENSORS_DTYPES = {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16",
                      "float16": "F16", "bfloat16": "BF16", "int32": "I32", "float32": "F32",
                      "float64": "F64", "int64": "I64"}
"""torch dtype name -> safetensors dtype, in the order of safetensors' own dtype ranking."""


def write_safetensors(handle, tensors: dict, metadata: dict[str, str]) -> None:
    """The safetensors format, streamed into a binary file ``handle``: an 8-byte little-endian
    header length, the JSON header ({name: {dtype, shape, data_offsets}} and ``__metadata__``),
    padded with spaces to a multiple of 8, then each tensor's bytes in turn, written from the
    tensor's own memory (a contiguous CPU tensor is not copied). The bytes are those of
    ``safetensors.torch.save``: metadata first, tensors by dtype rank (descending) then name."""
    import struct
    import sys

    ranks = list(SAFETENSORS_DTYPES)
    for name, tensor in tensors.items():
        if str(tensor.dtype).removeprefix("torch.") not in SAFETENSORS_DTYPES:
            raise ValueError(f"tensor {name!r} has dtype {tensor.dtype}, which is not one of "
                             f"{', '.join(ranks)}")
    order = sorted(tensors, key=lambda name: (
        -ranks.index(str(tensors[name].dtype).removeprefix("torch.")), name))
    header, offset = {}, 0
    if metadata is not None:
        header["__metadata__"] = dict(metadata)
    for name in order:
        tensor = tensors[name]
        size = tensor.numel() * tensor.element_size()
        header[name] = {"dtype": SAFETENSORS_DTYPES[str(tensor.dtype).removeprefix("torch.")],
                        "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    handle.write(struct.pack("<Q", len(text)))
    handle.write(text)
    byte = sys.modules["torch"].uint8 if tensors else None  # loaded: the tensors exist (the
    # common library imports no torch itself: tests/import_contracts.toml)
    for name in order:
        tensor = tensors[name].detach().cpu().contiguous()
        if tensor.numel():
            handle.write(memoryview(tensor.reshape(-1).view(byte).numpy()))


def shown_path(path: str | Path) -> str:
    """``path`` relative to the working folder when it lies inside it, else as given: how the
    ledger's ``--where`` and the claim index print a file."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
