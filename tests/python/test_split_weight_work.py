"""PyTorch's split W does work quadratic in a stage's layers, its fused backward linear work: counted,
not timed (pipesmith.torch.autograd_work; docs/pytorch.md, "Measured vs simulated").

Stages of the reference transformer's first k decoder layers (after the embedding), k = 1, 2, 4, 8,
of a dense model (llama2-7b: one pipesmith layer per decoder layer) and an MoE one (gpt-oss-like: an
attention layer and an MoE layer per decoder layer), one microbatch at a small width. The counts
(autograd nodes reachable from each backward call's roots) do not depend on the width."""
from __future__ import annotations

import pytest
import torch

from conftest import model_path
from pipesmith.torch.autograd_work import BackwardWork, backward_work
from pipesmith.torch.model_yaml import load_model
from pipesmith.torch.reference import ReferenceTransformer, Scale

KS = (1, 2, 4, 8)
MODELS = ("llama2-7b", "gpt-oss-like")

# Thresholds, from the counts (tests pass at): split W visits(8) / visits(2) is 15.7 (llama2-7b) and
# 18.6 (gpt-oss-like), the fused backward's 3.99 on both; a linear W would give 4.
SUPERLINEAR_MIN = 10.0          # visits(8) / visits(2) of split W at least this
LINEAR_BAND = (3.8, 4.2)        # visits(8) / visits(2) of a linear pass inside this


def _decoder_ends(spec) -> list[int]:
    """Index of the last pipesmith layer of each decoder layer: the layers with an MLP or an MoE."""
    return [i for i, l in enumerate(spec.layers) if {"mlp", "moe"} & set(spec.types[l.symbol].components)]


def _model_and_input(name: str):
    spec = load_model(model_path(name))
    model = ReferenceTransformer(spec, Scale(hidden=16, seq=8, vocab=64), dtype=torch.float32)
    tokens, labels = model.batch(1)
    with torch.no_grad():
        carry = model.chain[0](dict(zip(model.layout_before(0), model.step_inputs(tokens, labels))))
    return spec, model, [carry[k] for k in model.layout_before(1)]


@pytest.fixture(scope="module")
def work() -> dict[str, dict[int, BackwardWork]]:
    """model -> k -> the counts of the stage of decoder layers 1..k."""
    out: dict[str, dict[int, BackwardWork]] = {}
    for name in MODELS:
        spec, model, inputs = _model_and_input(name)
        ends = _decoder_ends(spec)
        assert ends[0] >= 1 and len(ends) >= max(KS), (name, ends)
        out[name] = {k: backward_work(model.stage(1, ends[k - 1]), inputs) for k in KS}
    return out


def _ratio(series: dict[int, int]) -> float:
    return series[8] / series[2]


def _superlinear(series: dict[int, int]) -> bool:
    """Per-layer visits grow at every step of k, and visits(8) / visits(2) is far above 4."""
    per_layer = [series[k] / k for k in KS]
    return all(b > a for a, b in zip(per_layer, per_layer[1:])) and _ratio(series) >= SUPERLINEAR_MIN


def _linear(series: dict[int, int]) -> bool:
    """visits(8) / visits(2) close to 4, and the per-layer visits within 5 % of each other."""
    per_layer = [series[k] / k for k in KS]
    return LINEAR_BAND[0] <= _ratio(series) <= LINEAR_BAND[1] and max(per_layer) <= 1.05 * min(per_layer)


@pytest.mark.parametrize("name", MODELS)
def test_one_weight_call_per_group_and_groups_linear_in_layers(work, name):
    w = work[name]
    for k in KS:
        assert w[k].calls == w[k].groups, (name, k, w[k])
    assert w[1].groups > 1
    assert [w[k].groups for k in KS] == [k * w[1].groups for k in KS], name


@pytest.mark.parametrize("name", MODELS)
def test_split_weight_visits_grow_superlinearly(work, name):
    split = {k: work[name][k].split_w_nodes_visited for k in KS}
    fused = {k: work[name][k].fused_nodes_visited for k in KS}
    assert _superlinear(split), (name, split, f"visits(8)/visits(2) = {_ratio(split):.2f}")
    assert not _linear(split), (name, split)
    # The fused backward (one torch.autograd.backward) visits the stage's graph once.
    assert _linear(fused), (name, fused, f"visits(8)/visits(2) = {_ratio(fused):.2f}")
    assert not _superlinear(fused), (name, fused)
    for k in KS:
        # B's one call and I's one call each visit the graph once; W's calls visit it many times over.
        assert work[name][k].fused_nodes_visited == work[name][k].graph_nodes, (name, k)
        assert work[name][k].split_i_nodes_visited == work[name][k].graph_nodes, (name, k)
        # Every W call starts inside the stage's graph, so it visits at most all of it.
        assert max(work[name][k].w_nodes_per_call) <= work[name][k].graph_nodes, (name, k)


@pytest.mark.parametrize("name", MODELS)
def test_one_layer_stages_add_up_linearly(work, name):
    """The same layers as one-layer stages (what the profile times, layer by layer) visit linearly:
    the k-layer stage's W is more than the sum of its layers' Ws, by a factor that grows with k."""
    spec, model, inputs = _model_and_input(name)
    ends = _decoder_ends(spec)
    firsts = [1] + [e + 1 for e in ends]
    ones = [backward_work(model.stage(firsts[j], ends[j]), inputs).split_w_nodes_visited for j in range(max(KS))]
    summed = {k: sum(ones[:k]) for k in KS}
    assert _linear(summed) and not _superlinear(summed), (name, ones)
    excess = [work[name][k].split_w_nodes_visited / summed[k] for k in KS]
    assert excess[0] == 1 and all(b > a for a, b in zip(excess, excess[1:])) and excess[-1] > 4, (name, excess)


def test_moe_has_more_groups_per_layer_than_dense(work):
    dense = work["llama2-7b"][1].groups
    moe = work["gpt-oss-like"][1].groups
    assert moe > 2 * dense, (dense, moe)
    # More groups each walking the graph below them: more W visits per graph node at the same k.
    for k in KS[1:]:
        d, m = work["llama2-7b"][k], work["gpt-oss-like"][k]
        assert m.split_w_nodes_visited / m.graph_nodes > d.split_w_nodes_visited / d.graph_nodes, k


def test_counting_leaves_autograd_and_gradients_as_they_were():
    grad, backward = torch.autograd.grad, torch.autograd.backward
    spec, model, inputs = _model_and_input("llama2-7b")
    stage = model.stage(1, 1)
    backward_work(stage, inputs)
    assert torch.autograd.grad is grad and torch.autograd.backward is backward
    assert all(p.grad is None for p in stage.parameters())
    with pytest.raises(ValueError, match="no floating input"):
        backward_work(model.stage(0, 1), list(model.step_inputs(*model.batch(1))))
    assert torch.autograd.grad is grad and torch.autograd.backward is backward
