"""The watchdog of every torchrun entry point (``pipesmith.torch.run``, ``pipesmith.torch.steptime``,
the example trainer): a rank that waits longer than ``--timeout`` seconds for one phase of its work (a
step, a case's setup) says where it stopped and ends the job.

When it fires, the rank prints ``rank R: TIMEOUT in LABEL after S s: last action started: ...`` (the
last action PyTorch's runtime announced on this rank: ``time step K: 0SEND_F1``, from the runtime's
per-action debug record), waits a few seconds so that its peers' watchdogs print theirs before the
connections close, and exits 124. gloo's own timeout (30 minutes) never gets to act.

:func:`timeout_s` is the ``--timeout`` flag's type: a finite number of seconds in (0, 1e6], as the
command's ``--timeout`` (docs/inputs.md, "Limits"); ``nan``, ``inf`` and negative values are refused.
"""
from __future__ import annotations

import argparse
import logging
import math
import os
import sys
import threading
import time
from typing import Any, Callable, Optional

from .._tables import LIMITS

MAX_TIMEOUT_S = LIMITS["time_limit_s"]  # the command's bound on --timeout (ir/limits.h, docs/inputs.md, "Limits")
DEFAULT_TIMEOUT_S = 60.0
GRACE_S = 3.0         # after reporting: the peers' watchdogs fire within moments; leaving at once would
                      # close the connections they wait on and turn their report into a gloo error
EXIT_CODE = 124


def timeout_s(text: str) -> float:
    """argparse type of ``--timeout``: a finite number of seconds in (0, 1e6]."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number of seconds in (0, 1e6], got '{text}'") from None
    if not (math.isfinite(v) and 0 < v <= MAX_TIMEOUT_S):
        raise argparse.ArgumentTypeError(f"a finite number of seconds in (0, 1e6], got '{text}'")
    return v


class _LastAction(logging.Handler):
    """Keeps the last action the runtime announced (its per-action debug record)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.last = "none yet"

    def emit(self, record: logging.LogRecord) -> None:
        if record.args and len(record.args) == 2 and "time_step" in str(record.msg):
            self.last = f"time step {record.args[0]}: {record.args[1]}"


class Watchdog:
    """One per rank: ``arm(label)`` starts a phase of at most ``timeout`` seconds (``seconds`` for a
    longer one), ``disarm()`` ends it. A phase past its deadline ends the process (module docstring)."""

    def __init__(self, rank: int, timeout: float, *, exit: Callable[[int], Any] = os._exit) -> None:
        self.rank, self.timeout = rank, timeout
        self._exit = exit
        self._deadline: Optional[float] = None
        self._started = 0.0
        self._label = ""
        self._lock = threading.Lock()
        self.last = _LastAction()
        log = logging.getLogger("torch.distributed.pipelining.schedules")
        log.addHandler(self.last)
        log.setLevel(logging.DEBUG)
        log.propagate = False
        threading.Thread(target=self._watch, name="pipesmith-watchdog", daemon=True).start()

    def arm(self, label: str, seconds: Optional[float] = None) -> None:
        with self._lock:
            self._label = label
            self._started = time.monotonic()
            self._deadline = self._started + (self.timeout if seconds is None else seconds)

    def disarm(self) -> None:
        with self._lock:
            self._deadline = None

    def _watch(self) -> None:
        while True:
            time.sleep(0.2)
            with self._lock:
                fired = self._deadline is not None and time.monotonic() > self._deadline
                label, waited = self._label, time.monotonic() - self._started
            if fired:
                print(f"rank {self.rank}: TIMEOUT in {label} after {waited:.0f} s: last action started: "
                      f"{self.last.last}", file=sys.stderr, flush=True)
                time.sleep(GRACE_S)
                self._exit(EXIT_CODE)
                return
