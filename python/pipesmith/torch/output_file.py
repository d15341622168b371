"""Every file the Python side writes (``pipesmith.torch.*``, the benches), written whole or not at all,
with its path checked against the inputs first: the rules of the command's writer (ir/output_file.h),
in the same words, for code that runs without the C++ extension (``profile --backend torch`` runs this
package from a source tree).

:func:`check_output_paths` (before any work): an output that is a directory, a dangling symbolic link
or a link loop, whose directory is missing or not writable, that names one of the inputs (same device
and inode: another spelling, a symbolic or a hard link of an input), or that names the same file as
another output is refused with :class:`OutputPathError`, naming the output, what named it (``--json``)
and the input. ``""`` and ``"-"`` (standard output) name nothing to check. A path holding a NUL
character is refused, not cut at the NUL.

:func:`write_output_file`: the text goes to a temporary in the target's directory, is flushed to disk
(``fsync``) and renamed over the target; on any failure the temporary is removed and the target keeps
what it held. A symbolic link is followed (the file it points to is replaced, the link stays); an
existing target keeps its permission bits; a target that exists and is not a regular file (a FIFO,
``/dev/null``) is written in place.
"""
from __future__ import annotations

import os
import stat
import tempfile
from typing import Optional, Sequence

from ..errors import BadInputError


class OutputPathError(BadInputError):
    """An output that cannot or must not be written; nothing was written. ``exit_code`` is the
    command's (1); the ``pipesmith.torch`` modules exit 2, as for any bad input."""


def _nul_free(path: str, what: str) -> str:
    if "\0" in path:
        raise OutputPathError(f"cannot write {path!r} ({what}): a path may not contain a NUL character")
    return path


def _file_id(path: str) -> Optional[tuple[int, int]]:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _regular_or_absent(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True


def _resolve_target(path: str, what: str) -> str:
    """The file a write to ``path`` replaces: a symbolic link's final target, else ``path``."""
    if not os.path.islink(path):
        return path
    if os.path.exists(path):
        return os.path.realpath(path)
    at = path
    for _ in range(40):
        try:
            dest = os.readlink(at)
        except OSError:
            break
        at = dest if os.path.isabs(dest) else os.path.normpath(os.path.join(os.path.dirname(at), dest))
        if not os.path.islink(at):
            break
    if os.path.islink(at):
        raise OutputPathError(f"cannot write '{path}' ({what}): it is a symbolic link that loops")
    raise OutputPathError(f"cannot write '{path}' ({what}): it is a dangling symbolic link to '{at}', which does not "
                          "exist (remove the link, or create the file it points to)")


def _check_one(path: str, what: str) -> None:
    if os.path.isdir(path):
        raise OutputPathError(f"cannot write '{path}' ({what}): it is a directory")
    target = _resolve_target(path, what)
    folder = os.path.dirname(target) or "."
    if not os.path.exists(folder):
        raise OutputPathError(f"cannot write '{path}' ({what}): directory '{folder}' does not exist")
    if not os.path.isdir(folder):
        raise OutputPathError(f"cannot write '{path}' ({what}): '{folder}' is not a directory")
    if not os.access(folder if _regular_or_absent(target) else target, os.W_OK):
        raise OutputPathError(f"cannot write '{path}' ({what}): Permission denied")


def check_output_paths(outputs: Sequence[tuple[str, str]], inputs: Sequence[str] = ()) -> None:
    """Refuses (:class:`OutputPathError`) an output of ``outputs`` — (path, what named it) pairs —
    that cannot be written, names one of ``inputs`` or names another output's file."""
    input_ids = []
    for src in inputs:
        if src and src != "-" and "\0" not in src:
            fid = _file_id(src)
            if fid is not None:
                input_ids.append((src, fid))
    seen: list[tuple[str, str, Optional[tuple[int, int]], str]] = []
    for path, what in outputs:
        if not path or path == "-":
            continue
        _nul_free(path, what)
        _check_one(path, what)
        fid = _file_id(path)
        regular = _regular_or_absent(path)
        if fid is not None and regular:
            for src, sid in input_ids:
                if sid == fid:
                    raise OutputPathError(f"refusing to write '{path}' ({what}): it is the input file '{src}', which "
                                          "the output would replace")
        if regular:
            normal = os.path.realpath(path)
            for other, other_what, other_id, other_normal in seen:
                same = fid == other_id if fid is not None and other_id is not None else normal == other_normal
                if same:
                    raise OutputPathError(f"{other_what} and {what} both name '{path}': each output needs its own file")
            seen.append((path, what, fid, normal))


def write_output_file(path: str, text: str, what: str = "output") -> None:
    """Writes ``text`` (UTF-8) to ``path`` whole or not at all (the module's rules); ``what`` names the
    flag in messages. An error leaves the target as it was."""
    _nul_free(path, what)
    _check_one(path, what)
    target = _resolve_target(path, what)
    data = text.encode("utf-8")
    if not _regular_or_absent(target):  # a FIFO, a device: nothing to replace
        try:
            with open(target, "wb") as f:
                f.write(data)
        except OSError as e:
            raise OutputPathError(f"cannot write '{path}' ({what}): {e.strerror}") from None
        return
    folder = os.path.dirname(os.path.abspath(target))
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.pipesmith-", suffix=".tmp", dir=folder)
    except OSError as e:
        raise OutputPathError(f"cannot write '{path}' ({what}): {e.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise OutputPathError(f"cannot write '{path}' ({what}): {e.strerror}; the file was not changed") from None
    try:
        dfd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass  # the rename happened; a directory that cannot be synced (some file systems) is no error
