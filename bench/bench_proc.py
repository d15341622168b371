"""What the Python benches share: a command run in its own process group, so that a timeout ends it
and every process it started."""
from __future__ import annotations

import os
import signal
import subprocess


def communicate_group(p: subprocess.Popen, timeout: float) -> tuple[int | None, str, str]:
    """Waits for ``p`` (started with start_new_session=True) and returns (exit status, stdout, stderr);
    past ``timeout`` seconds its whole process group is killed and the status is None."""
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return None, out, err


def run_group(cmd: list[str], cwd: str, timeout: float, env: dict | None = None) -> tuple[int, str]:
    """Runs ``cmd`` (stdout and stderr together); past ``timeout`` seconds its whole process group is
    killed and the result is (124, "timed out after N s\\n" + what it printed)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd, env=env,
                         start_new_session=True)
    rc, out, _ = communicate_group(p, timeout)
    if rc is None:
        return 124, f"timed out after {timeout:.0f} s\n{out}"
    return rc, out
