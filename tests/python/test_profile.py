"""The PyTorch profiler (pipesmith.torch.profile), the link fit (pipesmith.torch.link) and
`pipesmith profile --backend torch`. Quick: tiny widths, few repeats; no assertion on how long
anything takes beyond loose ratios between medians taken side by side."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import PACKAGE_DIR, ROOT, cli, model_path
from pipesmith.torch.link import LinkError, fit_link
from pipesmith.torch.model_yaml import load_model
from pipesmith.torch.output_file import OutputPathError
from pipesmith.torch.profile import ProfileError, ProfileOptions, profile_model, profiled_yaml, write_atomic
from pipesmith.torch.profiler import ProfileResult, TypeProfile

TINY = ProfileOptions(hidden=16, seq=8, vocab=64, rows=1, warmup=1, repeats=2)


def _env(**extra) -> dict:
    env = dict(os.environ)
    env["PIPESMITH_PYTHON"] = sys.executable
    env["PYTHONPATH"] = PACKAGE_DIR + os.pathsep + env.get("PYTHONPATH", "")  # the package under test
    env["OMP_NUM_THREADS"] = "1"
    env.update(extra)
    return env


def _pipesmith(*args, env=None) -> subprocess.CompletedProcess:
    from conftest import pipesmith_binary
    return subprocess.run([pipesmith_binary(), *args], capture_output=True, text=True, timeout=120,
                          env=env or _env(), cwd=ROOT)


@pytest.fixture(scope="module")
def gemma_profile(tmp_path_factory):
    spec = load_model(model_path("gemma-like"))
    result = profile_model(spec, TINY)
    out = tmp_path_factory.mktemp("prof") / "gemma-profiled.yaml"
    write_atomic(str(out), profiled_yaml(model_path("gemma-like"), result))
    return spec, result, str(out)


def test_profiled_yaml_is_read_by_lower_and_synth(gemma_profile, tmp_path):
    spec, result, path = gemma_profile
    assert {t.symbol for t in result.types} == {l.symbol for l in spec.layers}
    lowered = cli("lower", path, "--devices", "2", "--microbatches", "4")
    assert "gemma-like-profiled" in lowered.stdout
    sched = tmp_path / "s.yaml"
    cli("synth", path, "--devices", "2", "--microbatches", "4", "--evaluations", "2", "--quiet", "--time-limit", "30",
        "-o", str(sched))
    cli("baseline", path, "--devices", "2", "--microbatches", "4", "--schedule", "zbv", "-o", str(tmp_path / "b.yaml"))
    # The layer list and module names are kept, and the reference model builds from the profile.
    again = load_model(path)
    assert [(l.symbol, l.modules) for l in again.layers] == [(l.symbol, l.modules) for l in spec.layers]
    assert again.types["L"].vocab_shards == spec.types["L"].vocab_shards


def test_profiled_numbers_are_the_yaml_numbers(gemma_profile):
    import yaml
    _, result, path = gemma_profile
    doc = yaml.safe_load(open(path))
    for t in result.types:
        entry = doc["model"]["layer_types"][t.symbol]
        for k, v in t.numbers().items():
            assert entry[k] == pytest.approx(v, rel=1e-5), (t.symbol, k)
        assert entry["wgrad_stash_mb"] <= entry["activation_mb"]
        # The fused B PyTorch measured is the type's backward_ms, which the checker's B takes.
        assert entry["backward_ms"] == pytest.approx(t.backward_ms, rel=1e-5) and entry["backward_ms"] > 0


def test_memory_and_params_are_the_modules(gemma_profile):
    _, result, _ = gemma_profile
    by = {t.symbol: t for t in result.types}
    tokens = TINY.rows * TINY.seq
    # The MLP hands on the hidden state [rows, seq, hidden] in float32 (and the labels, int64, which a
    # sharded head needs further on).
    assert by["F"].output_mb * 1e6 == tokens * TINY.hidden * 4 + tokens * 8
    assert by["F"].activation_mb > 0 and by["S"].activation_mb > 0
    from pipesmith.torch.reference import ReferenceTransformer, Scale
    model = ReferenceTransformer(load_model(model_path("gemma-like")), Scale(hidden=16, seq=8, vocab=64))
    for t in result.types:
        n = sum(p.numel() for p in model.chain[t.layer].parameters())
        assert t.params_m * 1e6 == pytest.approx(n)


def test_f_i_w_positive_and_i_plus_w_near_a_fused_backward():
    spec = load_model(model_path("llama2-7b"))
    result = profile_model(spec, ProfileOptions(hidden=64, seq=32, vocab=128, rows=2, warmup=2, repeats=5))
    for t in result.types:
        assert t.forward_ms > 0 and t.backward_weight_ms > 0, t
        if t.symbol != "E":  # the embedding has no input gradient (PyTorch's first stage skips I)
            assert t.backward_input_ms > 0, t
    dec = next(t for t in result.types if t.symbol == "T")
    ratio = (dec.backward_input_ms + dec.backward_weight_ms) / dec.backward_ms
    assert 0.1 < ratio < 10, f"I + W = {dec.backward_input_ms + dec.backward_weight_ms:.3f} ms, B = {dec.backward_ms:.3f} ms"


def test_link_fit_recovers_a_synthetic_link():
    sizes = [1024 * 4 ** k for k in range(8)]
    ms = [0.05 + b / 1e6 / 2.5 for b in sizes]  # 50 us, 2.5 GB/s
    fit = fit_link(sizes, ms)
    assert fit.latency_us == pytest.approx(50, rel=1e-6)
    assert fit.bandwidth_gb_per_s == pytest.approx(2.5, rel=1e-6)
    assert fit.worst_rel_error < 1e-9
    noisy = [t * (1.1 if i % 2 else 0.9) for i, t in enumerate(ms)]
    fit = fit_link(sizes, noisy)
    assert 30 < fit.latency_us < 70 and 2.0 < fit.bandwidth_gb_per_s < 3.1
    # A negative intercept (noise) is clamped: the slope is refitted through the origin.
    fit = fit_link([1000, 2000, 4000], [0.0009, 0.002, 0.0041])
    assert fit.latency_us == 0 and fit.bandwidth_gb_per_s > 0


@pytest.mark.parametrize("sizes, ms, msg", [
    ([1000], [1.0], "at least two"),
    ([1000, 1000], [1.0, 1.1], "two different sizes"),
    ([1000, 2000], [1.0, 0.5], "do not grow"),
    ([1000, 2000], [0.0, 0.5], "must be > 0"),
])
def test_link_fit_refuses_what_it_cannot_fit(sizes, ms, msg):
    with pytest.raises(LinkError, match=msg):
        fit_link(sizes, ms)


def test_cli_profile_backend_torch(tmp_path):
    out = tmp_path / "llama-profiled.yaml"
    cluster = os.path.join(ROOT, "configs", "clusters", "8xh200.yaml")
    p = _pipesmith("profile", "--backend", "torch", model_path("llama2-7b"), "--cluster", cluster, "-o", str(out),
                   "--hidden", "16", "--seq", "8", "--vocab", "64", "--rows", "1", "--repeats", "1", "--warmup", "0")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "decoder" in p.stdout and f"wrote {out}" in p.stdout
    text = out.read_text()
    assert text.startswith("# Profiled by") and "8xH200-141GB" in text
    assert "module: tok_embeddings" in text
    cli("lower", str(out))
    # stdout when -o is not given
    p = _pipesmith("profile", "--backend", "torch", model_path("llama2-7b"), "--hidden", "8", "--seq", "4",
                   "--vocab", "16", "--rows", "1", "--repeats", "1", "--warmup", "0")
    assert p.returncode == 0 and p.stdout.startswith("# Profiled by"), p.stderr
    p = _pipesmith("profile", "--help")
    assert p.returncode == 0 and "torch" in p.stdout


def test_cli_profile_backend_torch_bad_input(tmp_path):
    model = model_path("llama2-7b")
    p = _pipesmith("profile", "--backend", "torch", model, "--scale", "2")
    assert p.returncode == 1 and "--scale applies to --backend host and cuda" in p.stderr
    p = _pipesmith("profile", model, "--hidden", "64")
    assert p.returncode == 1 and "--hidden applies to --backend torch only" in p.stderr
    p = _pipesmith("profile", "--backend", "torch", model, "--also-fused", str(tmp_path / "f.yaml"))
    assert p.returncode == 1 and "--also-fused needs -o" in p.stderr
    p = _pipesmith("profile", "--backend", "torch", model, "-o", model)
    assert p.returncode == 1 and "llama2-7b.yaml" in p.stderr
    p = _pipesmith("profile", "--backend", "torch", str(tmp_path / "missing.yaml"), "--hidden", "8")
    assert p.returncode == 1 and "missing.yaml" in p.stderr and "cannot read" in p.stderr
    p = _pipesmith("profile", "--backend", "torch", model, env=_env(PIPESMITH_PYTHON=str(tmp_path / "no-python")))
    assert p.returncode == 1 and "cannot run" in p.stderr and "PIPESMITH_PYTHON" in p.stderr
    # A Python without torch: a stand-in package whose import fails.
    fake = tmp_path / "fake" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('no torch in this Python')\n")
    p = _pipesmith("profile", "--backend", "torch", model, "--hidden", "8",
                   env=_env(PYTHONPATH=str(tmp_path / "fake")))
    assert p.returncode == 1 and "PyTorch does not import" in p.stderr, p.stderr


def test_module_errors(tmp_path):
    with pytest.raises(ProfileError, match=r"^hidden must be an integer in \[2, 65536\], got 1$"):
        profile_model(load_model(model_path("llama2-7b")), ProfileOptions(hidden=1))
    with pytest.raises(ProfileError, match="repeats"):
        profile_model(load_model(model_path("llama2-7b")), ProfileOptions(repeats=0))
    with pytest.raises(OutputPathError, match="it is a directory"):
        write_atomic(str(tmp_path), "x")
    src = tmp_path / "m.yaml"
    src.write_text("x")
    with pytest.raises(OutputPathError, match="it is the input file"):
        write_atomic(str(src), "y", (str(src),))
    assert src.read_text() == "x"
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def _fake_result(spec, **kw) -> ProfileResult:
    """A profile of every used layer type with made-up numbers (what the writer gets, without measuring)."""
    symbols = list(dict.fromkeys(layer.symbol for layer in spec.layers))
    types = tuple(TypeProfile(symbol=s, name=spec.types[s].name, layer=k, forward_ms=1.0 + k / 7,
                              backward_input_ms=1.25, backward_weight_ms=0.75, backward_ms=2.0, activation_mb=1234.5678,
                              wgrad_stash_mb=1e-4, output_mb=1 / 3, params_m=7e8, samples=2, weight_walk_ms=0.0)
                  for k, s in enumerate(symbols))
    return ProfileResult(model=spec.name, where="cpu", options=TINY, types=types,
                         unprofiled=tuple(s for s in spec.types if s not in symbols), **kw)


@pytest.mark.parametrize("name", ["llama2-7b", "deepseek-like", "gemma-like"])
def test_profiled_yaml_is_the_core_writers_file_of_the_source_document(name, tmp_path):
    import yaml
    path = model_path(name)
    result = _fake_result(load_model(path))
    cluster = os.path.join(ROOT, "configs", "clusters", "8xh200.yaml")
    text = profiled_yaml(path, result, cluster)
    # The source document, its numbers set and its cluster replaced, read back value for value.
    want = yaml.safe_load(open(path, encoding="utf-8"))
    want["model"]["name"] += "-profiled"
    for t in result.types:
        want["model"]["layer_types"][t.symbol].update({k: float(f"{v:.6g}") for k, v in t.numbers().items()})
    want["cluster"] = yaml.safe_load(open(cluster, encoding="utf-8"))["cluster"]
    assert yaml.safe_load(text) == want
    # The layout of ir/model_write.h: header, schema, one line per layer type and per layer entry, the cluster
    # as one flow map; numbers as the core prints them (shortest text, no '.0').
    body = text[text.index("schema: 1\n"):]
    assert text.startswith("# Profiled by") and body.startswith("schema: 1\nmodel:\n  name: ")
    for t in result.types:  # a symbol YAML would read as a bool ('Y') is quoted
        assert sum(line.startswith((f"    {t.symbol}: {{", f'    "{t.symbol}": {{')) for line in body.splitlines()) == 1
    assert "params_m: 700000000}" in body and "weight_walk_ms: 0," in body and "forward_ms: 1," in body
    assert "\ncluster: {name: \"8xH200-141GB\", devices: 8," in body
    out = tmp_path / "p.yaml"
    write_atomic(str(out), text)
    lowered = cli("lower", str(out), "--json")
    assert f"{name}-profiled" in lowered.stdout


def test_model_writer_refuses_what_a_model_file_cannot_hold():
    import yaml
    import pipesmith
    from pipesmith import _core
    doc = {"model": {"name": "m", "layer_types": {"T": {"name": "t", "kind": "mlp"}}, "layers": "TT"}}
    assert _core.format_model_yaml(doc, "# h") == ("# h\nschema: 1\nmodel:\n  name: m\n  layer_types:\n"
                                                   "    T: {name: t, kind: mlp}\n  layers: TT\n")
    # A float with a bare exponent gets a '.0' so that YAML 1.1 readers (PyYAML) read a number, not a string.
    small = _core.format_model_yaml({**doc, "cluster": {"memory_gb": 8e-05, "big": 1e300, "count": 2 ** 70}})
    assert small.endswith("cluster: {memory_gb: 8.0e-05, big: 1.0e+300, count: 1180591620717411303424}\n")
    assert yaml.safe_load(small)["cluster"] == {"memory_gb": 8e-05, "big": 1e300, "count": 2 ** 70}
    with pytest.raises(pipesmith.BadInputError, match="model: key 'memory' is not part of a model file"):
        _core.format_model_yaml({**doc, "model": {**doc["model"], "memory": 1}})
    with pytest.raises(pipesmith.BadInputError, match=r"model.layer_types.T.x: a value of type .*set"):
        _core.format_model_yaml({"model": {**doc["model"], "layer_types": {"T": {"x": {1}}}}})


def test_profile_without_the_extension_writes_the_same_document(tmp_path):
    """The measuring step without a pipesmith build (the source tree's python/, as bench/gpu-layers runs it)
    writes with PyYAML: the same document as the core's writer, which lower reads to the same model."""
    import pickle
    import yaml
    path = model_path("deepseek-like")
    result = _fake_result(load_model(path), sweep_ms=1.5)
    (tmp_path / "r.pickle").write_bytes(pickle.dumps(result))
    code = ("import pickle, sys\n"
            "from pipesmith.torch.profile_yaml import _core_writer, profiled_yaml\n"
            "assert _core_writer() is None\n"
            "r = pickle.load(open(sys.argv[1], 'rb'))\n"
            "open(sys.argv[3], 'w').write(profiled_yaml(sys.argv[2], r))\n")
    env = _env()
    env["PYTHONPATH"] = os.path.join(ROOT, "python")  # the source tree: no pipesmith._core
    p = subprocess.run([sys.executable, "-c", code, str(tmp_path / "r.pickle"), path, str(tmp_path / "py.yaml")],
                       capture_output=True, text=True, timeout=120, env=env, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr
    fallback = (tmp_path / "py.yaml").read_text()
    core = profiled_yaml(path, result)
    (tmp_path / "core.yaml").write_text(core)
    assert fallback != core and "params_m: 700000000.0" in fallback and "params_m: 700000000}" in core
    assert yaml.safe_load(fallback) == yaml.safe_load(core)
    assert fallback.split("schema: 1")[0] == core.split("schema: 1")[0]  # the header
    lowered = [cli("lower", str(tmp_path / f), "--json").stdout.replace(f, "F") for f in ("py.yaml", "core.yaml")]
    assert lowered[0] == lowered[1]


def test_fused_numbers_make_i_plus_w_the_fused_b(gemma_profile):
    _, result, _ = gemma_profile
    for t in result.types:
        n = t.numbers("fused")
        if t.backward_input_ms + t.backward_weight_ms > 0:
            assert n["backward_input_ms"] + n["backward_weight_ms"] == pytest.approx(t.backward_ms)
        assert n["forward_ms"] == t.forward_ms and n["activation_mb"] == t.activation_mb


def test_steptime_counts_the_actions_it_times(tmp_path):
    """pipesmith.torch.steptime on a 1F1B and a ZB-H1 plan (P = 2, M = 4), their steps taken in turn
    as bench/torch takes them: each rank times its own schedule's compute actions (1F1B: F and B of each
    microbatch; ZB-H1: F, I and W), and each step splits into busy, wait and the rest."""
    import json
    from conftest import export, torchrun
    model = model_path("llama2-7b")
    cases = []
    for kind in ("1f1b", "zb-h1"):
        cli("baseline", model, "--devices", "2", "--microbatches", "4", "--schedule", kind, "-o", str(tmp_path / f"{kind}.yaml"))
        export(str(tmp_path / f"{kind}.yaml"), str(tmp_path / kind), model)
        cases += ["--case", str(tmp_path / kind), model]
    out = tmp_path / "t.json"
    rc, log = torchrun(2, ["-m", "pipesmith.torch.steptime", *cases, "--steps", "2",
                           "--hidden", "16", "--seq", "8", "--vocab", "64", "--rows-per-microbatch", "1",
                           "--json", str(out)], timeout=120)
    assert rc == 0, log[-4000:]
    r, z = json.loads(out.read_text())
    for res in (r, z):
        assert res["P"] == 2 and res["M"] == 4 and len(res["steps_ms"]) == 2 and res["probe_ms"] > 0
    for rank in r["median_step_ranks"]:
        assert rank["actions"] == 8
        assert rank["F_ms"] > 0 and rank["B_ms"] > 0 and rank["I_ms"] == 0 and rank["W_ms"] == 0
        assert rank["F_ms"] + rank["B_ms"] + rank["wait_ms"] <= rank["step_ms"]
    for rank in z["median_step_ranks"]:
        assert rank["actions"] == 12 and rank["F_ms"] > 0 and rank["I_ms"] > 0 and rank["W_ms"] > 0
        assert rank["B_ms"] == 0
        assert rank["F_ms"] + rank["I_ms"] + rank["B_ms"] + rank["W_ms"] + rank["wait_ms"] <= rank["step_ms"]


_COUNT_BACKWARDS = r'''
import json, sys, torch, torch.distributed as dist
from torch.distributed.pipelining import stage as stage_mod
calls = {"input": 0, "full": 0}
orig_input, orig_full = stage_mod.stage_backward_input, stage_mod.stage_backward
def count_input(*a, **k):
    calls["input"] += 1
    return orig_input(*a, **k)
def count_full(*a, **k):
    calls["full"] += 1
    return orig_full(*a, **k)
stage_mod.stage_backward_input, stage_mod.stage_backward = count_input, count_full
from pipesmith.torch import pipeline, steptime
from pipesmith.torch.reference import Scale
torch.set_num_threads(1)
dist.init_process_group("gloo")
steptime.time_case(sys.argv[1], sys.argv[2], "compute_comms", Scale(hidden=8, seq=4, vocab=16), torch.float64, 1, 1)
# One file per rank: two ranks' prints share torchrun's stdout and may interleave mid-line.
with open(f"{sys.argv[3]}/counts.{dist.get_rank()}.json", "w") as f:
    json.dump(calls, f)
pipeline.finish()
'''


def test_pytorch_first_stage_runs_its_split_backward_as_one_full_backward(tmp_path):
    """What the profile's embedding numbers and docs/pytorch.md ("Measured vs simulated") rely on:
    in a ZB-H1 step PyTorch's first stage never calls stage_backward_input; each of its W runs a full
    stage_backward. The last stage calls stage_backward_input once per microbatch and no full backward.
    Counted over 2 steps (the probe sweeps call neither)."""
    from conftest import export, torchrun
    model = model_path("llama2-7b")
    cli("baseline", model, "--devices", "2", "--microbatches", "4", "--schedule", "zb-h1", "-o", str(tmp_path / "s.yaml"))
    export(str(tmp_path / "s.yaml"), str(tmp_path / "pt"), model)
    script = tmp_path / "count.py"
    script.write_text(_COUNT_BACKWARDS)
    rc, log = torchrun(2, [str(script), str(tmp_path / "pt"), model, str(tmp_path)], timeout=120)
    assert rc == 0, log[-4000:]
    import json
    counts = {r: json.loads((tmp_path / f"counts.{r}.json").read_text()) for r in (0, 1)}
    assert counts[0] == {"input": 0, "full": 8}, counts   # 2 steps x M = 4
    assert counts[1] == {"input": 8, "full": 0}, counts


def test_link_measures_two_local_processes_and_writes_a_cluster(tmp_path):
    out = tmp_path / "gloo.yaml"
    p = subprocess.run([sys.executable, "-m", "pipesmith.torch.link", "-o", str(out), "--sizes-kb", "1,16384",
                        "--repeats", "3", "--warmup", "1"], capture_output=True, text=True, timeout=120,
                       env=_env(PYTHONPATH=os.path.join(ROOT, "python")), cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    text = out.read_text()
    assert "gloo-localhost" in text and "# Worst relative error" in text
    lowered = cli("lower", model_path("llama2-7b"), "--cluster", str(out))
    assert "gloo-localhost" in lowered.stdout
    p = subprocess.run([sys.executable, "-m", "pipesmith.torch.link", "--sizes-kb", "4"], capture_output=True,
                       text=True, timeout=60, env=_env(PYTHONPATH=os.path.join(ROOT, "python")), cwd=ROOT)
    assert p.returncode == 2 and "at least two different sizes" in p.stderr  # a bad flag, before measuring


FULL = os.path.join(ROOT, "tests", "data", "pytorch", "tiny-full-width.yaml")


def test_cli_profile_full_width_single_builds_the_architecture_layer_by_layer(tmp_path):
    # bench/gpu-layers' path: each type's first layer alone, at the architecture's own width.
    out = tmp_path / "tiny-profiled.yaml"
    p = _pipesmith("profile", "--backend", "torch", FULL, "--full-width", "--method", "single", "-o", str(out),
                   "--repeats", "1", "--warmup", "0")
    assert p.returncode == 0, p.stdout + p.stderr
    text = out.read_text()
    assert "hidden 64 (the architecture's full width), 32 tokens x 2 rows per microbatch, vocabulary 300" in text
    assert "method 'single'" in text
    import json
    import yaml
    analytic = {t["symbol"]: t for t in json.loads(cli("lower", FULL, "--json").stdout)["layer_types"]}
    measured = yaml.safe_load(text)["model"]["layer_types"]
    for sym in "EAML":  # the modules have the analytic model's parameters: heads, head_dim, experts, shards
        assert measured[sym]["params_m"] == pytest.approx(analytic[sym]["params_m"], rel=1e-3), sym
        assert measured[sym]["forward_ms"] > 0 and measured[sym]["backward_weight_ms"] > 0
    assert measured["A"]["backward_input_ms"] > 0 and measured["E"]["backward_input_ms"] == 0
    p = _pipesmith("profile", FULL, "--full-width")
    assert p.returncode == 1 and "--full-width applies to --backend torch only" in p.stderr


def test_single_refuses_what_it_cannot_do():
    spec = load_model(FULL)
    with pytest.raises(ProfileError, match="does not take --user-model"):
        profile_model(spec, ProfileOptions(method="single", user_model="x:y"))
    with pytest.raises(ProfileError, match="concurrent must be 1"):
        profile_model(spec, ProfileOptions(method="single", concurrent=2))


def test_routed_moe_computes_the_dense_weighted_sum():
    # Routing each token to its top-k experts only is the same function as running every expert with
    # zero weight where unrouted; the routed experts' gradients agree, the unrouted get none.
    import torch
    from pipesmith.torch.reference import MoE, Scale, _dims
    spec = load_model(FULL)
    arch = spec.types["M"].architecture
    torch.manual_seed(0)
    dense = MoE(_dims(arch, Scale(hidden=64, seq=32, max_experts=64), 300)).double()
    routed = MoE(_dims(arch, Scale(hidden=64, seq=32, max_experts=64, routed=True), 300)).double()
    routed.load_state_dict(dense.state_dict())
    x = torch.randn(2, 32, 64, dtype=torch.float64)
    yd, yr = dense(x), routed(x)
    assert torch.allclose(yd, yr, atol=1e-12)
    yd.square().sum().backward()
    yr.square().sum().backward()
    for (name, pd), pr in zip(dense.named_parameters(), routed.parameters()):
        if pr.grad is None:
            assert torch.count_nonzero(pd.grad) == 0, name
        else:
            assert torch.allclose(pd.grad, pr.grad, atol=1e-10), name


def test_chain_profile_measures_the_split_w_walk_and_the_checker_reads_it(tmp_path):
    # gpt-oss-like's layers have many parameter groups: PyTorch's W of 8 layers as one stage visits
    # ~12x the autograd nodes of the same layers as one-layer stages (test_split_weight_work.py), so
    # the profile's walk is positive for its types, and `pipesmith lower` reads the number written.
    import json
    spec = load_model(model_path("gpt-oss-like"))
    result = profile_model(spec, TINY)
    walks = {t.symbol: t.weight_walk_ms for t in result.types}
    assert walks["E"] == 0  # no I, so no split W
    # The head's four shards are timed as a stage of three (the final layer, whose loss ends the step,
    # is left out): a few parameter groups, so its walk is positive or 0 within the timing noise.
    head = spec.layers[-1].symbol
    assert walks[head] >= 0
    # The walk is a difference of timings, 0 where it is not positive: on a loaded machine (the
    # sanitizer tests beside) one type's can come out 0, so the check is that it is measured at all.
    inner = [s for s in walks if s not in ("E", head)]
    assert inner and all(walks[s] >= 0 for s in inner) and any(walks[s] > 0 for s in inner), walks
    out = tmp_path / "gpt-oss-profiled.yaml"
    write_atomic(str(out), profiled_yaml(model_path("gpt-oss-like"), result))
    lowered = {t["symbol"]: t for t in json.loads(cli("lower", str(out), "--json").stdout)["layer_types"]}
    for s in inner:
        assert lowered[s]["weight_walk_ms"] == pytest.approx(walks[s], rel=1e-5)
    # The fused numbers (B-only schedules' costs) carry no walk.
    assert all(t.numbers("fused")["weight_walk_ms"] == 0 for t in result.types)


def test_full_width_needs_the_architecture_it_builds(tmp_path):
    # --full-width takes the sizes from the architecture: one without them is refused, named, exit 1.
    text = open(FULL).read().replace(" seq_length: 32,", "")
    bad = tmp_path / "no-seq.yaml"
    bad.write_text(text)
    p = _pipesmith("profile", "--backend", "torch", str(bad), "--full-width", "--method", "single")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "--full-width: architecture.seq_length" in p.stderr and "needs hidden_size, vocab_size" in p.stderr


def test_bench_gpu_layers_runs_its_path_on_the_cpu(tmp_path):
    # bench/gpu-layers as a user runs it, on the CPU and a tiny full-width model: measure writes the
    # profile and its log, table holds every layer type against `pipesmith lower --json`.
    from conftest import pipesmith_binary
    bench = os.path.join(ROOT, "bench", "gpu-layers")
    env = _env(PIPESMITH=pipesmith_binary())
    out = tmp_path / "gl"
    p = subprocess.run([sys.executable, bench, "--device", "cpu", "--dtype", "float32", "--models", FULL,
                        "--out", str(out), "--repeats", "1", "--warmup", "0"], capture_output=True, text=True,
                       timeout=300, env=env, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "[1/1] tiny-full-width: profiling every layer type at full width on cpu" in p.stderr
    assert sorted(os.listdir(out)) == ["tiny-full-width.log", "tiny-full-width.yaml"]
    rows = {line.split(" | ")[1].split()[0]: line.strip("| ").split(" | ") for line in p.stdout.splitlines()
            if line.startswith("| tiny-full-width |")}
    assert sorted(rows) == ["A", "E", "L", "M"]
    for sym, cells in rows.items():
        f_analytic, f_measured, f_ratio = (float(c) for c in cells[3:6])
        assert f_analytic > 0 and f_measured > 0
        assert f_ratio == pytest.approx(f_measured / f_analytic, rel=0.01), sym
    p = subprocess.run([sys.executable, bench, "table", str(out), "--models", "llama2-7b"], capture_output=True,
                       text=True, timeout=60, env=env, cwd=ROOT)
    assert p.returncode == 1 and "nothing measured" in p.stderr and "llama2-7b.log" in p.stderr
    (out / "tiny-full-width.yaml").write_text("model: {layer_types: [1, 2\n")
    p = subprocess.run([sys.executable, bench, "table", str(out), "--models", FULL], capture_output=True,
                       text=True, timeout=60, env=env, cwd=ROOT)
    assert p.returncode == 1 and "tiny-full-width.yaml at line 2: not a profile pipesmith wrote" in p.stderr
    p = subprocess.run([sys.executable, bench, "measure", "--device", "cpu", "--models", FULL, "llama2-7b",
                        "--out", str(tmp_path / "none"), "--budget", "0.5"], capture_output=True, text=True,
                       timeout=60, env=env, cwd=ROOT)
    assert p.returncode == 1, p.stderr
    assert "[1/2] tiny-full-width: skipped, the --budget of 0.5 s is spent" in p.stderr
    assert "[2/2] llama2-7b: skipped" in p.stderr and not os.listdir(tmp_path / "none")
    p = subprocess.run([sys.executable, bench, "measure", "--budget", "-1", "--repeats", "0"], capture_output=True,
                       text=True, timeout=60, env=env, cwd=ROOT)
    assert p.returncode == 2 and ("--budget must be a finite number of seconds in (0, 1e6], got -1; --repeats must be in "
                                  "1..1000, got 0") in p.stderr
    p = subprocess.run([sys.executable, bench, "measure", "--models", "no-such-model"], capture_output=True,
                       text=True, timeout=60, env=env, cwd=ROOT)
    assert p.returncode == 1 and "no such shipped model or model file: no-such-model" in p.stderr
