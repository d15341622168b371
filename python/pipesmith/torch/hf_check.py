"""``python -m pipesmith.torch.run DIR --hf CONFIG.json``: a plan run on the transformers model itself,
checked against the model's own unpipelined step.

Every rank builds the ``*ForCausalLM`` transformers makes for CONFIG.json (random weights, the same
seed everywhere, :func:`pipesmith.torch.hf.model_from_config`), takes its stages from the plan
(:func:`pipesmith.torch.hf.stage_modules`, or the user's FUNCTION with ``--user-model``), and trains
N SGD steps on one batch split into the plan's microbatches. The reference is a second copy of the
same model trained on the whole batch with ``model(input_ids=..., labels=...).loss`` — transformers'
own forward and loss, never pipesmith's stage modules. Compared: the loss, every gradient of this
rank's stages after the first step and every parameter after the last step.

The batch: random tokens; labels are the tokens with the first two positions of every second row
set to the ignore index -100, so microbatches count different numbers of tokens, which
:func:`pipesmith.torch.hf.batch_loss` accounts for.

Tolerance: transformers computes the causal-LM loss in float32 whatever the model's dtype
(``ForCausalLMLoss`` upcasts with ``.float()``; Nemotron-H also returns float32 logits), so a float64
model is exact to float32's rounding of the loss and its gradient with respect to the logits
(:data:`RTOL`); measured: the loss up to 1.2e-7, gradients and parameters 1e-16 .. 2e-15, up
to 2.3e-7 for families that compute parts in float32 themselves.
"""
from __future__ import annotations

import importlib

import torch
import torch.distributed as dist

from . import hf, pipeline
from .plan import PlanError, load_plan
from .stepcheck import train_and_compare

RTOL = {torch.float64: 1e-6, torch.float32: 1e-3, torch.bfloat16: 5e-2}


def user_stage_builder(spec: str):
    """``MODULE:FUNCTION`` -> FUNCTION, which is called as ``FUNCTION(model, plan, rank)`` and returns
    the rank's stage modules (the role :func:`pipesmith.torch.hf.stage_modules` plays)."""
    mod, _, fn = spec.partition(":")
    try:
        return getattr(importlib.import_module(mod), fn)
    except (ImportError, AttributeError, ValueError) as e:
        raise pipeline.PipelineBuildError(f"--user-model {spec}: {e}") from None


def batch(vocab: int, rows: int, seq: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(99)
    tokens = torch.randint(0, vocab, (rows, seq), generator=g)
    labels = tokens.clone()
    labels[1::2, :2] = hf.IGNORE_INDEX
    return tokens, labels


def _reference(make, tokens, labels, steps, lr):
    model = make()
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    loss = grads = None
    for step in range(steps):
        opt.zero_grad()
        out = model(input_ids=tokens, labels=labels)
        out.loss.backward()
        if step == 0:
            loss = out.loss.item()
            grads = {n: (p.grad.clone() if p.grad is not None else None) for n, p in model.named_parameters()}
        opt.step()
    return loss, grads, {n: p.detach().clone() for n, p in model.named_parameters()}


def run_case(plan_dir: str, fmt: str, config: str, rank: int, steps: int, lr: float, rows_per_mb: int, seq: int,
             ref_cache: dict, shrink: dict, dtype: torch.dtype, user_model: str | None = None,
             runtime_rules: bool = True):
    """One (plan, format) on the transformers model of ``config``; returns (plan, ok, worst grad,
    worst param, loss difference, names missing a gradient on one side) as ``run.run_case`` does."""
    plan = load_plan(plan_dir, runtime_rules=runtime_rules)
    if plan.devices != dist.get_world_size():
        raise PlanError(f"{plan.path}: the plan is for {plan.devices} ranks, the job has {dist.get_world_size()}")
    M = plan.microbatches
    make = lambda: hf.model_from_config(config, dtype=dtype, **shrink)  # noqa: E731
    model = make()
    tokens, labels = batch(model.config.vocab_size, M * rows_per_mb, seq)
    build = hf.stage_modules if user_model is None else user_stage_builder(user_model)
    modules = list(build(model, plan, rank))
    names = {id(p): n for n, p in model.named_parameters()}
    named, seen = [], set()
    for m in modules:
        for n, p in m.named_parameters():
            if id(p) in seen:
                continue
            seen.add(id(p))
            named.append((names.get(id(p), n), p))
    key = (M, steps)
    if key not in ref_cache:
        ref_cache[key] = _reference(make, tokens, labels, steps, lr)
    ref_loss, ref_grads, ref_params = ref_cache[key]
    stray = [n for n, _ in named if n not in ref_grads]
    if stray:
        raise pipeline.PipelineBuildError(f"stage parameter(s) {stray[:4]} are neither the model's own tensors nor "
                                          "named as the model's parameters: they cannot be compared with it")
    stages = pipeline.make_stages(modules, plan, rank, torch.device("cpu"))
    schedule = pipeline.build_schedule(stages, plan, fmt, hf.batch_loss(labels, M))
    c = train_and_compare(schedule, named, plan, rank, (tokens,), labels, steps, lr, ref_cache[key], RTOL[dtype])
    return plan, c.ok, c.worst_grad, c.worst_param, c.loss_err, c.missing
