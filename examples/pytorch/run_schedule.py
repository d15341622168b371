#!/usr/bin/env python3
"""Run a schedule written by `pipesmith export --to pytorch` with PyTorch's own pipelining runtime.

    torchrun --nproc-per-node P examples/pytorch/run_schedule.py DIR [--format compute_only|compute_comms]

DIR holds plan.json, compute_only.csv and compute_comms.csv. A small stand-in model gets one
residual MLP block per layer of the plan (block i = layer i), so every stage holds exactly the
plan's layers; each rank builds one PipelineStage per stage the plan gives it (ascending), loads the
CSV into torch.distributed.pipelining's _PipelineScheduleRuntime (gloo, CPU) and runs one step.
Every rank then compares its stages' gradients with an unpipelined run of the same model and batch.
Exit 0 when all match (rank 0 prints a summary), 1 otherwise. Needs PyTorch >= 2.6.
"""
import argparse
import json
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.pipelining import PipelineStage
from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime

WIDTH = 16          # hidden size of the stand-in model
BATCH_PER_MB = 2    # rows per microbatch


class Block(nn.Module):
    """A residual MLP block: one model layer of the plan."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        return x + torch.tanh(self.fc(x))


def build_layers(n_layers):
    torch.manual_seed(1234)  # the same weights on every rank and in the reference
    return nn.ModuleList(Block() for _ in range(n_layers))


def loss_fn(output, target):
    return nn.functional.mse_loss(output, target)


def reference_grads(n_layers, x, y, microbatches):
    """Gradients of the mean microbatch loss, as PyTorch's scale_grads=True computes them."""
    layers = build_layers(n_layers)
    total = 0
    for xm, ym in zip(torch.tensor_split(x, microbatches), torch.tensor_split(y, microbatches)):
        h = xm
        for layer in layers:
            h = layer(h)
        total = total + loss_fn(h, ym)
    (total / microbatches).backward()
    return [[p.grad.clone() for p in layer.parameters()] for layer in layers]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--format", default="compute_only", choices=["compute_only", "compute_comms"])
    args = ap.parse_args()
    with open(os.path.join(args.dir, "plan.json")) as f:
        plan = json.load(f)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if world != plan["devices"]:
        sys.exit(f"plan.json is for {plan['devices']} ranks, torchrun started {world}")
    S, M = plan["num_stages"], plan["microbatches"]
    n_layers = plan["stages"][-1]["layers"][1] + 1

    torch.manual_seed(99)
    x = torch.randn(M * BATCH_PER_MB, WIDTH)
    y = torch.randn(M * BATCH_PER_MB, WIDTH)

    layers = build_layers(n_layers)
    stages = []
    for s in plan["rank_to_stages"][rank]:
        first, last = plan["stages"][s]["layers"]
        submod = nn.Sequential(*[layers[i] for i in range(first, last + 1)])
        stages.append(PipelineStage(submod, s, S, torch.device("cpu")))
    schedule = _PipelineScheduleRuntime(stages, n_microbatches=M, loss_fn=loss_fn)
    csv = os.path.join(args.dir, f"{args.format}.csv")
    schedule._load_csv(csv, format=args.format)

    holds_first = 0 in plan["rank_to_stages"][rank]
    holds_last = S - 1 in plan["rank_to_stages"][rank]
    losses = []
    step_args = (x,) if holds_first else ()
    step_kwargs = {"target": y, "losses": losses} if holds_last else {}
    schedule.step(*step_args, **step_kwargs)

    ref = reference_grads(n_layers, x, y, M)
    worst = 0.0
    for s in plan["rank_to_stages"][rank]:
        first, last = plan["stages"][s]["layers"]
        for i in range(first, last + 1):
            for p, r in zip(layers[i].parameters(), ref[i]):
                if p.grad is None:
                    print(f"rank {rank}: layer {i} (stage {s}) has no gradient", flush=True)
                    worst = float("inf")
                    continue
                worst = max(worst, (p.grad - r).abs().max().item() / (r.abs().max().item() + 1e-12))
    ok = worst < 1e-4
    print(f"rank {rank}: stages {plan['rank_to_stages'][rank]}: max relative gradient difference {worst:.2e} "
          f"({'ok' if ok else 'MISMATCH'})", flush=True)
    flags = torch.tensor([0 if ok else 1])
    dist.all_reduce(flags)
    dist.destroy_process_group()
    if rank == 0:
        print(f"{args.format}.csv: P = {world}, S = {S}, M = {M}: "
              f"{'gradients match the unpipelined run' if flags.item() == 0 else 'GRADIENTS DIFFER'}")
    sys.exit(0 if flags.item() == 0 else 1)


if __name__ == "__main__":
    main()
