"""Time training steps of exported pipesmith schedules in PyTorch, one process per rank.

    torchrun --nproc-per-node P -m pipesmith.torch.steptime --case DIR MODEL.yaml [--case ...]
        [--format compute_comms|compute_only] [--steps N] [--hidden H] [--seq T] [--vocab V]
        [--rows-per-microbatch B] [--dtype float32|float64] [--threads 1] [--json OUT.json] [--timeout S]
        [--hf CONFIG.json [--layers N]]

Every rank builds the reference transformer of MODEL.yaml at the given width (the one
``pipesmith.torch.profile`` measured with the same flags), or with ``--hf`` the transformers model
of CONFIG.json shrunk by ``--layers``, ``--hidden``, ``--vocab`` where given (the one ``profile --hf``
measured with the same flags; its stages from :func:`pipesmith.torch.hf.stage_modules`, its loss
:func:`pipesmith.torch.hf.causal_lm_loss`), takes its stages from the plan and loads
the CSV into ``_PipelineScheduleRuntime``, as :mod:`pipesmith.torch.run` does (same package
functions). It runs 1 + N steps on one batch of M microbatches, the cases' steps in turn (step k of
every case, then step k + 1: a drift in the machine's speed falls on all of them alike; with several
cases an untimed step of the same case before each timed one, so that it runs on warm caches): before each
step every rank meets at a barrier, then it times ``schedule.step``; a step's time is the slowest
rank's (all_reduce MAX).
Step 0, which also carries PyTorch's first-step shape/metadata exchange, is reported on its own;
the result is the median of steps 1..N. Gradients are cleared between steps, outside the timing;
no optimizer runs (the schedule's ops are what pipesmith simulates).

Exit 0, 2 on bad flags or a bad plan, CSV, model or ``--json`` path (one that names an input: a model,
a plan.json or a CSV, or a dangling link; checked before any work, as the command checks its outputs),
124 when a rank waits longer than ``--timeout`` seconds (default 60) for a case's setup, a load probe or
one step: each rank then prints the last action it started (:mod:`pipesmith.torch.watchdog`).

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
from typing import Any, Callable, Sequence

import torch
import torch.distributed as dist

from ..errors import BadInputError
from . import pipeline
from .model_yaml import load_model
from .output_file import check_output_paths, write_output_file
from .plan import FORMATS, PlanError, load_plan
from .reference import ReferenceTransformer, Scale, loss_fn
from .watchdog import DEFAULT_TIMEOUT_S, Watchdog, timeout_s


def unpipelined_step_ms(model_path: str, scale: Scale, dtype: torch.dtype, M: int, rows: int, steps: int,
                        threads: int = 1) -> tuple[float, float]:
    """(median step ms over ``steps`` after one warm-up step, the warm-up step's ms): the whole model,
    M microbatches each F then backward, in this process."""
    torch.set_num_threads(threads)
    model = ReferenceTransformer(load_model(model_path), scale, dtype=dtype)
    tokens, labels = model.batch(M * rows)
    inputs = model.step_inputs(tokens, labels)
    chunks = [torch.tensor_split(x, M) for x in inputs]
    label_chunks = torch.tensor_split(labels, M)

    def step() -> None:
        for m in range(M):
            (loss_fn(model(*(c[m] for c in chunks)), label_chunks[m]) / M).backward()
    return _timed_steps(model, step, steps)


def hf_unpipelined_step_ms(config: str, shrink: dict, dtype: torch.dtype, M: int, rows: int, seq: int, steps: int,
                           threads: int = 1) -> tuple[float, float]:
    """:func:`unpipelined_step_ms` of the transformers model of ``config`` (shrunk by ``shrink``'s
    ``layers``, ``hidden``, ``vocab``): its own ``model(input_ids, labels=...)`` step per microbatch."""
    from . import hf
    torch.set_num_threads(threads)
    model = hf.model_from_config(config, dtype=dtype, **shrink)
    tokens, _ = _hf_batch(model, M * rows, seq)
    chunks = torch.tensor_split(tokens, M)

    def step() -> None:
        for m in range(M):
            (model(input_ids=chunks[m], labels=chunks[m], use_cache=False).loss / M).backward()
    return _timed_steps(model, step, steps)


def _timed_steps(model: torch.nn.Module, step: Callable[[], None], steps: int) -> tuple[float, float]:
    """(median ms of ``steps`` runs of ``step()`` after one warm-up run, the warm-up's ms), the
    model's gradients cleared before each."""
    times = []
    for _ in range(1 + steps):
        for p in model.parameters():
            p.grad = None
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times[1:]), times[0]


def _hf_batch(model, rows: int, seq: int, seed: int = 99) -> tuple[torch.Tensor, torch.Tensor]:
    """Random token ids [rows, seq] of the model's vocabulary, and the labels the loss shifts: the ids."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, model.config.vocab_size, (rows, seq), generator=g)
    return tokens, tokens


class ActionClock:
    """Times every compute action a rank's stages run, and every wait for a receive, by wrapping the
    stages' ``forward_one_chunk`` / ``backward_one_chunk`` / ``backward_weight_one_chunk`` and, between
    ``start()`` and ``stop()``, the runtime's ``_wait_batch_p2p``: per step, the busy ms of each kind
    (F, B or I, W) and the ms spent waiting for messages; the rest of a step is the runtime's own work
    between actions."""

    KINDS = {"forward_one_chunk": "F", "backward_one_chunk": "B", "backward_weight_one_chunk": "W"}

    def __init__(self, stages: Sequence[Any]) -> None:
        from torch.distributed.pipelining import schedules
        self.busy: dict[str, float] = {}
        self.count: dict[str, int] = {}
        self.wait_ms = 0.0
        for st in stages:
            for name, kind in self.KINDS.items():
                setattr(st, name, self._wrap(getattr(st, name), kind))
        self._schedules = schedules
        self._orig_wait = None

    def start(self) -> None:
        """Counts waits from now (the runtime's wait function is shared: one clock at a time)."""
        self.busy, self.count, self.wait_ms = {}, {}, 0.0
        orig = self._orig_wait = self._schedules._wait_batch_p2p

        def wait(*a, **k):
            t0 = time.perf_counter()
            try:
                return orig(*a, **k)
            finally:
                self.wait_ms += (time.perf_counter() - t0) * 1e3
        self._schedules._wait_batch_p2p = wait

    def stop(self) -> None:
        if self._orig_wait is not None:
            self._schedules._wait_batch_p2p = self._orig_wait
            self._orig_wait = None

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


class Case:
    """One exported schedule, set up on this rank: ``step()`` runs and times one training step (every
    rank together), ``result()`` the summary. Several cases live at once so that their steps can be
    taken in turn (:func:`time_cases`)."""

    def __init__(self, plan_dir: str, model_path: str, fmt: str, scale: Scale, dtype: torch.dtype, rows: int,
                 hf_model: tuple[str, dict] | None = None):
        rank = dist.get_rank()
        plan = load_plan(plan_dir)
        if plan.devices != dist.get_world_size():
            raise PlanError(f"{plan.path}: the plan is for {plan.devices} ranks, the job has {dist.get_world_size()}")
        self.plan_dir, self.model_path, self.fmt, self.plan, self.rows = plan_dir, model_path, fmt, plan, rows
        self.seq = scale.seq
        if hf_model is None:
            self.model = ReferenceTransformer(load_model(model_path), scale, dtype=dtype)
            tokens, self.labels = self.model.batch(plan.microbatches * rows)
            self.inputs = self.model.step_inputs(tokens, self.labels)
            modules = pipeline.reference_stage_modules(self.model, plan, rank)
            self.loss, self.probe_model = loss_fn, self.model
        else:  # the transformers model, the probe on its layers as profile --hf sweeps them
            from . import hf
            from .hf_profile import HFChain
            config, shrink = hf_model
            self.model = hf.model_from_config(config, dtype=dtype, **shrink)
            tokens, self.labels = _hf_batch(self.model, plan.microbatches * rows, scale.seq)
            self.inputs = (tokens,)
            modules = hf.stage_modules(self.model, plan, rank)
            self.loss = hf.causal_lm_loss
            self.probe_model = HFChain(self.model, load_model(model_path), rows, scale.seq, config)
        stages = pipeline.make_stages(modules, plan, rank, torch.device("cpu"))
        self.schedule = pipeline.build_schedule(stages, plan, fmt, self.loss)
        self.clock = ActionClock(stages)
        self.mine = [p for m in modules for p in m.parameters()]
        self.holds_first = 0 in plan.rank_to_stages[rank]
        self.holds_last = plan.num_stages - 1 in plan.rank_to_stages[rank]
        self.times: list[float] = []
        self.per_rank: list = []
        self.probe: list[float] = []

    def load_probe(self) -> None:
        """The load probe (every rank at once, as the profile's concurrent processes)."""
        from .profile import sweep_ms
        for p in self.model.parameters():
            p.grad = None
        dist.barrier()
        # medians: one sweep alone can spike by half
        self.probe.append(sweep_ms(self.probe_model, self.rows, repeats=3, seq=self.seq, loss=self.loss))

    def step(self, record: bool = True) -> float:
        """One step on every rank; ``record``: keep its time (else a warm-up step)."""
        P, rank = dist.get_world_size(), dist.get_rank()
        for p in self.mine:
            p.grad = None
        kwargs = {"target": self.labels, "losses": []} if self.holds_last else {}
        self.clock.start()
        dist.barrier()
        t0 = time.perf_counter()
        try:
            self.schedule.step(*(self.inputs if self.holds_first else ()), **kwargs)
        finally:
            mine_ms = (time.perf_counter() - t0) * 1e3
            self.clock.stop()
        ms = torch.tensor([mine_ms], dtype=torch.float64)
        dist.all_reduce(ms, op=dist.ReduceOp.MAX)
        if not record:
            return ms.item()
        self.times.append(ms.item())
        # Per rank: step, F, I, B, W busy ms, wait ms, compute actions.
        c = self.clock
        row = torch.zeros(P, 7, dtype=torch.float64)
        row[rank] = torch.tensor([mine_ms, c.busy.get("F", 0), c.busy.get("I", 0), c.busy.get("B", 0),
                                  c.busy.get("W", 0), c.wait_ms, sum(c.count.values())], dtype=torch.float64)
        dist.all_reduce(row)
        self.per_rank.append(row.tolist())
        return self.times[-1]

    def result(self) -> dict:
        probe_t = torch.tensor(self.probe, dtype=torch.float64)
        dist.all_reduce(probe_t)
        probe_ms = probe_t.sum().item() / (len(self.probe) * dist.get_world_size())  # mean over ranks and probes
        times = self.times
        order = sorted(range(1, len(times)), key=lambda k: times[k])  # the median step's per-rank breakdown
        mid = order[len(order) // 2]
        names = ("step_ms", "F_ms", "I_ms", "B_ms", "W_ms", "wait_ms", "actions")
        plan = self.plan
        return {"dir": self.plan_dir, "model": self.model_path, "format": self.fmt, "P": plan.devices,
                "S": plan.num_stages, "M": plan.microbatches, "first_step_ms": times[0], "steps_ms": times[1:],
                "median_ms": statistics.median(times[1:]),
                "median_step_ranks": [dict(zip(names, r)) for r in self.per_rank[mid]], "probe_ms": probe_ms}


def time_cases(cases: list[Case], steps: int, watchdog: Watchdog | None = None) -> list[dict]:
    """1 + ``steps`` steps of every case, taken in turn (step k of every case, then step k + 1), so that
    a drift in the machine's speed falls on every schedule alike; with several cases each timed step
    follows an untimed one of the same case, so that it finds the caches as a training loop leaves
    them, not as the other schedules did. The load probe before and after. With ``watchdog``, each
    probe and each step is a phase of it."""
    def phase(label: str) -> None:
        if watchdog is not None:
            watchdog.arm(label)

    for c in cases:
        phase(f"{c.plan_dir}: load probe")
        c.load_probe()
    for k in range(1 + steps):
        for c in cases:
            if k > 0 and len(cases) > 1:
                phase(f"{c.plan_dir} ({c.fmt}): untimed step before step {k}")
                c.step(record=False)
            phase(f"{c.plan_dir} ({c.fmt}): step {k}")
            c.step()
    for c in cases:
        phase(f"{c.plan_dir}: load probe")
        c.load_probe()
    phase("collecting the results")
    results = [c.result() for c in cases]
    if watchdog is not None:
        watchdog.disarm()
    return results


def time_case(plan_dir: str, model_path: str, fmt: str, scale: Scale, dtype: torch.dtype, rows: int,
              steps: int) -> dict:
    """One schedule alone: 1 + ``steps`` steps."""
    return time_cases([Case(plan_dir, model_path, fmt, scale, dtype, rows)], steps)[0]


def scale_parser(ap: argparse.ArgumentParser) -> None:
    from .profile import ProfileOptions
    d = ProfileOptions()
    ap.add_argument("--hidden", type=int, help=f"reference model: default {d.hidden}; --hf: default the config's")
    ap.add_argument("--seq", type=int, default=d.seq)
    ap.add_argument("--vocab", type=int, help=f"reference model: default {d.vocab}; --hf: default the config's")
    ap.add_argument("--rows-per-microbatch", type=int, default=d.rows)
    ap.add_argument("--dtype", default=d.dtype, choices=["float32", "float64"])
    ap.add_argument("--threads", type=int, default=1)


def check_scale(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The width flags of :func:`scale_parser` within what a reference model can be built at."""
    bad = [f"--{k.replace('_', '-')} {v}" for k, v, lo in (("hidden", args.hidden or 2, 2), ("seq", args.seq, 1),
                                                            ("vocab", args.vocab or 2, 2),
                                                            ("rows_per_microbatch", args.rows_per_microbatch, 1),
                                                            ("threads", args.threads, 1))
           if not lo <= v <= 1 << 20]
    if bad:
        ap.error(f"out of range (--hidden, --vocab in 2..1048576; --seq, --rows-per-microbatch, --threads in "
                 f"1..1048576): {', '.join(bad)}")


def json_inputs(cases: list[list[str]]) -> list[str]:
    """Every file the cases read: each model, and each plan's plan.json and CSVs."""
    out = []
    for d, m in cases:
        out.append(m)
        plan = os.path.join(d, "plan.json") if os.path.isdir(d) else d
        out += [plan] + [os.path.join(os.path.dirname(plan), f"{f}.csv") for f in FORMATS]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipesmith.torch.steptime", description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", nargs=2, action="append", default=[], metavar=("DIR", "MODEL"), required=True)
    ap.add_argument("--format", default="compute_comms", choices=["compute_only", "compute_comms"])
    ap.add_argument("--steps", type=int, default=5, help="timed steps after the first (default 5)")
    ap.add_argument("--json", help="rank 0 writes the results here")
    ap.add_argument("--hf", metavar="CONFIG.json",
                    help="run the transformers model of this config (the MODEL of each case is its profiled YAML, "
                         "`profile --hf`'s) instead of the reference transformer")
    ap.add_argument("--layers", type=int, help="--hf: decoder layers kept (default: the config's)")
    ap.add_argument("--timeout", type=timeout_s, default=DEFAULT_TIMEOUT_S,
                    help="seconds a rank may take for a case's setup, a load probe or one step before the job "
                         f"ends with exit 124 (default {DEFAULT_TIMEOUT_S:g}; a finite number in (0, 1e6])")
    scale_parser(ap)
    args = ap.parse_args(argv)
    if not 1 <= args.steps <= 1000:
        ap.error(f"--steps must be in 1..1000, got {args.steps}")
    if args.layers is not None and not args.hf:
        ap.error("--layers applies to --hf only")
    if args.layers is not None and not 1 <= args.layers <= 100_000:
        ap.error(f"--layers must be in 1..100000, got {args.layers}")
    check_scale(ap, args)
    try:
        check_output_paths([(args.json or "", "--json")], json_inputs(args.case))
    except BadInputError as e:
        ap.error(str(e))
    try:  # every plan, CSV and model before the process group starts (as pipesmith.torch.run)
        from .run import check_inputs
        check_inputs([(d, m) for d, m in args.case])
    except BadInputError as e:
        print(f"rank {os.environ.get('RANK', '0')}: error: {e}", file=sys.stderr, flush=True)
        return 2
    torch.set_num_threads(args.threads)
    pipeline.require_features()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    dog = Watchdog(rank, args.timeout)
    from .profile import ProfileOptions
    d = ProfileOptions()  # the reference model's widths (the profile's defaults)
    scale = Scale(hidden=args.hidden or d.hidden, seq=args.seq, vocab=args.vocab or d.vocab)
    hf_model = (args.hf, {"layers": args.layers, "hidden": args.hidden, "vocab": args.vocab}) if args.hf else None
    dtype = getattr(torch, args.dtype)
    try:
        cases = []
        for d, m in args.case:
            dog.arm(f"{d}: setting up")
            cases.append(Case(d, m, args.format, scale, dtype, args.rows_per_microbatch, hf_model))
        results = time_cases(cases, args.steps, dog)
        if rank == 0:
            for r in results:
                print(f"{r['dir']}: P = {r['P']}, S = {r['S']}, M = {r['M']}: median step {r['median_ms']:.1f} ms "
                      f"(first step {r['first_step_ms']:.1f} ms; steps {', '.join(f'{t:.1f}' for t in r['steps_ms'])})",
                      flush=True)
        if rank == 0 and args.json:
            write_output_file(args.json, json.dumps(results, indent=1) + "\n", "--json")
    except BadInputError as e:  # a plan, CSV or model that cannot run (every rank reads the same files)
        print(f"rank {rank}: error: {e}", file=sys.stderr, flush=True)
        os._exit(2)
    return 0


if __name__ == "__main__":
    pipeline.finish(main())
