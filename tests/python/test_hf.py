"""transformers models run pipesmith's plans: config.json -> `pipesmith import hf` -> a schedule ->
`export --to pytorch` -> `python -m pipesmith.torch.run --hf` under torchrun (gloo, CPU), every stage
built by pipesmith.torch.hf.stage_modules from the model's own modules, and the loss, every gradient
and the parameters after an SGD step compared with transformers' own unpipelined
`model(input_ids, labels=...)` step (float64, eager attention and experts; transformers computes the
loss in float32 whatever the dtype, so the tolerance is 1e-6: measured up to 1.2e-7 on the loss,
1e-16 .. 2e-15 on gradients and parameters, up to 2.3e-7 for families computing parts in float32).

The configs are tiny (hidden 16, 4 decoder layers, 96 tokens) and written here by transformers'
own `save_pretrained`, as a config of that version is saved; nothing is downloaded."""
from __future__ import annotations

import json
import os

import pytest
import torch
import transformers as T

from conftest import PACKAGE_DIR, cli, export, run_plans, torchrun

HERE = os.path.dirname(os.path.abspath(__file__))

_C = dict(vocab_size=96, hidden_size=16, intermediate_size=24, num_attention_heads=2, num_key_value_heads=1,
          head_dim=8, max_position_embeddings=64)
_MOE = dict(num_experts_per_tok=2, moe_intermediate_size=8)
_MLA = dict(_C, num_key_value_heads=2, head_dim=4)  # DeepSeek's rotary head size is qk_rope_head_dim
# Every family `pipesmith import hf` reads that transformers builds as a *ForCausalLM, in a tiny size.
FAMILIES = {
    "llama": (T.LlamaConfig, dict(_C, num_hidden_layers=4)),
    "mistral": (T.MistralConfig, dict(_C, num_hidden_layers=4, sliding_window=3)),
    "mixtral": (T.MixtralConfig, dict(_C, num_hidden_layers=4, num_local_experts=4, num_experts_per_tok=2)),
    "qwen2": (T.Qwen2Config, dict(_C, num_hidden_layers=4)),
    "qwen2_moe": (T.Qwen2MoeConfig, dict(_C, **_MOE, num_hidden_layers=4, num_experts=4,
                                         shared_expert_intermediate_size=8)),
    "qwen3": (T.Qwen3Config, dict(_C, num_hidden_layers=4)),
    "qwen3_moe": (T.Qwen3MoeConfig, dict(_C, **_MOE, num_hidden_layers=4, num_experts=4, decoder_sparse_step=2)),
    "qwen3_next": (T.Qwen3NextConfig, dict(_C, **_MOE, num_hidden_layers=4, num_experts=4,
                                           shared_expert_intermediate_size=8, linear_num_key_heads=2,
                                           linear_num_value_heads=2, linear_key_head_dim=4, linear_value_head_dim=4,
                                           full_attention_interval=2)),
    "gpt_oss": (T.GptOssConfig, dict(_C, intermediate_size=8, num_hidden_layers=4, num_local_experts=4,
                                     num_experts_per_tok=2, sliding_window=3,
                                     layer_types=["sliding_attention", "full_attention"] * 2)),
    "minimax": (T.MiniMaxConfig, dict(_C, num_hidden_layers=4, num_local_experts=4, num_experts_per_tok=2,
                                      layer_types=["linear_attention", "full_attention"] * 2)),
    "minimax_m2": (T.MiniMaxM2Config, dict(_C, num_hidden_layers=4, num_local_experts=4, num_experts_per_tok=2)),
    "gemma2": (T.Gemma2Config, dict(_C, num_hidden_layers=4, sliding_window=3)),
    "gemma3_text": (T.Gemma3TextConfig, dict(_C, num_hidden_layers=4, sliding_window=3, final_logit_softcapping=3.0,
                                             layer_types=["sliding_attention", "full_attention"] * 2)),
    "deepseek_v2": (T.DeepseekV2Config, dict(_MLA, **_MOE, num_hidden_layers=4, n_routed_experts=4,
                                             first_k_dense_replace=1, kv_lora_rank=8, q_lora_rank=None,
                                             qk_nope_head_dim=4, qk_rope_head_dim=4, v_head_dim=4, n_group=1,
                                             topk_group=1)),
    "deepseek_v3": (T.DeepseekV3Config, dict(_MLA, **_MOE, num_hidden_layers=4, n_routed_experts=4,
                                             first_k_dense_replace=1, kv_lora_rank=8, q_lora_rank=8,
                                             qk_nope_head_dim=4, qk_rope_head_dim=4, v_head_dim=4, n_group=1,
                                             topk_group=1, num_nextn_predict_layers=0)),
    # transformers 5 saves Nemotron-H's layers as layers_block_type (no num_hidden_layers, no
    # hybrid_override_pattern) and names its modules model.embeddings, model.layers.N, model.norm_f.
    "nemotron_h": (T.NemotronHConfig, dict(_C, layers_block_type=["mamba", "moe", "attention", "mlp"],
                                           mamba_num_heads=4, mamba_head_dim=4, ssm_state_size=4, n_groups=1,
                                           n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=8,
                                           moe_shared_expert_intermediate_size=8, chunk_size=4)),
    "llama-tied": (T.LlamaConfig, dict(_C, num_hidden_layers=4, tie_word_embeddings=True)),
}


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("USE_HUB_KERNELS", "0")
    monkeypatch.setenv("TRANSFORMERS_VERBOSITY", "error")


def save_config(tmp_path, name: str) -> str:
    cls, kw = FAMILIES[name]
    d = tmp_path / f"cfg-{name}"
    cls(**kw).save_pretrained(str(d))
    return str(d / "config.json")


def plan_for(tmp_path, name: str, P: int, how: str, placement: str = "", M: int = 0) -> tuple[str, str, str]:
    """(plan directory, config.json, export's summary) for family `name`: a baseline schedule `how`, or
    `how == "synth"` with `placement` (whole decoder layers: --cuts layers); M microbatches (default 2P)."""
    M = M or 2 * P
    config = save_config(tmp_path, name)
    yaml = str(tmp_path / f"{name}.yaml")
    cli("import", "hf", config, "-o", yaml)
    sched = str(tmp_path / f"{name}-{how}.yaml")
    if how == "synth":
        cli("synth", yaml, "--devices", str(P), "--microbatches", str(M), "--cuts", "layers", "--placement",
            placement, "--evaluations", "20", "--rlimit", "20000000", "--quiet", "-o", sched)
    else:
        cli("baseline", yaml, "--schedule", how, "--devices", str(P), "--microbatches", str(M), "-o", sched)
    out = str(tmp_path / f"pt-{name}-{how}")
    summary = export(sched, out, yaml).stdout
    return out, config, summary


def test_every_family_p2(tmp_path):
    """Every family, P = 2 (1F1B and ZB-H1, which splits B into I and W), both CSV formats: loss,
    gradients and parameters equal transformers' own step."""
    cases = []
    for i, name in enumerate(sorted(FAMILIES)):
        d, config, _ = plan_for(tmp_path, name, 2, "zb-h1" if i % 2 else "1f1b")
        cases.append((d, config))
    out = run_plans(2, cases)
    assert out.count(" match the unpipelined run") == 2 * len(FAMILIES)


def test_bfloat16(tmp_path):
    """--dtype bfloat16: a dense and an MoE family at P = 2 train as transformers' own bfloat16 step does,
    within bfloat16's rounding (hf_check.RTOL)."""
    cases = [plan_for(tmp_path, name, 2, "1f1b")[:2] for name in ("llama", "mixtral")]
    out = run_plans(2, cases, extra=("--dtype", "bfloat16"))
    assert out.count(" match the unpipelined run") == 2 * len(cases)


def test_every_family_p4_irregular(tmp_path):
    """Every family at P = 4, one layer a stage, stages placed irregularly with uneven counts per rank
    (ranks 0 and 1 hold two stages, 2 and 3 one; the tied models' embedding and head both on rank 0),
    synthesized (--cuts layers), PyTorch's own lowering of the compute-only file."""
    cases = []
    for name in sorted(FAMILIES):
        d, config, _ = plan_for(tmp_path, name, 4, "synth", "0,1,2,3,1,0", M=4)
        plan = json.load(open(os.path.join(d, "plan.json")))
        assert plan["rank_to_stages"] == [[0, 5], [1, 4], [2], [3]]
        cases.append((d, config))
    out = run_plans(4, cases, extra=("--format", "compute_only", "--rows-per-microbatch", "1"))
    assert out.count("after 1 step(s) match the unpipelined run") == len(FAMILIES)


def test_tied_embedding_and_head(tmp_path):
    """tie_word_embeddings: the embedding and lm_head are one weight. plan.json records the tie with the
    ranks holding each side and export says so; the schedule sums the two sides' gradients, over ranks
    (1F1B: embedding on rank 0, head on rank 1) and on one rank (stages 0 and 2 on rank 0)."""
    far, config, summary = plan_for(tmp_path, "llama-tied", 2, "1f1b")
    assert ("tied weights: model.embed_tokens.weight (stage 0, rank 0) and lm_head.weight (stage 1, rank 1) are one "
            "tensor") in summary
    assert json.load(open(os.path.join(far, "plan.json")))["tied_parameters"] == [
        {"parameters": ["model.embed_tokens.weight", "lm_head.weight"], "stages": [0, 1], "ranks": [0, 1]}]
    near, _, summary = plan_for(tmp_path, "llama-tied", 2, "synth", "0,1,0")
    assert "sums their gradients on rank 0" in summary
    out = run_plans(2, [(far, config), (near, config)], extra=("--steps", "2"))
    assert "after 2 step(s) match" in out


def test_tie_the_plan_does_not_record_is_refused(tmp_path):
    """A tied model and a plan without its tie (an untied model's YAML) would train each side on its
    own part of the gradient: refused before anything runs, saying why."""
    from pipesmith.torch import hf
    from pipesmith.torch.plan import load_plan
    d, config, _ = plan_for(tmp_path, "llama-tied", 2, "1f1b")
    doc = json.load(open(os.path.join(d, "plan.json")))
    doc["tied_parameters"] = []
    with open(os.path.join(d, "plan.json"), "w") as f:
        json.dump(doc, f)
    model = hf.model_from_config(config)
    with pytest.raises(hf.PipelineBuildError, match=r"the model ties \[\['lm_head.weight', "
                                                    r"'model.embed_tokens.weight'\]\], the plan records no tie"):
        hf.stage_modules(model, load_plan(d), 0)


def test_unknown_module_names_are_refused(tmp_path):
    """A plan whose module names the model lacks (Nemotron-H as checkpoints name it, backbone.*) is
    refused naming each missing name and the closest the model has, by stage_modules and by
    module_fqns_per_model_part (which torchtitan's splitter would otherwise turn into empty stages)."""
    from pipesmith.torch import hf, pipeline
    from pipesmith.torch.plan import load_plan
    config = save_config(tmp_path, "nemotron_h")
    yaml = tmp_path / "n.yaml"
    cli("import", "hf", config, "-o", str(yaml))
    text = yaml.read_text()
    assert "module: model.embeddings" in text and "model.norm_f" in text
    yaml.write_text(text.replace("model.", "backbone."))
    sched = str(tmp_path / "s.yaml")
    cli("baseline", str(yaml), "--schedule", "1f1b", "--devices", "2", "--microbatches", "2", "-o", sched)
    export(sched, str(tmp_path / "pt"), str(yaml))
    plan = load_plan(str(tmp_path / "pt"))
    model = hf.model_from_config(config)
    for call in (lambda: hf.stage_modules(model, plan, 0), lambda: pipeline.module_fqns_per_model_part(plan, model)):
        with pytest.raises(hf.PipelineBuildError) as e:
            call()
        msg = str(e.value)
        assert "6 module name(s) of the plan are not in the model NemotronHForCausalLM" in msg
        assert "stage 0: 'backbone.embeddings' (closest: model.embeddings" in msg
        assert "'backbone.norm_f' (closest: model.norm_f" in msg


def test_a_plan_with_mtp_layers_is_refused_with_the_reason(tmp_path):
    """DeepSeek-V3's MTP module is imported as the checkpoint names it (model.layers.<num_hidden_layers>);
    transformers builds no such module, so a plan holding it is refused, saying why and what to do."""
    from pipesmith.torch import hf
    from pipesmith.torch.plan import load_plan
    cls, kw = FAMILIES["deepseek_v3"]
    d = tmp_path / "cfg-mtp"
    cls(**dict(kw, num_nextn_predict_layers=1)).save_pretrained(str(d))
    config = str(d / "config.json")
    yaml = tmp_path / "m.yaml"
    cli("import", "hf", config, "-o", str(yaml))
    assert "module: model.layers.4" in yaml.read_text()
    sched = str(tmp_path / "s.yaml")
    cli("baseline", str(yaml), "--schedule", "1f1b", "--devices", "2", "--microbatches", "2", "-o", sched)
    export(sched, str(tmp_path / "pt"), str(yaml))
    plan = load_plan(str(tmp_path / "pt"))
    with pytest.raises(hf.PipelineBuildError) as e:
        hf.stage_modules(hf.model_from_config(config), plan, 1)
    msg = str(e.value)
    assert "model.layers.4: the config's 1 multi-token-prediction (MTP) module(s)" in msg
    assert "num_nextn_predict_layers: 0" in msg


def test_a_glue_bug_is_caught_against_the_model(tmp_path, monkeypatch):
    """--user-model with --hf: the user's stage glue (tests/python/hf_glue.py) is run and compared with
    the transformers model's own step. The right glue matches; the same glue giving gpt-oss's sliding
    layers the full mask differs (exit 1) — checked against itself it could not."""
    d, config, _ = plan_for(tmp_path, "gpt_oss", 2, "1f1b")
    monkeypatch.setenv("PYTHONPATH", HERE)
    run_plans(2, [(d, config)], extra=("--user-model", "hf_glue:stages", "--format", "compute_only"))
    rc, out = torchrun(2, ["-m", "pipesmith.torch.run", d, "--hf", config, "--user-model", "hf_glue:stages_full_mask",
                           "--format", "compute_only", "--timeout", "60"], timeout=300)
    assert rc == 1 and "compute_only: P = 2, S = 2, M = 4: loss, gradients and parameters after 1 step(s) DIFFER" in out, out


def test_torchtitan_pipelining_fn_irregular(tmp_path):
    """torchtitan 0.3.0's pipeline path (ParallelDims' pp mesh, the trainer's pipelining_fn call,
    _split_module, _build_pipeline_schedule with the plan's CSV) on an irregular plan (3 stages on 2
    ranks: 0, 1, 0) through pipesmith.torch.titan.pipelining_fn: gradients equal the unpipelined model's."""
    model = os.path.join(os.path.dirname(os.path.dirname(HERE)), "configs", "models", "llama2-7b.yaml")
    sched = str(tmp_path / "s.yaml")
    cli("synth", model, "--devices", "2", "--microbatches", "4", "--cuts", "layers", "--placement", "0,1,0",
        "--evaluations", "20", "--quiet", "-o", sched)
    export(sched, str(tmp_path / "pt"), model)
    rc, out = torchrun(2, [os.path.join(HERE, "titan_worker.py"), str(tmp_path / "pt"), model], timeout=300)
    assert rc == 0 and "titan: match: 3 stages on 2 ranks [[0, 2], [1]]" in out, out


def test_a_shipped_config_shrunk(tmp_path):
    """A real config.json (Llama-2-7B, tests/data) imported as it is, its plan run on the transformers
    model shrunk by --hidden and --vocab (32 decoder layers kept, so the plan's names hold), in float32:
    within float32's tolerance of the model's own step."""
    config = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "data", "hf_configs", "llama-2-7b-hf.json")
    yaml = str(tmp_path / "llama.yaml")
    cli("import", "hf", config, "-o", yaml)
    sched = str(tmp_path / "s.yaml")
    # Llama-2-7B at its real size: interleaved 1F1B on 2 x 80 GB ranks fits with tensor parallelism 2.
    cli("baseline", yaml, "--schedule", "interleaved-1f1b", "--devices", "2", "--microbatches", "4", "--gpus", "4",
        "--tensor-parallel", "2", "-o", sched)
    export(sched, str(tmp_path / "pt"), yaml)
    out = run_plans(2, [(str(tmp_path / "pt"), config)],
                    extra=("--hidden", "16", "--vocab", "128", "--dtype", "float32", "--format", "compute_comms"))
    assert "S = 4, M = 4" in out and "tolerance 1e-03" in out


def test_train_hf_example_trains(tmp_path):
    """python/examples/train_hf.py (the README's recipe as a script) trains a tied model whose embedding
    and head are on different ranks for five AdamW steps: the loss falls."""
    d, config, _ = plan_for(tmp_path, "llama-tied", 2, "1f1b")
    rc, out = torchrun(2, [os.path.join(os.path.dirname(os.path.dirname(HERE)), "python", "examples", "train_hf.py"),
                           d, config, "--steps", "5"], timeout=300)
    losses = [float(l.split("loss ")[1]) for l in out.splitlines() if l.startswith("step ")]
    assert rc == 0 and len(losses) == 5 and all(b < a for a, b in zip(losses, losses[1:])), out
    assert losses[-1] < losses[0] - 0.2, out  # measured 4.56 -> 4.14


@pytest.mark.parametrize("name", ["gemma3_text", "gpt_oss", "nemotron_h"])
def test_stages_chained_are_the_model_forward(tmp_path, name):
    """In one process, every stage shape a plan can give (the embedding alone, layers alone, the last
    decoder layer alone, the final norm and head alone, everything in one stage), chained: logits and
    every gradient bitwise equal to the model's own forward and loss; the stages hold the model's own
    tensors (no copies)."""
    from pipesmith.torch import hf
    from pipesmith.torch.plan import Plan, Stage, Tie
    model = hf.model_from_config(save_config(tmp_path, name))
    parts = hf.Layout(model).parts  # embedding, 4 decoder layers, final norm, head
    for cuts in ([(0, 0), (1, 3), (4, 4), (5, 6)], [(0, 2), (3, 6)], [(0, 6)]):
        stages = tuple(Stage(index=i, rank=i, first_layer=a, last_layer=b, layer_types=("x",) * (b - a + 1),
                             modules=tuple(parts[a:b + 1]), starts_inside_joined_layer=False,
                             ends_inside_joined_layer=False, vocab_shards=False, skip_inputs_cross=False)
                       for i, (a, b) in enumerate(cuts))
        holder = {n: s.index for s in stages for n in s.modules}
        ties = tuple(Tie(names=t, stages=tuple(holder[n.rsplit(".", 1)[0]] for n in t),
                         ranks=tuple(holder[n.rsplit(".", 1)[0]] for n in t)) for t in hf.model_ties(model))
        S = len(cuts)
        plan = Plan(path="plan.json", directory=str(tmp_path), model=name, devices=S, num_stages=S, microbatches=1,
                    stage_to_rank=tuple(range(S)), rank_to_stages=tuple((i,) for i in range(S)), files={},
                    fsdp=False, whole_modules=True, stages=stages, raw={}, tied_parameters=ties)
        modules = [hf.stage_modules(model, plan, r)[0] for r in range(S)]
        own = {id(p) for p in model.parameters()}
        assert all(id(p) in own for m in modules for p in m.parameters())
        ids = torch.randint(0, 96, (3, 10), generator=torch.Generator().manual_seed(1))
        x = ids
        for m in modules:
            x = m(x)
        hf.causal_lm_loss(x, ids).backward()
        mine = {n: p.grad.clone() for n, p in model.named_parameters()}
        model.zero_grad()
        ref = model(input_ids=ids, labels=ids)
        ref.loss.backward()
        assert torch.equal(x, ref.logits), cuts
        for n, p in model.named_parameters():
            assert torch.equal(mine[n], p.grad), (cuts, n)
        model.zero_grad()
