"""pipesmith.run (python/src/run.cpp → run/run_schedule.h) against `pipesmith run`: the same library call,
so the same verdicts, the same gradient check and the same summary, from a file or a Schedule object."""
from __future__ import annotations

import json

import pytest

from conftest import cli, model_path

import pipesmith

# Measured figures differ from run to run; everything else of the summary must be the command's.
MEASURED = ("measured_ms", "per_device")


def _stable(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in MEASURED}


@pytest.fixture(scope="module")
def one_f_one_b(tmp_path_factory) -> tuple[str, str]:
    d = tmp_path_factory.mktemp("run")
    sched = str(d / "1f1b.yaml")
    cli("baseline", model_path("gemma-like"), "--devices", "4", "--microbatches", "8", "--schedule", "1f1b", "-o", sched)
    return sched, model_path("gemma-like")


def test_run_file_matches_the_command(one_f_one_b, tmp_path):
    sched, model = one_f_one_b
    out = str(tmp_path / "cli.json")
    cli("run", sched, "--model", model, "--check-gradients", "--scale", "0.02", "--tokens", "8", "--quiet", "--json", out)
    with open(out) as f:
        want = json.load(f)
    r = pipesmith.run(sched, model=model, scale=0.02, tokens=8)
    got = json.loads(r.json())
    assert _stable(got) == _stable(want)
    assert got["gradients"]["ok"] is True and r.gradients_ok is True
    assert r.max_rel_diff == got["gradients"]["max_rel_diff"] <= 1e-5
    assert r.simulated_ms == pytest.approx(want["simulated_ms"])
    assert r.iteration_ms > 0 and r.loss == pytest.approx(want["loss"])
    assert r.text().startswith("pipesmith run: 1f1b.yaml on backend host (4 devices, 4 stages, 8 microbatches")
    assert "gradients:" in r.text() and "OK" in r.text()
    assert json.loads(r.chrome_trace())["traceEvents"]


def test_run_schedule_object_with_its_spec():
    spec = pipesmith.load_spec(model_path("gemma-like"), devices=4, microbatches=8)
    base = pipesmith.baseline(spec, "zb-h1")
    r = pipesmith.run(base.schedule, model=spec, scale=0.02, tokens=8)
    assert r.gradients_ok is True and r.backend == "host"
    # Without a model, the executable model comes from the schedule's costs alone: still exact.
    r2 = pipesmith.run(base.schedule, tokens=8, check_gradients=True)
    assert r2.gradients_ok is True


def test_run_refuses_what_the_command_refuses(one_f_one_b):
    sched, model = one_f_one_b
    with pytest.raises(pipesmith.InvalidScheduleError) as e:
        pipesmith.run("configs/invalid-schedules/deadlock.csv")
    assert e.value.exit_code == 3
    assert "the checker rejected 'deadlock.csv' under rendezvous semantics" in str(e.value)
    assert "deadlock" in str(e.value)
    for kwargs, text in [
        (dict(timeout_s=float("nan")), "timeout_s must be a finite number"),
        (dict(tokens=0), "tokens must be an integer"),
        (dict(semantics="buffered"), "--semantics must be rendezvous or grouped"),
        (dict(backend="cuda"), "the Python extension is built without CUDA"),
        (dict(backend="tpu"), "backend must be host or mpi"),
        (dict(widths="wide"), "widths must be cost or params"),
        (dict(memory_limit_gb=-1), "memory_limit_gb must be a finite number"),
        (dict(microbatches=0), "microbatches must be an integer in [1, 1,000,000], got 0"),
    ]:
        with pytest.raises(pipesmith.BadInputError) as e:
            pipesmith.run(sched, model=model, **kwargs)
        assert text in str(e.value), (kwargs, str(e.value))
        assert e.value.exit_code == 1
    with pytest.raises(pipesmith.BadInputError):
        pipesmith.run(sched, cluster="configs/clusters/8xh100-80gb.yaml")
