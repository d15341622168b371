"""What the Python benches share: a command run in its own process group, so that a timeout ends it
and every process it started; the figures a written schedule's certificate holds."""
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


# The bounds a certificate may write beside lower_bound_ms.
CERT_BOUNDS = ["bound_ms", "bound_proven_ms", "bound_before_z3_ms", "global_lower_bound_ms"]


def read_certificate(path: str) -> tuple[float | None, dict[str, float]]:
    """The certificate's makespan_ms and its bounds (lower_bound_ms and the extras in CERT_BOUNDS), read
    from the schedule YAML's `certificate:` block as written (one `key: value` a line)."""
    makespan = None
    bounds: dict[str, float] = {}
    in_cert = False
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("certificate:"):
                in_cert = True
                continue
            if in_cert and line and not line[0].isspace():
                break
            if not in_cert or ":" not in line:
                continue
            key, _, val = line.strip().partition(":")
            val = val.strip().strip('"')
            if key == "makespan_ms":
                makespan = float(val)
            elif key == "lower_bound_ms" or key in CERT_BOUNDS:
                bounds[key] = float(val)
    return makespan, bounds
