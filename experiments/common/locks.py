"""The lock of a folder a command writes: an exclusive ``fcntl.flock`` on a lock file, refused
at once (or waited for) while another process holds it, never stale (the kernel releases it
when its holder dies)."""
from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import Iterator

from resharpen.experiments.common.cli_args import UsageError
from resharpen.experiments.common.io import file_kind

@contextlib.contextmanager
def hold_lock(path: str | os.PathLike, busy: str, wait: bool = False,
              remove_if_alone: bool = False) -> Iterator[None]:
    """Hold an exclusive ``fcntl.flock`` on the lock file ``path`` for the block.

    - The file is opened with ``O_CREAT | O_NOFOLLOW | O_NONBLOCK`` (mode 0644), never
      truncated and never written: a symbolic link planted at ``path`` is refused (it is not
      followed, so nothing it points to is created, truncated or touched), and so is anything
      that is not a regular file (a FIFO, a device): one ValueError naming ``path``.
    - ``wait`` False: when another process holds the lock, :class:`UsageError` ``busy`` at
      once; True: wait for it. The kernel releases an flock when its holder dies (even by
      SIGKILL), so a lock is never stale.
    - Having the lock, the holder checks that ``path`` is still the file it locked (same
      device and inode) and starts again otherwise: a holder may remove the file while it
      holds it (``remove_if_alone``), and whoever waited on the removed file must not count as
      holding the new one.
    - ``remove_if_alone``: on leaving, the holder, still holding the lock, removes the file when
      its folder holds nothing else (a sweep that failed before its first write leaves an empty
      folder, which :func:`.io.undo_on_failure` removes if it made it). No one else ever removes a
      lock file."""
    import fcntl

    path = Path(path)
    while True:
        fd = _open_lock_file(path)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                raise UsageError(busy) from None
            if not _same_file(fd, path):
                continue  # its holder removed it: lock the file now at ``path``
            try:
                yield
            finally:
                if remove_if_alone and [p.name for p in path.parent.iterdir()] == [path.name]:
                    with contextlib.suppress(OSError):
                        path.unlink()
            return
        finally:
            os.close(fd)  # releases the lock


def _open_lock_file(path: Path) -> int:
    """A file descriptor of the lock file ``path`` (created 0644 if missing), opened without
    following a link; ValueError naming ``path`` when it is a link or not a regular file."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        kind = "a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
        raise UsageError(f"lock file {str(path)!r} cannot be used: {kind}; the package locks only "
                         "a regular file it can create there (remove what is in the way)"
                         ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(f"lock file {str(path)!r} is {file_kind(path, os.lstat(path).st_mode)}, "
                         "not a regular file; remove what is in the way")
    return fd


def _same_file(fd: int, path: Path) -> bool:
    """Whether ``path`` is still the file open as ``fd`` (same device and inode)."""
    try:
        now = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    held = os.fstat(fd)
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)
