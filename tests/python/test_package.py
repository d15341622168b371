"""The package without a process group: plan reading, module names, stage splitting, the
reference model's maths."""
import glob
import json
import os
import shutil

import pytest
import torch

from conftest import MODELS, cli, export, model_path
from pipesmith.torch import pipeline
from pipesmith.torch.model_yaml import ModelFileError, load_model
from pipesmith.torch.plan import PlanError, load_plan
from pipesmith.torch.reference import ReferenceTransformer, Scale, loss_fn
from pipesmith.torch.titan_layout import TitanLayoutLM

SHIPPED = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(MODELS, "*.yaml")))


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    """Exports: llama2-7b cut at whole layers on an irregular placement, gemma-like with sublayer
    cuts and shards, gpt-oss-like 1F1B (cuts between attention and MoE of one decoder layer)."""
    d = tmp_path_factory.mktemp("plans")
    out = {}
    specs = {
        "llama": ("llama2-7b", ["synth", "--devices", "4", "--microbatches", "8", "--cuts", "layers",
                                "--placement", "0,1,2,3,2,1", "--evaluations", "10"]),
        "gemma": ("gemma-like", ["synth", "--devices", "4", "--microbatches", "8", "--evaluations", "10"]),
        # gpt-oss-like's experts spread over an expert-parallel group of 8 (data 8): 1F1B then fits 80 GB.
        "gptoss": ("gpt-oss-like", ["baseline", "--schedule", "1f1b", "--devices", "4", "--microbatches", "8",
                                    "--gpus", "32", "--expert-parallel", "8"]),
    }
    for key, (name, args) in specs.items():
        sched = str(d / f"{key}.yaml")
        cli(args[0], model_path(name), *args[1:], "-o", sched,
            *(["--quiet"] if args[0] == "synth" else []))
        export(sched, str(d / key), model_path(name))
        out[key] = str(d / key)
    return out


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_models_name_their_modules_as_the_cli_reads_them(tmp_path, name):
    spec = load_model(model_path(name))
    assert all(layer.modules for layer in spec.layers), "every shipped layer names its module"
    assert spec.layers[0].modules == ("tok_embeddings",)
    sched = str(tmp_path / "s.yaml")
    # Each shipped model inside the mesh a user would give it on 16 x 80 GB GPUs (tensor 2, expert 4, data 4,
    # Megatron's distributed optimizer): two pipeline ranks then hold every one of them.
    cli("baseline", model_path(name), "--schedule", "gpipe", "--devices", "2", "--microbatches", "2",
        "--gpus", "16", "--tensor-parallel", "2", "--expert-parallel", "4", "--optimizer", "distributed", "-o", sched)
    export(sched, str(tmp_path / "pt"), model_path(name))
    plan = load_plan(str(tmp_path / "pt"))
    for st in plan.stages:  # the C++ reader and this one expand the layer list the same way
        names = []
        for i in range(st.first_layer, st.last_layer + 1):
            for n in spec.layers[i].modules:
                if n not in names:
                    names.append(n)
        assert st.modules == tuple(names)
        assert st.layer_types == tuple(spec.type_of(i).name for i in range(st.first_layer, st.last_layer + 1))


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_model_builds_and_trains(name):
    model = ReferenceTransformer(load_model(model_path(name)))
    tokens, labels = model.batch(2)
    loss = loss_fn(model(*model.step_inputs(tokens, labels)), labels)
    assert torch.isfinite(loss) and 0.5 * torch.log(torch.tensor(float(model.vocab))) < loss < 3 * torch.log(
        torch.tensor(float(model.vocab)))
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())
    assert all(m.dtype == torch.float64 for m in model.parameters())


def test_sharded_head_is_the_full_cross_entropy():
    model = ReferenceTransformer(load_model(model_path("gemma-like")))
    shards = [layer for layer in model.chain if "head" in layer.components]
    assert len(shards) == 16
    with torch.no_grad():  # distinct norms, so the check cannot pass by symmetry
        for i, s in enumerate(shards):
            s.parts["head"]["norm"].weight.mul_(1 + 0.01 * i)
    tokens, labels = model.batch(3)
    got = loss_fn(model(*model.step_inputs(tokens, labels)), labels)
    h = model.stage(0, len(model.chain) - 17)(*model.step_inputs(tokens, labels))[0]
    logits = torch.cat([s.parts["head"]["output"](s.parts["head"]["norm"](h)) for s in shards], dim=-1)
    want = torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())
    assert torch.allclose(got, want, rtol=1e-12, atol=0)


def test_split_mlp_halves_are_one_mlp():
    spec = load_model(model_path("nemotron-h-like"))
    model = ReferenceTransformer(spec)
    first = next(i for i, l in enumerate(spec.layers) if spec.types[l.symbol].name == "mlp-half1")
    a, b = model.chain[first], model.chain[first + 1]
    with torch.no_grad():
        b.parts["mlp"].norm.weight.copy_(a.parts["mlp"].norm.weight * 1.0)
    h = torch.randn(2, 8, 16, dtype=torch.float64)
    stage = model.stage(first, first + 1)
    assert stage.in_names == ("h", "labels") and stage.out_names[0] == "h"
    labels = torch.zeros(2, 8, dtype=torch.long)
    got = stage(h, labels)[0]
    n = a.parts["mlp"].norm(h)
    want = h + a.parts["mlp"].f(n) + b.parts["mlp"].f(n)
    assert torch.allclose(got, want, rtol=1e-13, atol=1e-15)
    assert "partial" in model.layout_after(first)


def test_mtp_skip_input_travels_between_stages():
    model = ReferenceTransformer(load_model(model_path("deepseek-like")))
    assert "skip0" in model.layout_after(1) and "skip0" in model.layout_after(56)
    assert "aux" in model.layout_after(57) and model.layout_after(61) == ("nll",)


def test_model_errors_name_the_file_and_place(tmp_path):
    bad = tmp_path / "m.yaml"
    bad.write_text("schema: 1\nmodel:\n  name: x\n  layer_types:\n    E: {name: e, kind: embeddingg}\n"
                   "  layers: E\n")
    with pytest.raises(ModelFileError, match=r"m\.yaml:5:\d+: unknown kind component 'embeddingg'"):
        load_model(str(bad))
    bad.write_text("schema: 1\nmodel: [1, 2\n")
    with pytest.raises(ModelFileError, match=r"m\.yaml:\d+:\d+: not valid YAML"):
        load_model(str(bad))


def _copy(plan_dir, tmp_path):
    dst = tmp_path / "copy"
    shutil.copytree(plan_dir, dst)
    return dst


def test_plan_errors(plans, tmp_path):
    d = _copy(plans["gemma"], tmp_path)
    doc = json.loads((d / "plan.json").read_text())
    doc["schema"] = "pipesmith-plan/0"
    (d / "plan.json").write_text(json.dumps(doc))
    with pytest.raises(PlanError, match="'schema' is 'pipesmith-plan/0'"):
        load_plan(str(d))
    doc["schema"] = "pipesmith-plan/1"
    doc["stage_to_rank"][0], doc["stage_to_rank"][1] = doc["stage_to_rank"][1], doc["stage_to_rank"][0]
    (d / "plan.json").write_text(json.dumps(doc))
    with pytest.raises(PlanError, match="'rank_to_stages' .* disagrees with 'stage_to_rank'"):
        load_plan(str(d))
    (d / "plan.json").write_text("{\n  \"schema\": \n")
    with pytest.raises(PlanError, match=r"plan\.json:3:1: not valid JSON"):
        load_plan(str(d))


def test_csv_rows_must_put_stages_where_the_plan_does(plans, tmp_path):
    d = _copy(plans["llama"], tmp_path)
    rows = (d / "compute_only.csv").read_text().splitlines()
    rows[0], rows[1] = rows[1], rows[0]
    (d / "compute_only.csv").write_text("\n".join(rows) + "\n")
    with pytest.raises(PlanError, match=r"compute_only\.csv: stage 0 is on rank 1, the plan puts it on rank 0"):
        load_plan(str(d))


def test_torchtitan_route_for_an_irregular_plan(plans):
    plan = load_plan(plans["llama"])
    assert plan.stage_to_rank == (0, 1, 2, 3, 2, 1)
    assert pipeline.stage_ids_this_rank(plan, 1) == (1, 5) and pipeline.stage_ids_this_rank(plan, 0) == (0,)
    fqns = pipeline.module_fqns_per_model_part(plan)
    assert fqns[0][0] == "tok_embeddings" and fqns[-1][-2:] == ["norm", "lm_head"]
    assert [n for part in fqns for n in part] == ["tok_embeddings"] + [f"layers.{i}" for i in range(32)] + [
        "norm", "lm_head"]
    model = TitanLayoutLM(load_model(model_path("llama2-7b")))
    parts = [pipeline.split_by_modules(model, plan, s) for s in range(plan.num_stages)]
    tokens = torch.randint(0, model.vocab, (2, model.seq))
    h = tokens
    for p in parts:
        h = p(h)
    assert torch.equal(h, model(tokens))
    assert parts[0].norm is None and parts[-1].tok_embeddings is None


def test_whole_module_splitter_refuses_what_it_cannot_build(plans):
    gemma = load_plan(plans["gemma"])
    model = TitanLayoutLM(load_model(model_path("llama2-7b")))
    flagged = next(s for s in gemma.stages if s.vocab_shards)
    with pytest.raises(pipeline.PipelineBuildError, match=f"stage {flagged.index} .*vocabulary shards"):
        pipeline.split_by_modules(model, gemma, flagged.index)
    with pytest.raises(pipeline.PipelineBuildError, match="stage"):
        pipeline.module_fqns_per_model_part(gemma)
    gptoss = load_plan(plans["gptoss"])  # 1F1B cuts gpt-oss-like between attention and MoE of a layer
    with pytest.raises(pipeline.PipelineBuildError, match=r"stage 1 \(rank 1, layers \d+-\d+\) cannot be built "
                                                          r"from whole modules: it ends inside a joined layer"):
        pipeline.split_by_modules(model, gptoss, 1)


def test_whole_module_splitter_refuses_a_module_two_stages_list(plans, tmp_path):
    """A plan.json whose sublayer flags were dropped (hand-edited) still cannot make two stages share
    a module: the splitter names both stages and the module."""
    d = tmp_path / "edited"
    shutil.copytree(plans["gptoss"], d)
    raw = json.loads((d / "plan.json").read_text())
    for st in raw["stages"]:
        st["starts_inside_joined_layer"] = st["ends_inside_joined_layer"] = False
    (d / "plan.json").write_text(json.dumps(raw))
    edited = load_plan(str(d))
    model = TitanLayoutLM(load_model(model_path("llama2-7b")))
    with pytest.raises(pipeline.PipelineBuildError, match=r"stage 1 \(rank 1\) and stage 2 both hold parts of "
                                                          r"module layers\.\d+"):
        pipeline.split_by_modules(model, edited, 1)


def test_reference_stages_check_the_plan_against_the_model(plans):
    plan = load_plan(plans["gemma"])
    with pytest.raises(pipeline.PipelineBuildError, match="the plan covers 69 layers, the model 'llama2-7b' has 34"):
        pipeline.reference_stage_modules(ReferenceTransformer(load_model(model_path("llama2-7b"))), plan, 0)


def test_features_of_this_pytorch():
    assert pipeline.missing_features() == []


def test_recompute_modes_set_up_the_stage_modules(plans, tmp_path):
    """plan.json's stages[].recompute: full checkpoints each layer of a reference stage, selective
    each attention core; selective on a module without attention cores, or an unknown mode, is
    refused naming the stage or the key."""
    d = _copy(plans["llama"], tmp_path)
    doc = json.loads((d / "plan.json").read_text())
    doc["stages"][1]["recompute"] = "partial"
    (d / "plan.json").write_text(json.dumps(doc))
    with pytest.raises(PlanError, match=r"stages\[1\]: 'recompute' must be one of none, selective, full"):
        load_plan(str(d))
    doc["stages"][1]["recompute"] = "full"
    doc["stages"][2]["recompute"] = "selective"
    (d / "plan.json").write_text(json.dumps(doc))
    plan = load_plan(str(d))
    assert [st.recompute for st in plan.stages[:3]] == ["none", "full", "selective"]
    model = ReferenceTransformer(load_model(model_path("llama2-7b")), Scale())
    full = pipeline.with_recompute(model.stage(plan.stages[1].first_layer, plan.stages[1].last_layer), plan.stages[1])
    assert all(isinstance(layer, pipeline.Checkpointed) for layer in full.layers)
    sel = pipeline.with_recompute(model.stage(plan.stages[2].first_layer, plan.stages[2].last_layer), plan.stages[2])
    cores = [m for m in sel.modules() if isinstance(m, pipeline.Checkpointed)]
    assert cores and all(isinstance(c.inner, pipeline.AttentionCore) for c in cores)
    assert not any(isinstance(layer, pipeline.Checkpointed) for layer in sel.layers)
    with pytest.raises(pipeline.PipelineBuildError, match="stage 2 .* recomputes selectively"):
        pipeline.with_recompute(torch.nn.Linear(2, 2), plan.stages[2])
