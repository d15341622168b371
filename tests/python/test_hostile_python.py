"""Hostile inputs to the Python surfaces, held to the command's contract: outputs that name an input are
refused, every rank waits at most --timeout, malformed plans and CSVs end with exit 2 and a located
`error:` line (no traceback, no large allocation), bad flags are refused up front, and every exception
of the package is a pipesmith.Error."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, _env, cli, model_path, torchrun

import deadlock_cases as dc
import pipesmith
from pipesmith.torch import link, run, steptime
from pipesmith.torch.plan import Action, PlanError, load_plan

LLAMA = model_path("llama2-7b")
TINY = ["--hidden", "16", "--seq", "8", "--vocab", "64", "--rows-per-microbatch", "1"]


@pytest.fixture(scope="module")
def plan_dir(tmp_path_factory) -> str:
    """A valid P = 2, M = 2 plan of llama2-7b (GPipe, exported by the command)."""
    return dc.base_plan(cli, "p2", str(tmp_path_factory.mktemp("hostile")), LLAMA)


def _copy_plan(src: str, dst) -> str:
    shutil.copytree(src, dst)
    return str(dst)


def _module(module: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python -m MODULE ARGS`` as a user runs it (no torchrun: these refusals come before the
    process group)."""
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, env=_env(),
                          cwd=ROOT, timeout=timeout)


# ---- outputs that name an input --------------------------------------------------------------------

def test_steptime_refuses_a_json_output_that_is_its_model(plan_dir, tmp_path):
    model = tmp_path / "model.yaml"
    shutil.copyfile(LLAMA, model)
    before = model.read_bytes()
    p = _module("pipesmith.torch.steptime", "--case", plan_dir, str(model), "--json", str(model))
    assert p.returncode == 2, p.stderr
    assert f"refusing to write '{model}' (--json): it is the input file '{model}'" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    assert model.read_bytes() == before


@pytest.mark.parametrize("kind", ["hard link of the model", "plan.json", "a CSV", "dangling link", "directory"])
def test_steptime_json_refusals(plan_dir, tmp_path, capsys, kind):
    model = tmp_path / "model.yaml"
    shutil.copyfile(LLAMA, model)
    if kind == "hard link of the model":
        out, expect = tmp_path / "hard.json", "it is the input file"
        os.link(model, out)
    elif kind == "plan.json":
        out, expect = os.path.join(plan_dir, "plan.json"), "it is the input file"
    elif kind == "a CSV":
        out, expect = os.path.join(plan_dir, "compute_comms.csv"), "it is the input file"
    elif kind == "dangling link":
        out, expect = tmp_path / "dangling.json", "it is a dangling symbolic link to"
        os.symlink(tmp_path / "nowhere" / "x.json", out)
    else:
        out, expect = tmp_path, "it is a directory"
    plan_before = open(os.path.join(plan_dir, "plan.json"), "rb").read()
    with pytest.raises(SystemExit) as e:
        steptime.main(["--case", plan_dir, str(model), "--json", str(out)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"'{out}' (--json)" in err and expect in err, err
    assert open(os.path.join(plan_dir, "plan.json"), "rb").read() == plan_before
    assert model.read_bytes() == open(LLAMA, "rb").read()


def test_link_refuses_an_output_that_is_a_dangling_link(tmp_path, capsys):
    out = tmp_path / "cluster.yaml"
    os.symlink(tmp_path / "missing.yaml", out)
    with pytest.raises(SystemExit) as e:
        link.main(["-o", str(out)])
    assert e.value.code == 2
    assert "it is a dangling symbolic link" in capsys.readouterr().err
    assert os.path.islink(out) and not os.path.exists(out)


# ---- the watchdog ----------------------------------------------------------------------------------

@pytest.mark.parametrize("module", [run, steptime])
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "1e7", "abc"])
def test_timeout_must_be_a_finite_number_of_seconds(plan_dir, capsys, module, value):
    argv = (["--case", plan_dir, LLAMA] if module is steptime else [plan_dir, "--model", LLAMA]) + ["--timeout", value]
    with pytest.raises(SystemExit) as e:
        module.main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "argument --timeout:" in err and f"got '{value}'" in err, err


def test_steptime_watchdog_ends_a_step_that_waits_for_a_send_never_made(plan_dir, tmp_path):
    # 1F1B on two ranks with rank 1's SEND_B0 left out: rank 0 waits for a gradient that never comes
    # (gloo alone would wait 30 minutes). Every rank's watchdog reports where it stopped.
    rows = [dc._R0, dc._R1.replace("1SEND_B0,", "")]
    d = dc.case_dir(plan_dir, "missing-send", dc.with_reduce_grad("p2", rows), str(tmp_path))
    rc, out = torchrun(2, ["-m", "pipesmith.torch.steptime", "--case", d, LLAMA, "--steps", "1", "--timeout", "5",
                           *TINY], timeout=240)
    assert rc != 0, out
    for rank in (0, 1):
        assert f"rank {rank}: TIMEOUT in {d} (compute_comms): step 0 after " in out, out[-4000:]
    assert "last action started: time step" in out, out[-4000:]


# ---- malformed plans and CSVs ----------------------------------------------------------------------

def _edit_json(d: str, fn) -> None:
    path = os.path.join(d, "plan.json")
    doc = json.load(open(path))
    text = fn(doc)
    with open(path, "w") as f:
        f.write(text if isinstance(text, str) else json.dumps(doc))


def _write(d: str, name: str, data: bytes) -> None:
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def _set(key, value):
    def fn(doc):
        doc[key] = value
    return fn


MALFORMED = {
    # name: (edit of the plan dir, file the error names, what the message says)
    "devices a string": (lambda d: _edit_json(d, _set("devices", "2")), "plan.json",
                         "'devices' must be an integer, got \"2\""),
    "devices 1e9": (lambda d: _edit_json(d, lambda doc: json.dumps(doc).replace('"devices": 2', '"devices": 1e9')),
                    "plan.json", "'devices' must be an integer, got 1000000000.0"),
    "devices 10**9": (lambda d: _edit_json(d, _set("devices", 10**9)), "plan.json",
                      "'devices' must be in [1, 100,000], got 1,000,000,000"),
    "layers of strings": (lambda d: _edit_json(d, lambda doc: doc["stages"][0].__setitem__("layers", ["a", "b"])),
                          "plan.json", "stages[0]: 'layers' must list 2 integers"),
    "NaN": (lambda d: _edit_json(d, lambda doc: json.dumps(doc).replace('"microbatches": 2', '"microbatches": NaN')),
            "plan.json:1:", "'NaN' is not JSON"),
    "-Infinity": (lambda d: _edit_json(d, lambda doc: json.dumps(doc).replace('"microbatches": 2',
                                                                               '"microbatches": -Infinity')),
                  "plan.json:1:", "'-Infinity' is not JSON"),
    "5000-digit integer": (lambda d: _edit_json(d, lambda doc: json.dumps(doc).replace('"microbatches": 2',
                                                                                        '"microbatches": ' + "9" * 5000)),
                           "plan.json:1:", "an integer of 5000 digits"),
    "deep nesting": (lambda d: _write(d, "plan.json", b"[" * 100_000 + b"]" * 100_000), "plan.json:1:65:",
                     "nested more than 64 levels deep"),
    "huge list": (lambda d: _edit_json(d, _set("stage_to_rank", [0] * 1_200_000)), "plan.json:1:",
                  "more than 1,000,000 values"),
    "plan not UTF-8": (lambda d: _write(d, "plan.json", b'{"schema": "pipesmith-plan/1",\n "model": "\xff"}'),
                       "plan.json:2:12:", "not UTF-8 (byte 0xff)"),
    "CSV not UTF-8": (lambda d: _write(d, "compute_only.csv", b"0F0,0F1,0B0,0B1\n1F0,\xfe1F1\n"),
                      "compute_only.csv:2:5:", "not UTF-8 (byte 0xfe)"),
    "5000-digit stage": (lambda d: _write(d, "compute_only.csv", ("9" * 5000 + "F0,0F1\n1F0\n").encode()),
                         "compute_only.csv:1:1:", "stage number of 5000 digits"),
    "unknown action": (lambda d: _write(d, "compute_comms.csv", b"0F0,0SEND_F0,0X1\n1RECV_F0,1F0\n"),
                       "compute_comms.csv:1:3:", "bad action '0X1'"),
    "microbatch past M": (lambda d: _write(d, "compute_only.csv", b"0F0,0F7,0B0,0B1\n1F0,1F1,1B0,1B1\n"),
                          "compute_only.csv:1:2:", "names microbatch 7, the plan has 2 microbatches"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_runner_refuses_a_malformed_plan_or_csv_with_exit_2_and_its_location(plan_dir, tmp_path, capsys, name):
    edit, where, what = MALFORMED[name]
    d = _copy_plan(plan_dir, tmp_path / "plan")
    edit(d)
    assert run.main([d, "--model", LLAMA]) == 2
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if "error: " in l]
    assert len(lines) == 1 and f"error: {os.path.join(d, where)}" in lines[0] and what in lines[0], err


def test_runner_refusal_through_the_module(plan_dir, tmp_path):
    d = _copy_plan(plan_dir, tmp_path / "plan")
    MALFORMED["unknown action"][0](d)
    p = _module("pipesmith.torch.run", d, "--model", LLAMA)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert f"rank 0: error: {d}/compute_comms.csv:1:3: bad action '0X1'" in p.stderr, p.stderr


def test_the_plan_reader_bounds_what_a_small_file_asks_for(plan_dir, tmp_path):
    # 3 * S * M past the ops limit of a plan: refused before any list of that size exists.
    d = _copy_plan(plan_dir, tmp_path / "plan")
    _edit_json(d, lambda doc: (doc.__setitem__("microbatches", 1_000_000), doc.__setitem__("num_stages", 100_000)))
    with pytest.raises(PlanError, match="100,000 stages x 1,000,000 microbatches make 300,000,000,000 F/I/W ops"):
        load_plan(d)


# ---- the package's types ---------------------------------------------------------------------------

def test_every_public_exception_class_of_the_package_is_a_pipesmith_error():
    import importlib
    import inspect
    import pkgutil
    import pipesmith.torch
    found = []
    for info in pkgutil.iter_modules(pipesmith.torch.__path__):
        module = importlib.import_module(f"pipesmith.torch.{info.name}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, BaseException) and cls.__module__ == module.__name__ and not name.startswith("_"):
                found.append(cls)
                assert issubclass(cls, pipesmith.Error), f"{module.__name__}.{name}"
    assert len(found) >= 6, found
    from pipesmith.torch.link import LinkError
    from pipesmith.torch.model_yaml import ModelFileError
    from pipesmith.torch.output_file import OutputPathError
    from pipesmith.torch.pipeline import PipelineBuildError
    from pipesmith.torch.profile import ProfileError
    for cls in (PlanError, ModelFileError, PipelineBuildError, ProfileError, LinkError, OutputPathError):
        assert issubclass(cls, pipesmith.BadInputError) and issubclass(cls, pipesmith.Error), cls
        e = cls("x.yaml:3:4: wrong")
        assert e.code == "bad_input" and e.exit_code == 1 and isinstance(e, ValueError)
    assert pipesmith.InfeasibleError("x").exit_code == 2 and pipesmith.RuntimeFailure("x").code == "runtime"


@pytest.mark.parametrize("text,stage,kind,mb", [("3F1", 3, "F", 1), ("0SEND_B2", 0, "SEND_B", 2),
                                                ("1REDUCE_GRAD", 1, "REDUCE_GRAD", None), (" 2W3 ", 2, "W", 3),
                                                ("12RECV_F40", 12, "RECV_F", 40), ("0UNSHARD", 0, "UNSHARD", None)])
def test_action_from_str_and_back(text, stage, kind, mb):
    a = Action.from_str(text)
    assert (a.stage, a.kind, a.microbatch) == (stage, kind, mb)
    assert str(a) == text.strip() and Action.from_str(str(a)) == a


def test_overlapped_action_and_refusals():
    a = Action.from_str("(0F1;1B0)OVERLAP_F_B")
    assert a.kind == "OVERLAP_F_B" and [str(x) for x in a.leaves()] == ["0F1", "1B0"]
    assert str(a) == "(0F1;1B0)OVERLAP_F_B" and Action.from_str("") is None
    for bad, why in [("3X1", "bad action '3X1'"), ("3F", "F needs a microbatch"),
                     ("1REDUCE_GRAD2", "REDUCE_GRAD takes no microbatch"), ("0F1x", "bad action '0F1x'"),
                     ("(0F1;0SEND_F1)OVERLAP_F_B", "sub-action '0SEND_F1' is a SEND_F"),
                     ("9" * 5000 + "F1", "stage number of 5000 digits"), ("0F" + "1" * 40, "microbatch number of 40")]:
        with pytest.raises(PlanError, match=why):
            Action.from_str(bad)


# ---- flags of the benches and the link -------------------------------------------------------------

@pytest.mark.parametrize("flags,what", [(["--sizes-kb", "nan,4"], "--sizes-kb"), (["--sizes-kb", "1,1e400"], "--sizes-kb"),
                                        (["--sizes-kb", "1,-4"], "--sizes-kb"),
                                        (["--repeats", "99999999999999999999"], "--repeats in 1..1000"),
                                        (["--devices", "1"], "--devices in 2..100000")])
def test_link_flags_are_refused_before_measuring(capsys, flags, what):
    with pytest.raises(SystemExit) as e:
        link.main(flags)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert what in err and "Traceback" not in err, err


@pytest.mark.parametrize("flags", [["--timeout", "nan"], ["--timeout", "inf"], ["--budget", "1e400"],
                                   ["--repeats", "99999999999999999999"], ["--warmup", "-1"]])
def test_gpu_layers_flags_are_refused_with_exit_2(tmp_path, flags):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gpu-layers"), "measure", "--out",
                        str(tmp_path / "out"), "--device", "cpu", *flags], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr and flags[0] in p.stderr, p.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flags,what", [(["--steps", "0"], "out of range: --steps 0"),
                                        (["--devices", "99999999999999999999"], "out of range: --devices"),
                                        (["--models", "nope"], "no such shipped model: nope"),
                                        (["--json", "/"], "cannot write '/' (--json): it is a directory")])
def test_bench_torch_flags_are_refused_with_exit_2(flags, what):
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "torch_bench.py"), *flags], capture_output=True,
                       text=True, timeout=60, env=_env())
    assert p.returncode == 2 and what in p.stderr and "Traceback" not in p.stderr, p.stderr


# ---- the Python API --------------------------------------------------------------------------------

CLUSTER = os.path.join(ROOT, "configs", "clusters", "8xh100-80gb.yaml")


def test_synthesize_refuses_a_dump_smt2_that_is_the_model(tmp_path):
    model = tmp_path / "model.yaml"
    shutil.copyfile(LLAMA, model)
    spec = pipesmith.load_spec(model, cluster=CLUSTER, devices=2, microbatches=4)
    with pytest.raises(pipesmith.BadInputError, match=f"refusing to write '{model}' \\(dump_smt2\\): it is the input "
                                                      f"file '{model}'"):
        pipesmith.synthesize(spec, evaluations=2, rlimit=100_000, dump_smt2=model)
    hard = tmp_path / "cluster-link.smt2"
    os.link(CLUSTER, hard)
    with pytest.raises(pipesmith.BadInputError, match="it is the input file"):
        pipesmith.synthesize(spec, evaluations=2, rlimit=100_000, dump_smt2=hard)
    assert model.read_bytes() == open(LLAMA, "rb").read()


def test_export_write_refuses_a_directory_holding_its_model(tmp_path):
    sched = tmp_path / "s.yaml"
    pipesmith.baseline(_spec(), "1f1b").schedule.write(str(sched))
    d = tmp_path / "out"
    d.mkdir()
    model = d / "plan.json"  # the model file, named as the export's plan.json
    shutil.copyfile(LLAMA, model)
    ex = pipesmith.export_pytorch(sched, model=model)
    with pytest.raises(pipesmith.BadInputError, match=f"refusing to write '{model}' \\(out_dir\\): it is the input file"):
        ex.write(d)
    assert model.read_bytes() == open(LLAMA, "rb").read() and sorted(os.listdir(d)) == ["plan.json"]
    os.link(sched, d / "compute_only.csv")  # a hard link of the schedule file
    os.remove(model)
    ex = pipesmith.export_pytorch(str(sched), model=LLAMA)
    with pytest.raises(pipesmith.BadInputError, match="compute_only.csv' \\(out_dir\\): it is the input file"):
        ex.write(str(d))
    written = pipesmith.export_pytorch(str(sched), model=LLAMA).write(str(tmp_path / "fine"))
    assert len(written) == 3


@pytest.mark.parametrize("call,what", [
    (lambda: pipesmith.load_spec(LLAMA, devices=2**40), "devices must be an integer in [1, 100,000]"),
    (lambda: pipesmith.load_spec(LLAMA, devices=2.0), "devices must be an integer"),
    (lambda: pipesmith.load_spec(LLAMA, microbatches=True), "microbatches must be an integer"),
    (lambda: pipesmith.load_spec(LLAMA, memory_limit_gb=float("nan")), "memory_(limit_)?gb.* must be"),
    (lambda: pipesmith.load_spec(LLAMA, memory_limit_gb=10**400), "memory_(limit_)?gb.* must be"),
    (lambda: pipesmith.load_spec(LLAMA + "\0.yaml"), "holds a NUL character"),
    (lambda: pipesmith.load_spec(LLAMA, cluster=CLUSTER + "\0"), "cluster .* holds a NUL character"),
    (lambda: pipesmith.read_schedule(BAD_CSV, microbatches=-5), "microbatches must be an integer in [1, 1,000,000], got -5"),
    (lambda: pipesmith.read_schedule(BAD_CSV, stages=2**63), "stages must be an integer in [1, 100,000]"),
    (lambda: pipesmith.verify(BAD_CSV, memory_limit_gb=-1), "memory_limit_gb must be a finite number"),
    (lambda: pipesmith.synthesize(_spec(), seed=2**32), "seed must be an integer in [0, 4,294,967,295]"),
    (lambda: pipesmith.synthesize(_spec(), rlimit=-1), "rlimit must be an integer"),
    (lambda: pipesmith.synthesize(_spec(), evaluations=2**31), "evaluations must be an integer in [0, 1,000,000,000]"),
    (lambda: pipesmith.synthesize(_spec(), z3_threads=10**30), "z3_threads must be an integer in [1, 64]"),
    (lambda: pipesmith.synthesize(_spec(), time_limit_s=float("nan")), "time_limit_s must be a number of seconds > 0 .'inf' for no limit., got nan"),
    (lambda: pipesmith.synthesize(_spec(), stages_per_device=2**40), "stages_per_device must be an integer"),
    (lambda: pipesmith.synthesize(_spec(), partition="bal\0anced"), "partition .* holds a NUL character"),
    (lambda: pipesmith.baseline(_spec(), "1f1b", stages_per_device=-1), "stages_per_device must be an integer in [0,"),
    (lambda: pipesmith.bound(_spec(), stages_per_device=2**33), "stages_per_device must be an integer in [0,"),
])
def test_api_numbers_and_paths_are_checked_as_the_command_checks_them(call, what):
    with pytest.raises(pipesmith.BadInputError, match=what.replace("[", "\\[").replace("]", "\\]")) as e:
        call()
    assert e.value.exit_code == 1 and e.value.code == "bad_input"


BAD_CSV = os.path.join(ROOT, "tests", "data", "pytorch", "ScheduleGPipe_p2_m4_v1.csv")


def _spec():
    return pipesmith.load_spec(LLAMA, cluster=CLUSTER, devices=2, microbatches=4)


class _Boom(Exception):
    pass


class _BadBool:
    def __bool__(self):
        raise _Boom("__bool__ of the progress callback's return value")


@pytest.mark.parametrize("progress", [lambda p: (_ for _ in ()).throw(_Boom("raised by the callback")),
                                      lambda p: _BadBool()], ids=["raises", "return value's __bool__ raises"])
def test_an_exception_from_the_progress_callback_propagates(progress):
    with pytest.raises(_Boom):
        pipesmith.synthesize(_spec(), evaluations=30, rlimit=200_000, progress=progress)


# ---- memory before allocating, and models with a vision encoder ------------------------------------

def test_profile_full_width_refuses_a_model_the_host_cannot_hold(tmp_path):
    # llama2-7b at full width: 6.7 B parameters and their gradients in float32, 54 GB, refused before
    # any of it is allocated. The address space is capped at 40 GB so the verdict is the same on any
    # machine (the limit applies as `ulimit -v` would).
    import resource

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (40 << 30, resource.RLIM_INFINITY))

    out = tmp_path / "p.yaml"
    p = subprocess.run([sys.executable, "-m", "pipesmith.torch.profile", LLAMA, "--full-width", "-o", str(out)],
                       capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=120, preexec_fn=cap)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert "pipesmith profile: error: profiling 'llama2-7b' (full width, method chain, float32) needs at least " in p.stderr
    assert "6.74 B parameters and their gradients 53.9 GB" in p.stderr and "ulimit -v leaves" in p.stderr, p.stderr
    assert not out.exists()


@pytest.fixture(scope="module")
def gemma3() -> str:
    """Gemma-3-4B as `pipesmith import hf` writes it (tests/data/hf_configs_written/gemma-3-4b.json):
    27 vision-encoder layers before the embedding."""
    return os.path.join(ROOT, "tests", "data", "pytorch", "gemma-3-4b-imported.yaml")


def test_reference_builds_a_vision_encoder_before_the_embedding(gemma3):
    import torch
    from pipesmith.torch.model_yaml import load_model
    from pipesmith.torch.reference import ReferenceTransformer, Scale, loss_fn
    model = ReferenceTransformer(load_model(gemma3), Scale())
    assert model.input_names == ("tokens", "h") and model.layout[26] == ("tokens", "h") and model.layout[27] == ("h",)
    assert not model.chain[0].parts["attention"].f.core.causal and model.chain[30].parts["attention"].f.core.causal
    tokens, labels = model.batch(2)
    inputs = model.step_inputs(tokens, labels)
    whole = loss_fn(model(*inputs), labels)
    # Cut inside the encoder and again after the embedding: the tokens travel with the image features.
    a, b, c = model.stage(0, 10), model.stage(11, 30), model.stage(31, len(model.chain) - 1)
    assert a.out_names == ("tokens", "h") and b.in_names == ("tokens", "h") and b.out_names == ("h",)
    staged = loss_fn(c(b(*a(*inputs))), labels)
    assert torch.equal(whole, staged)
    whole.backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.chain[0].parameters())


def test_torch_run_and_isolated_profile_of_gemma3(gemma3, tmp_path):
    sched, d = tmp_path / "s.yaml", tmp_path / "pt"
    cli("baseline", gemma3, "--devices", "2", "--microbatches", "2", "--schedule", "1f1b", "-o", str(sched))
    cli("export", str(sched), "--to", "pytorch", "-o", str(d), "--model", gemma3)
    rc, out = torchrun(2, ["-m", "pipesmith.torch.run", str(d), "--model", gemma3, "--timeout", "120"], timeout=300)
    assert rc == 0 and out.count("match the unpipelined run") == 2, out[-4000:]
    prof = tmp_path / "prof.yaml"
    p = _module("pipesmith.torch.profile", gemma3, "--method", "isolated", "--hidden", "16", "--seq", "8", "--vocab",
                "64", "--repeats", "1", "--warmup", "0", "-o", str(prof))
    assert p.returncode == 0, p.stderr
    assert "vision-encoder" in p.stdout and prof.exists()
    p = _module("pipesmith.torch.profile", gemma3, "--method", "single", "--full-width", "-o", str(tmp_path / "f.yaml"))
    assert p.returncode == 1 and "layer 0 (type 'Y' vision-encoder) has hidden_size 1152, the model 2560" in p.stderr


def test_write_methods_take_path_likes_and_refuse_nul(tmp_path):
    schedule = pipesmith.baseline(_spec(), "1f1b").schedule
    schedule.write(tmp_path / "s.yaml")  # an os.PathLike, as every path argument of the package
    assert (tmp_path / "s.yaml").read_text() == schedule.to_yaml()
    with pytest.raises(pipesmith.BadInputError, match="path '.*s2' holds a NUL character"):
        schedule.write(str(tmp_path / "s2") + "\0.yaml")
    with pytest.raises(pipesmith.BadInputError, match="path must be a path \\(str or os.PathLike\\), got int"):
        schedule.write(3)
    ex = pipesmith.export_pytorch(schedule, model=LLAMA)
    with pytest.raises(pipesmith.BadInputError, match="out_dir '.*' holds a NUL character"):
        ex.write(str(tmp_path) + "\0x")
    assert sorted(os.listdir(tmp_path)) == ["s.yaml"]


@pytest.mark.parametrize("text,where,what", [
    (b"model:\n  name: x\n  layer_types: {L: {kind: head}}\n  layers: [{type: L, repeat: 1000000000}]\n",
     ":4:12:", "'repeat' must be an integer in [1, 100,000], got 1000000000"),
    (b"model:\n  name: x\n  layer_types: {L: {kind: head}}\n  layers: [{type: L, repeat: 60000}, {type: L, repeat: 60000}]\n",
     ":4:38:", "more than 100,000 layers"),
    (b"model: " + b"[" * 5000 + b"]" * 5000 + b"\n", ":", "nested more than 64 levels deep"),
    (b"model:\n  name: \"\xc3\x28\"\n", ":2:10:", "not UTF-8 (byte 0xc3)"),
    (b"model:\n  name: x\n  layer_types: {L: {kind: head, architecture: [1]}}\n  layers: L\n", ":3:", "'architecture' must be a mapping"),
], ids=["repeat 1e9", "layers past the limit", "deep nesting", "not UTF-8", "architecture a list"])
def test_runner_refuses_a_malformed_model_yaml_with_exit_2(plan_dir, tmp_path, capsys, text, where, what):
    model = tmp_path / "m.yaml"
    model.write_bytes(text)
    assert run.main([plan_dir, "--model", str(model)]) == 2
    err = capsys.readouterr().err
    assert f"error: {model}{where}" in err and what in err and "Traceback" not in err, err


def test_the_python_writer_follows_links_keeps_modes_and_refuses_what_the_command_refuses(tmp_path):
    from pipesmith.torch.output_file import OutputPathError, check_output_paths, write_output_file
    target = tmp_path / "real.yaml"
    target.write_text("old")
    os.chmod(target, 0o640)
    link = tmp_path / "link.yaml"
    os.symlink(target, link)
    write_output_file(str(link), "new", "-o")  # the file the link points to is replaced, the link stays
    assert os.path.islink(link) and target.read_text() == "new" and (os.stat(target).st_mode & 0o777) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["link.yaml", "real.yaml"]  # no temporary left
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    with pytest.raises(OutputPathError, match="it is a symbolic link that loops"):
        check_output_paths([(str(loop), "-o")])
    with pytest.raises(OutputPathError, match="-o and --also-fused both name"):
        check_output_paths([(str(target), "-o"), (str(link), "--also-fused")])
    with pytest.raises(OutputPathError, match="directory '.*missing' does not exist"):
        write_output_file(str(tmp_path / "missing" / "x.yaml"), "x", "-o")
    check_output_paths([("-", "-o"), ("", "--json")], [str(target)])  # standard output, nothing named
