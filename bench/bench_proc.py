"""What the Python benches share: a command run in its own process group, so that a timeout ends it
and every process it started."""
from __future__ import annotations

import os
import signal
import subprocess


def run_group(cmd: list[str], cwd: str, timeout: float, env: dict | None = None) -> tuple[int, str]:
    """Runs ``cmd`` (stdout and stderr together); past ``timeout`` seconds its whole process group is
    killed and the result is (124, "timed out after N s\\n" + what it printed)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd, env=env,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return 124, f"timed out after {timeout:.0f} s\n{out}"
    return p.returncode, out
