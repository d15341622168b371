"""Time training steps of exported pipesmith schedules in PyTorch, one process per rank.

    torchrun --nproc-per-node P -m pipesmith.torch.steptime --case DIR MODEL.yaml [--case ...]
        [--format compute_comms|compute_only] [--steps N] [--hidden H] [--seq T] [--vocab V]
        [--rows-per-microbatch B] [--dtype float32|float64] [--threads 1] [--json OUT.json]

Every rank builds the reference transformer of MODEL.yaml at the given width (the one
``pipesmith.torch.profile`` measured with the same flags), takes its stages from the plan and loads
the CSV into ``_PipelineScheduleRuntime``, as :mod:`pipesmith.torch.run` does (same package
functions). It runs 1 + N steps on one batch of M microbatches: before each step every rank meets
at a barrier, then it times ``schedule.step``; a step's time is the slowest rank's (all_reduce MAX).
Step 0, which also carries PyTorch's first-step shape/metadata exchange, is reported on its own;
the result is the median of steps 1..N. Gradients are cleared between steps, outside the timing;
no optimizer runs (the schedule's ops are what pipesmith simulates).

:func:`unpipelined_step_ms` times the same model as one process running every microbatch's F and
B in turn: the step time a pipeline has to beat.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

from . import pipeline
from .model_yaml import ModelFileError, load_model
from .plan import PlanError, load_plan
from .reference import ReferenceTransformer, Scale, loss_fn


def _batch(model, M: int, rows: int, seq: int, seed: int = 99):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, model.vocab, (M * rows, seq), generator=g)
    labels = torch.randint(0, model.vocab, (M * rows, seq), generator=g)
    return tokens, labels


def unpipelined_step_ms(model_path: str, scale: Scale, dtype: torch.dtype, M: int, rows: int, steps: int,
                        threads: int = 1) -> tuple[float, float]:
    """(median step ms over ``steps`` after one warm-up step, the warm-up step's ms): the whole model,
    M microbatches each F then backward, in this process."""
    torch.set_num_threads(threads)
    model = ReferenceTransformer(load_model(model_path), scale, dtype=dtype)
    tokens, labels = _batch(model, M, rows, scale.seq)
    inputs = model.step_inputs(tokens, labels)
    chunks = [torch.tensor_split(x, M) for x in inputs]
    label_chunks = torch.tensor_split(labels, M)
    times = []
    for _ in range(1 + steps):
        for p in model.parameters():
            p.grad = None
        t0 = time.perf_counter()
        for m in range(M):
            loss = loss_fn(model(*(c[m] for c in chunks)), label_chunks[m]) / M
            loss.backward()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times[1:]), times[0]


class ActionClock:
    """Times every compute action a rank's stages run, and every wait for a receive, by wrapping the
    stages' ``forward_one_chunk`` / ``backward_one_chunk`` / ``backward_weight_one_chunk`` and the
    runtime's ``_wait_batch_p2p``: per step, the busy ms of each kind (F, B or I, W) and the ms spent
    waiting for messages; the rest of a step is the runtime's own work between actions."""

    KINDS = {"forward_one_chunk": "F", "backward_one_chunk": "B", "backward_weight_one_chunk": "W"}

    def __init__(self, stages):
        from torch.distributed.pipelining import schedules
        self.busy: dict[str, float] = {}
        self.count: dict[str, int] = {}
        self.wait_ms = 0.0
        for st in stages:
            for name, kind in self.KINDS.items():
                setattr(st, name, self._wrap(getattr(st, name), kind))
        self._schedules = schedules
        self._orig_wait = schedules._wait_batch_p2p

        def wait(*a, **k):
            t0 = time.perf_counter()
            try:
                return self._orig_wait(*a, **k)
            finally:
                self.wait_ms += (time.perf_counter() - t0) * 1e3
        schedules._wait_batch_p2p = wait

    def _wrap(self, fn, kind):
        def timed(*a, **k):
            if kind == "B" and k.get("full_backward") is False:
                key = "I"
            else:
                key = kind
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.busy[key] = self.busy.get(key, 0.0) + (time.perf_counter() - t0) * 1e3
                self.count[key] = self.count.get(key, 0) + 1
        return timed

    def reset(self):
        self.busy, self.count, self.wait_ms = {}, {}, 0.0

    def close(self):
        self._schedules._wait_batch_p2p = self._orig_wait


def time_case(plan_dir: str, model_path: str, fmt: str, scale: Scale, dtype: torch.dtype, rows: int,
              steps: int) -> dict:
    rank = dist.get_rank()
    plan = load_plan(plan_dir)
    if plan.devices != dist.get_world_size():
        raise PlanError(f"{plan.path}: the plan is for {plan.devices} ranks, the job has {dist.get_world_size()}")
    M = plan.microbatches
    model = ReferenceTransformer(load_model(model_path), scale, dtype=dtype)
    tokens, labels = _batch(model, M, rows, scale.seq)
    inputs = model.step_inputs(tokens, labels)
    modules = pipeline.reference_stage_modules(model, plan, rank)
    stages = pipeline.make_stages(modules, plan, rank, torch.device("cpu"))
    schedule = pipeline.build_schedule(stages, plan, fmt, loss_fn)
    from .profile import sweep_ms
    # The load probe before the steps (every rank at once, as the profile's concurrent processes).
    dist.barrier()
    probe = [sweep_ms(model, rows, repeats=1)]
    clock = ActionClock(stages)
    mine = [p for m in modules for p in m.parameters()]
    holds_first = 0 in plan.rank_to_stages[rank]
    holds_last = plan.num_stages - 1 in plan.rank_to_stages[rank]
    times, per_rank = [], []
    P = dist.get_world_size()
    for _ in range(1 + steps):
        for p in mine:
            p.grad = None
        kwargs = {"target": labels, "losses": []} if holds_last else {}
        clock.reset()
        dist.barrier()
        t0 = time.perf_counter()
        schedule.step(*(inputs if holds_first else ()), **kwargs)
        mine_ms = (time.perf_counter() - t0) * 1e3
        ms = torch.tensor([mine_ms], dtype=torch.float64)
        dist.all_reduce(ms, op=dist.ReduceOp.MAX)
        times.append(ms.item())
        # Per rank: step, F, I, B, W busy ms, wait ms, compute actions.
        row = torch.zeros(P, 7, dtype=torch.float64)
        row[rank] = torch.tensor([mine_ms, clock.busy.get("F", 0), clock.busy.get("I", 0), clock.busy.get("B", 0),
                                  clock.busy.get("W", 0), clock.wait_ms, sum(clock.count.values())],
                                 dtype=torch.float64)
        dist.all_reduce(row)
        per_rank.append(row.tolist())
    clock.close()
    for p in model.parameters():
        p.grad = None
    dist.barrier()
    probe.append(sweep_ms(model, rows, repeats=1))
    probe_t = torch.tensor(probe, dtype=torch.float64)
    dist.all_reduce(probe_t)
    probe_ms = probe_t.sum().item() / (2 * dist.get_world_size())  # mean over ranks, before and after
    # The median step's per-rank breakdown (steps 1..N).
    order = sorted(range(1, len(times)), key=lambda k: times[k])
    mid = order[len(order) // 2]
    names = ("step_ms", "F_ms", "I_ms", "B_ms", "W_ms", "wait_ms", "actions")
    breakdown = [dict(zip(names, r)) for r in per_rank[mid]]
    return {"dir": plan_dir, "model": model_path, "format": fmt, "P": plan.devices, "S": plan.num_stages,
            "M": M, "first_step_ms": times[0], "steps_ms": times[1:], "median_ms": statistics.median(times[1:]),
            "median_step_ranks": breakdown, "probe_ms": probe_ms}


def scale_parser(ap: argparse.ArgumentParser) -> None:
    from .profile import ProfileOptions
    d = ProfileOptions()
    ap.add_argument("--hidden", type=int, default=d.hidden)
    ap.add_argument("--seq", type=int, default=d.seq)
    ap.add_argument("--vocab", type=int, default=d.vocab)
    ap.add_argument("--rows-per-microbatch", type=int, default=d.rows)
    ap.add_argument("--dtype", default=d.dtype, choices=["float32", "float64"])
    ap.add_argument("--threads", type=int, default=1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipesmith.torch.steptime", description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", nargs=2, action="append", default=[], metavar=("DIR", "MODEL"), required=True)
    ap.add_argument("--format", default="compute_comms", choices=["compute_only", "compute_comms"])
    ap.add_argument("--steps", type=int, default=5, help="timed steps after the first (default 5)")
    ap.add_argument("--json", help="rank 0 writes the results here")
    scale_parser(ap)
    args = ap.parse_args(argv)
    if args.steps < 1:
        ap.error("--steps must be >= 1")
    torch.set_num_threads(args.threads)
    pipeline.require_features()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    scale = Scale(hidden=args.hidden, seq=args.seq, vocab=args.vocab)
    dtype = getattr(torch, args.dtype)
    results = []
    try:
        for d, m in args.case:
            r = time_case(d, m, args.format, scale, dtype, args.rows_per_microbatch, args.steps)
            results.append(r)
            if rank == 0:
                print(f"{d}: P = {r['P']}, S = {r['S']}, M = {r['M']}: median step {r['median_ms']:.1f} ms "
                      f"(first step {r['first_step_ms']:.1f} ms; steps {', '.join(f'{t:.1f}' for t in r['steps_ms'])})",
                      flush=True)
    except (PlanError, ModelFileError, pipeline.PipelineBuildError) as e:
        print(f"rank {rank}: error: {e}", file=sys.stderr, flush=True)
        os._exit(2)
    if rank == 0 and args.json:
        from .profile import write_atomic
        write_atomic(args.json, json.dumps(results, indent=1) + "\n")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
