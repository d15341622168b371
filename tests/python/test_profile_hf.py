"""`pipesmith profile --backend torch --hf CONFIG.json` and pipesmith.torch.hf_profile.profile_hf: a
transformers model profiled on its own layers, per layer kind, into the model YAML the synthesizer
reads. Tiny widths (the shipped configs in tests/data/hf_configs shrunk by --layers, --hidden,
--vocab) and few repeats; no assertion on how long anything takes beyond orderings between medians
(over 5 repeats or more, so that a spike of a loaded machine does not decide them) of layers whose
parameters differ by more than an order of magnitude."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from conftest import PACKAGE_DIR, ROOT, cli, pipesmith_binary

CONFIGS = os.path.join(ROOT, "tests", "data", "hf_configs")
LLAMA = os.path.join(CONFIGS, "llama-2-7b-hf.json")
QWEN3_MOE = os.path.join(CONFIGS, "qwen3-30b-a3b.json")
NUMBERS = ("forward_ms", "backward_input_ms", "backward_weight_ms", "backward_ms", "weight_walk_ms",
           "activation_mb", "wgrad_stash_mb", "output_mb", "params_m")


def _env(**extra) -> dict:
    env = dict(os.environ)
    env["PIPESMITH_PYTHON"] = sys.executable
    env["OMP_NUM_THREADS"] = "1"
    env["PYTHONPATH"] = PACKAGE_DIR + os.pathsep + env.get("PYTHONPATH", "")  # the package under test
    env.update(extra)
    return env


def _pipesmith(*args) -> subprocess.CompletedProcess:
    return subprocess.run([pipesmith_binary(), *args], capture_output=True, text=True, timeout=300, env=_env(),
                          cwd=ROOT)


def _module_params(config: str, layers: int, hidden: int, vocab: int) -> dict[str, int]:
    """Parameters per module of the model the profile builds (the same model_from_config call)."""
    import torch
    from pipesmith.torch import hf
    model = hf.model_from_config(config, layers=layers, hidden=hidden, vocab=vocab, dtype=torch.float32)
    return {n: sum(p.numel() for p in model.get_submodule(n).parameters()) for n in hf.Layout(model).parts}


def _types(path) -> dict[str, dict]:
    return yaml.safe_load(open(path))["model"]["layer_types"]


def _check_loop(path, tmp_path) -> None:
    """The profiled YAML is what the synthesizer reads: lower, synth (whole decoder layers, as the
    transformers stages need) and the checker on the schedule written."""
    cli("lower", str(path), "--devices", "2", "--microbatches", "4")
    sched = tmp_path / "sched.yaml"
    cli("synth", str(path), "--devices", "2", "--microbatches", "4", "--cuts", "layers", "--evaluations", "2",
        "--quiet", "--time-limit", "30", "-o", str(sched))
    assert "VALID" in cli("verify", str(sched)).stdout


def test_cli_profiles_a_llama_config_on_its_own_layers(tmp_path):
    out = tmp_path / "llama-profiled.yaml"
    cluster = os.path.join(ROOT, "configs", "clusters", "8xh200.yaml")
    p = _pipesmith("profile", "--backend", "torch", "--hf", LLAMA, "--layers", "3", "--hidden", "64", "--vocab", "32",
                   "--seq", "16", "--rows", "1", "--repeats", "5", "--warmup", "1", "--cluster", cluster, "-o", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"wrote {out}" in p.stdout and "attention+mlp" in p.stdout
    text = out.read_text()
    assert text.startswith("# Profiled by `python -m pipesmith.torch.profile --hf`")
    assert "LlamaForCausalLM built by transformers from llama-2-7b-hf.json (3 decoder layers, hidden 64" in text
    doc = yaml.safe_load(text)
    model = doc["model"]
    assert model["name"] == "llama-2-7b-hf-profiled" and doc["cluster"]["name"] == "8xH200-141GB"
    # The layer list is the import's for the model built: embedding, 3 decoder layers, head, by the
    # transformers module names, with the measured shape.
    assert model["layers"] == [{"type": "E", "module": "model.embed_tokens"},
                               {"type": "T", "repeat": 3, "module": "model.layers.{i}"},
                               {"type": "L", "module": ["model.norm", "lm_head"]}]
    assert model["architecture"]["hidden_size"] == 64 and model["architecture"]["vocab_size"] == 32
    assert model["architecture"]["seq_length"] == 16 and model["architecture"]["micro_batch_size"] == 1
    types = model["layer_types"]
    assert set(types) == {"E", "T", "L"} and all(set(NUMBERS) <= set(t) for t in types.values())
    e, t, h = types["E"], types["T"], types["L"]
    params = _module_params(LLAMA, 3, 64, 32)
    assert t["params_m"] * 1e6 == pytest.approx(params["model.layers.0"])
    assert h["params_m"] * 1e6 == pytest.approx(params["model.norm"] + params["lm_head"])
    assert e["params_m"] * 1e6 == pytest.approx(params["model.embed_tokens"])
    for sym, v in types.items():
        assert v["forward_ms"] > 0 and v["backward_weight_ms"] > 0 and v["backward_ms"] > 0, sym
        assert 0 <= v["wgrad_stash_mb"] <= v["activation_mb"], sym
    assert e["backward_input_ms"] == 0  # token ids: no input gradient, as PyTorch's first stage
    assert t["backward_input_ms"] > 0 and h["backward_input_ms"] > 0
    # A decoder layer (24x the head's parameters here) has the larger weight gradient; it and the
    # head hold activations, and every piece but the head hands on the hidden state [1, 16, 64] fp32.
    assert t["params_m"] > 20 * h["params_m"] and t["backward_weight_ms"] > h["backward_weight_ms"]
    assert t["activation_mb"] > 0 and h["activation_mb"] > 0
    assert e["output_mb"] * 1e6 == t["output_mb"] * 1e6 == 16 * 64 * 4 and h["output_mb"] == 0
    _check_loop(out, tmp_path)


def test_api_profiles_dense_and_moe_layers_as_two_kinds(tmp_path):
    """Qwen3-MoE with its first layer dense (mlp_only_layers): two decoder kinds measured apart,
    through the Python API; the YAML written by the profile's writer loads in the synthesizer."""
    from pipesmith.torch.hf_profile import profile_hf
    from pipesmith.torch.profile import ProfileOptions, profiled_yaml, write_atomic
    cfg = json.load(open(QWEN3_MOE))
    cfg["mlp_only_layers"] = [0]
    config = tmp_path / "qwen3-moe-mixed.json"
    config.write_text(json.dumps(cfg))
    seen = []
    result = profile_hf(str(config), ProfileOptions(seq=16, rows=1, warmup=1, repeats=5), layers=3, hidden=64,
                        vocab=32, command=pipesmith_binary(), progress=seen.append)
    assert result.options.hidden == 64 and result.options.vocab == 32  # the sizes built
    assert any("attention+moe" in s for s in seen) and any("attention+mlp" in s for s in seen)
    by = {t.name: t for t in result.types}
    assert set(by) == {"embedding", "attention+mlp", "attention+moe", "head"}
    assert [t.layer for t in result.types] == [0, 1, 2, 4]  # each kind's first layer, in model order
    params = _module_params(str(config), 3, 64, 32)
    dense, moe, head = by["attention+mlp"], by["attention+moe"], by["head"]
    assert dense.params_m * 1e6 == pytest.approx(params["model.layers.0"])
    assert moe.params_m * 1e6 == pytest.approx(params["model.layers.1"])
    assert moe.samples == 2 * 5 and dense.samples == 5  # the MoE kind: 2 layers x 5 repeats
    for t in (dense, moe):
        assert t.params_m > 10 * head.params_m and t.backward_weight_ms > head.backward_weight_ms, t
        assert t.forward_ms > 0 and t.backward_input_ms > 0 and t.activation_mb > 0, t
    assert result.source_yaml.startswith("# qwen3-moe-mixed: imported by `pipesmith import hf`")
    out = tmp_path / "profiled.yaml"
    write_atomic(str(out), profiled_yaml(None, result))
    types = _types(out)
    for t in result.types:
        assert types[t.symbol]["forward_ms"] == pytest.approx(t.forward_ms, rel=1e-5)
        assert types[t.symbol]["kind"] == t.name
    _check_loop(out, tmp_path)


def test_cli_refuses_bad_hf_input(tmp_path):
    def refused(*args, says):
        p = _pipesmith("profile", *args)
        assert p.returncode == 1 and says in p.stderr, (args, p.returncode, p.stdout + p.stderr)

    missing = str(tmp_path / "missing.json")
    refused("--backend", "torch", "--hf", missing, says=f"{missing}: cannot read")
    foo = tmp_path / "foo.json"
    foo.write_text('{"model_type": "foo", "hidden_size": 8}\n')
    refused("--backend", "torch", "--hf", str(foo), says="model_type 'foo' is not one pipesmith imports (supported: llama")
    # A family pipesmith imports that this transformers does not build.
    refused("--backend", "torch", "--hf", os.path.join(CONFIGS, "minimax-m1.json"), "--layers", "2", "--hidden", "16",
            says="has no model_type 'minimax_m1' (closest: ")
    # transformers builds no MTP module: the layers the import writes for it are named.
    refused("--backend", "torch", "--hf", os.path.join(CONFIGS, "deepseek-v3.json"), "--layers", "2", "--hidden", "16",
            "--vocab", "32", says="num_nextn_predict_layers 0")
    refused("--hf", LLAMA, says="--hf applies to --backend torch")
    refused("--backend", "torch", "--hf", LLAMA, os.path.join(ROOT, "configs", "models", "llama2-7b.yaml"),
            says="not both")
    refused("--backend", "torch", os.path.join(ROOT, "configs", "models", "llama2-7b.yaml"), "--layers", "2",
            says="--layers applies to --hf only")
    refused("--backend", "torch", says="give the model YAML, or --hf CONFIG.json")
    refused("--backend", "torch", "--hf", LLAMA, "--method", "single", says="method 'single'")
    refused("--backend", "torch", "--hf", LLAMA, "--full-width", says="--full-width does not apply")
    copy = tmp_path / "llama.json"
    copy.write_text(open(LLAMA).read())
    refused("--backend", "torch", "--hf", str(copy), "-o", str(copy), says="llama.json")
    assert copy.read_text() == open(LLAMA).read()


def test_steptime_runs_the_profiled_transformers_model(tmp_path):
    """bench/torch's measuring half on a transformers model: the profiled YAML's 1F1B exported and
    timed by `steptime --hf` with the model's own stages (every rank's F and B counted, the load
    probe swept on its layers), and the model's own unpipelined step."""
    import torch
    from conftest import export, torchrun
    from pipesmith.torch.hf_profile import profile_hf
    from pipesmith.torch.profile import ProfileOptions, profiled_yaml, write_atomic
    from pipesmith.torch.steptime import hf_unpipelined_step_ms
    shrink = {"layers": 2, "hidden": 32, "vocab": 64}
    result = profile_hf(LLAMA, ProfileOptions(seq=8, rows=1, warmup=0, repeats=1), **shrink, command=pipesmith_binary())
    profiled = tmp_path / "m.yaml"
    write_atomic(str(profiled), profiled_yaml(None, result))
    cli("baseline", str(profiled), "--devices", "2", "--microbatches", "4", "--schedule", "1f1b",
        "-o", str(tmp_path / "s.yaml"))
    export(str(tmp_path / "s.yaml"), str(tmp_path / "pt"), str(profiled))
    out = tmp_path / "t.json"
    rc, log = torchrun(2, ["-m", "pipesmith.torch.steptime", "--case", str(tmp_path / "pt"), str(profiled),
                           "--hf", LLAMA, "--layers", "2", "--hidden", "32", "--vocab", "64", "--seq", "8",
                           "--rows-per-microbatch", "1", "--steps", "2", "--json", str(out)], timeout=180)
    assert rc == 0, log[-4000:]
    (res,) = json.loads(out.read_text())
    assert res["P"] == 2 and res["M"] == 4 and len(res["steps_ms"]) == 2 and res["probe_ms"] > 0
    for rank in res["median_step_ranks"]:
        assert rank["actions"] == 8 and rank["F_ms"] > 0 and rank["B_ms"] > 0
    median, first = hf_unpipelined_step_ms(LLAMA, shrink, torch.float32, 4, 1, 8, 1)
    assert median > 0 and first > 0
