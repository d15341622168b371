"""Shared helpers of the PyTorch suite: the pipesmith CLI, and torchrun jobs under a timeout."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "configs", "models")
# The package under test: PIPESMITH_PYTHONPATH when set (a CMake build's BUILD/python: this checkout's
# sources with the extension pipesmith._core built beside them; `make test` sets it), else python/ of
# this checkout, where pipesmith.torch runs and the API tests fail for want of the extension.
PACKAGE_DIR = os.path.abspath(os.path.join(ROOT, os.environ.get("PIPESMITH_PYTHONPATH") or "python"))
sys.path.insert(0, PACKAGE_DIR)


def model_path(name: str) -> str:
    return os.path.join(MODELS, f"{name}.yaml")


def pipesmith_binary() -> str:
    env = os.environ.get("PIPESMITH")
    candidates = [env] if env else [os.path.join(ROOT, d, "cli", "pipesmith") for d in ("build-ci", "build")]
    for c in candidates:
        path = c if os.path.isabs(c) else os.path.join(ROOT, c)
        if os.access(path, os.X_OK):
            return path
    pytest.fail(f"no pipesmith binary at {candidates}: build it first (make build) or set PIPESMITH")


@pytest.fixture(scope="session")
def pipesmith() -> str:
    return pipesmith_binary()


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run([pipesmith_binary(), *args], capture_output=True, text=True, timeout=300)
    if check and p.returncode != 0:
        raise AssertionError(f"pipesmith {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def export(schedule: str, out_dir: str, model: str) -> subprocess.CompletedProcess:
    return cli("export", schedule, "--to", "pytorch", "-o", out_dir, "--model", model)


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE_DIR + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = "1"
    return env


def torchrun(nproc: int, args: list[str], timeout: float) -> tuple[int, str]:
    """Runs ``python -m torch.distributed.run --standalone --nproc-per-node nproc ARGS``; a job past
    ``timeout`` seconds is killed (its whole process group) and reported as rc 124."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc),
           *args]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(),
                         start_new_session=True, cwd=ROOT)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return 124, out


def run_plans(nproc: int, cases: list[tuple[str, str]], timeout: float = 300, extra: tuple = ()) -> str:
    """Runs exported plans (DIR, MODEL) through pipesmith.torch.run in one job; asserts that every
    (DIR, format) printed a line saying loss, gradients and parameters match."""
    args = ["-m", "pipesmith.torch.run", "--timeout", "60", *extra]
    for d, m in cases:
        args += ["--case", d, m]
    rc, out = torchrun(nproc, args, timeout)
    lines = [l for l in out.splitlines() if " the unpipelined run " in l]
    fmts = 1 if "--format" in extra else 2
    matched = {l.split(" ")[0] + " " + l.split(" ")[1] for l in lines if " match the unpipelined run" in l}
    want = {f"{d} {f}" for d, _ in cases
            for f in (["compute_only", "compute_comms"] if fmts == 2 else [extra[extra.index("--format") + 1]])}
    missing = sorted(want - {m.rstrip(":") for m in matched})
    assert rc == 0 and not missing, f"torchrun exited {rc}; not matched: {missing}; output:\n{out[-8000:]}"
    return out
