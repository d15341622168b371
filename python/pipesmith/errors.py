"""The exceptions pipesmith's Python API raises.

Every failing call raises :class:`Error` or one of its subclasses, one per error class of the
library (the same classes the ``pipesmith`` command turns into its exit codes, README "Exit codes").
The errors of :mod:`pipesmith.torch` derive from them too (``PlanError``, ``ModelFileError``,
``PipelineBuildError``, ``ProfileError``, ``LinkError``, ``OutputPathError``: bad input), so
``except pipesmith.Error`` catches every failure of the package. Each carries where the error points
when it comes from an input file::

    try:
        spec = pipesmith.load_spec("model.yaml")
    except pipesmith.BadInputError as e:
        print(e.file, e.line, e.col, e.message)
"""

from __future__ import annotations


class Error(Exception):
    """A pipesmith call failed.

    Attributes:
        code: the error class: ``"bad_input"``, ``"infeasible"``, ``"invalid_schedule"``,
            ``"runtime"`` or ``"interrupted"``.
        exit_code: what the ``pipesmith`` command exits with for it (1, 2, 3, 4; 130); a subclass
            sets its default as ``EXIT_CODE``.
        message: the message without its location.
        file, line, col: where in which input file (``None`` / 0 when unknown).
    """

    CODE = "bad_input"
    EXIT_CODE = 1

    def __init__(self, text: str, *, code: str | None = None, exit_code: int | None = None,
                 message: str | None = None, file: str | None = None, line: int = 0, col: int = 0) -> None:
        super().__init__(text)
        self.code = type(self).CODE if code is None else code
        self.exit_code = type(self).EXIT_CODE if exit_code is None else exit_code
        self.message = text if message is None else message
        self.file = file
        self.line = line
        self.col = col

    @property
    def location(self) -> str:
        """``"file:line:col"`` (the known parts), or ``""``."""
        parts = [self.file or ""]
        if self.line:
            parts.append(str(self.line))
            if self.col:
                parts.append(str(self.col))
        return ":".join(parts) if parts != [""] else ""


class BadInputError(Error, ValueError):
    """Bad input or usage: an unreadable file, a field out of range, an unknown option value."""


class InfeasibleError(Error):
    """No schedule exists under the given limits (the memory, most often)."""

    CODE = "infeasible"
    EXIT_CODE = 2


class InvalidScheduleError(Error):
    """The checker rejected a schedule where a valid one was needed."""

    CODE = "invalid_schedule"
    EXIT_CODE = 3


class RuntimeFailure(Error, RuntimeError):
    """A failure while running (a backend error, a watchdog)."""

    CODE = "runtime"
    EXIT_CODE = 4


class InterruptedError(Error):  # noqa: A001 — pipesmith.errors.InterruptedError, not the builtin
    """The call was interrupted before it had any result."""

    CODE = "interrupted"
    EXIT_CODE = 130


__all__ = ["Error", "BadInputError", "InfeasibleError", "InvalidScheduleError", "RuntimeFailure", "InterruptedError"]
