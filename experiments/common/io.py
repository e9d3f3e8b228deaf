"""Writing files and folders safely: atomic file output (write to a temporary file in the same
folder, then rename), folder creation and checks, and staged folder replacement.

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
  one line (``resharpen.cli.main``).

Reading what was written (plain or compressed, checked) is :mod:`.stored`; the package's one
JSON encoding (strict, non-finite floats kept) is :mod:`.json_text`; the lock of a folder a
command writes is :mod:`.locks`."""
from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

from resharpen.experiments.common.cli_args import UsageError
from resharpen.experiments.common.json_text import dumps_json

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
        make_folders(path)
    except FileExistsError:
        raise ValueError(f"{what} {str(path)!r} exists and is not a folder") from None
    except OSError as exc:
        raise ValueError(f"{what} {str(path)!r} cannot be created: {exc.strerror}") from None
    if not path.is_dir():
        raise ValueError(f"{what} {str(path)!r} exists and is not a folder")
    if try_write:
        try_writing(path, f"{what} {str(path)!r}")
    return path


def make_folders(path: Path) -> None:
    """Create ``path`` and its missing parents, one ``mkdir`` each, and record in the open
    :func:`undo_on_failure` blocks every folder this call created: a folder another process
    created first (its ``mkdir`` wins, ours meets ``FileExistsError``) is never recorded, so a
    failing block never removes a folder it did not make, even when two processes start at once."""
    missing = []
    probe = Path(path)
    while not os.path.lexists(probe) and probe.parent != probe:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder)
        except FileExistsError:
            if not folder.is_dir():
                raise
            continue
        _record_new(folder)


def quiet_exists(path: Path) -> bool:
    """Whether ``path`` exists, False where asking raises (a name too long, a symlink loop)."""
    try:
        return path.exists()
    except OSError:  # a name too long, a symlink loop: nothing that exists
        return False


def check_names(path: Path, what: str) -> None:
    """ValueError if a component of ``path`` is longer than the file system allows."""
    probe = Path(path)
    while not quiet_exists(probe) and probe.parent != probe:
        probe = probe.parent
    try:
        name_max = os.pathconf(probe if quiet_exists(probe) else ".", "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    for part in Path(path).parts:
        if len(os.fsencode(part)) > name_max:
            raise ValueError(f"{what} {short_repr(str(path), 60)}: the name {short_repr(part, 24)} has "
                             f"{len(os.fsencode(part))} bytes; the file system allows {name_max}")


def short_repr(text: str, width: int) -> str:
    """``repr(text)``, cut to ``width`` characters with ``...`` when longer (for a message)."""
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
    while not quiet_exists(probe):
        if probe.parent == probe:
            break
        probe = probe.parent
    if quiet_exists(probe) and not probe.is_dir():
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
"""The open :func:`undo_on_failure` blocks' lists of the files and folders created in them
(innermost block last)."""


def _record_new(path: Path) -> None:
    for journal in _JOURNALS:
        journal.append(path)


@contextlib.contextmanager
def undo_on_failure(folder: str | os.PathLike, remove_written: bool = True) -> Iterator[Path]:
    """Run a block that writes into ``folder``; if it raises (a full disk, an interrupt, a bug),
    remove what the block made and nothing else, then re-raise:

    - the files it created through :func:`atomic_write_with` (with ``remove_written``; a file
      that existed before and was replaced stays replaced: its old bytes are gone);
    - the folders it created through :func:`make_folders` (``folder``, its missing parents,
      anything below), deepest first, each only once empty: a file anyone else put there keeps
      the folder. A folder is the block's only when its own ``mkdir`` made it, so a second
      process that started at the same instant never removes the first one's folder (nor the
      lock file in it: a lock file is removed by its holder alone, see :func:`.locks.hold_lock`).

    Nested blocks each undo their own writes (a sweep keeps its finished runs when a later one
    fails: each run is its own block)."""
    journal: list[Path] = []
    _JOURNALS.append(journal)
    try:
        yield Path(folder)
    except BaseException:
        for path in reversed(journal):  # the deepest (the latest made) first
            with contextlib.suppress(OSError):
                if path.is_dir() and not path.is_symlink():
                    path.rmdir()  # only once empty
                elif remove_written:
                    path.unlink()
        raise
    finally:  # by identity: two journals with the same files are equal lists
        del _JOURNALS[next(i for i, j in enumerate(_JOURNALS) if j is journal)]


def check_output_file(path: str | os.PathLike, what: str = "output file") -> Path:
    """ValueError unless a file could be written at ``path`` (atomically: its folder must be
    creatable and writable, and ``path`` must be absent or a regular file:
    :func:`check_file_target`); creates nothing that stays. ``what`` names the flag or file in
    the message (e.g. ``"--json"``)."""
    path = Path(path)
    check_names(path, what)
    check_file_target(path, what)
    check_writable_target(path.parent, f"{what} {str(path)!r}: its folder")
    return path


def check_file_target(path: str | os.PathLike, what: str = "output file") -> Path:
    """:class:`~resharpen.experiments.common.cli_args.UsageError` (a ValueError: one line from
    the command line) unless ``path`` is absent or a regular file. The atomic writers replace the
    target by a rename, so anything else there would be destroyed or followed: a folder, a
    device (``/dev/full``), a FIFO, a socket, or a symbolic link (to a file, to a folder, or to
    itself) is refused, naming what it is. A path whose folder is missing or not a folder passes
    (the folder checks speak for it)."""
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except OSError:  # absent, or a parent that is missing or not a folder
        return path
    if stat.S_ISREG(mode):
        return path
    if stat.S_ISDIR(mode):
        raise UsageError(f"{what} {str(path)!r} is a folder; name the file to write")
    raise UsageError(f"{what} {str(path)!r} is {file_kind(path, mode)}, not a regular file; the "
                     "package replaces only regular files: name a new file or a regular one")


def check_folder_files(folder: str | os.PathLike, names: Iterable[str],
                       what: str = "output folder") -> Path:
    """:class:`~resharpen.experiments.common.cli_args.UsageError` unless ``folder`` is absent or
    a folder and each of the files ``names`` that a command will write in it is absent or a
    regular file (:func:`check_file_target`). Called before the work, so a FIFO, a device, a
    socket, a folder or a link where a file will be written is refused before anything is
    computed or written; creates nothing. ``what`` names the folder's flag in the message."""
    folder = Path(folder)
    if os.path.lexists(folder) and not folder.is_dir():
        raise UsageError(f"{what} {str(folder)!r} exists and is not a folder")
    for name in names:
        check_file_target(folder / name, f"{what}: the file")
    return folder


def file_kind(path: Path, mode: int) -> str:
    """What the non-regular, non-folder file ``path`` (its ``st_mode`` ``mode``) is, in words:
    a symbolic link (looping, dangling), a device, a FIFO, a socket."""
    if stat.S_ISLNK(mode):
        try:
            os.stat(path)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return "a symbolic link that loops"
            return "a symbolic link to nothing"
        return "a symbolic link"
    for test, name in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    return atomic_write_with(path, lambda handle: handle.write(data))


def atomic_write_with(path: str | os.PathLike, write) -> Path:
    """Atomic write whose content ``write(handle)`` streams into the temporary file (a binary
    file object), so a large file (a construction's weights) needs no copy in memory."""
    path = Path(path)
    ensure_writable_dir(path.parent, try_write=False)
    check_file_target(path)
    new = not os.path.lexists(path)
    tmp = None
    try:  # mkstemp opens O_EXCL | O_NOFOLLOW, mode 0600: a planted link is never followed
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}{TEMP_MARK}",
                                   suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
            os.fchmod(handle.fileno(), 0o666 & ~_umask())  # a written file gets the usual mode
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno in DISK_FULL:  # name the file it was writing
            raise OSError(exc.errno, os.strerror(exc.errno), str(path)) from None
        raise
    if new:
        _record_new(path)
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


def staging_folder(folder: Path) -> Path:
    """A new, empty folder beside ``folder`` (``.<name>.resharpen-<random>.tmp``, the package's
    temporary mark, with the usual folder mode) in which a complete replacement of ``folder`` is
    written before :func:`commit_staged` moves it in; recorded for :func:`undo_on_failure`."""
    stage = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}{TEMP_MARK}",
                                  suffix=".tmp"))
    os.chmod(stage, 0o777 & ~_umask())
    _record_new(stage)
    return stage


def commit_staged(stage: Path, folder: Path, last: str, replaced: Iterable[str]) -> None:
    """Move every file of ``stage`` (complete, written by :func:`staging_folder`'s caller) into
    ``folder``, then remove ``stage``. Renames within one file system need no space, so a full
    disk has already failed while staging, with ``folder`` untouched.

    - ``folder`` absent or empty: one rename of the whole folder (atomic).
    - Otherwise the folder's ``last`` (the file whose presence marks it complete, e.g. a run's
      ``summary.json``) is removed first, then the files named in ``replaced`` (what the
      package writes there) that the new set lacks, then each staged file is renamed in,
      ``last`` last: at no moment does the folder hold a complete mix of old and new files (an
      interruption leaves it without ``last``: unfinished). Files of other names (a user's
      notes) stay."""
    new = sorted(p.name for p in stage.iterdir())
    for name in new:  # a FIFO, a folder or a link at a run file: refused, nothing moved
        check_file_target(folder / name, "run file")
    try:
        os.rename(stage, folder)  # absent, or an empty folder: replaced whole
        return
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
            raise
    with contextlib.suppress(FileNotFoundError):
        (folder / last).unlink()
    for name in set(replaced) - set(new) - {last}:
        old = folder / name
        if old.is_file() and not old.is_symlink():
            old.unlink()
    for name in sorted(new, key=lambda n: n == last):
        os.replace(stage / name, folder / name)
    stage.rmdir()


def remove_stale_staging(parent: str | os.PathLike, name: str, files: Iterable[str]
                         ) -> list[Path]:
    """Remove the staging folders (:func:`staging_folder`) of ``parent/<name>`` that a killed
    writer left: a real folder ``.<name>.resharpen-*.tmp`` holding nothing but ``files`` and
    their temporary files; one holding anything else is left alone. Returns what was removed."""
    parent, files = Path(parent), set(files)
    removed = []
    if not parent.is_dir():
        return removed
    for stale in parent.glob(f".{glob_escape(name)}{TEMP_MARK}*.tmp"):
        if stale.is_symlink() or not stale.is_dir():
            continue
        entries = list(stale.iterdir())
        if all(entry.is_file() and not entry.is_symlink() and (
                entry.name in files or any(entry.name.startswith(f".{f}{TEMP_MARK}")
                                           for f in files)) for entry in entries):
            for entry in entries:
                entry.unlink(missing_ok=True)
            stale.rmdir()
            removed.append(stale)
    return removed


def glob_escape(name: str) -> str:
    """``name`` with glob metacharacters escaped (a file name used as a glob pattern)."""
    import glob

    return glob.escape(name)


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


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
