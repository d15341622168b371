"""Run exported pipesmith schedules with PyTorch's pipelining runtime, one process per rank.

    torchrun --nproc-per-node P -m pipesmith.torch.run DIR [DIR ...] --model MODEL.yaml \
        [--case DIR MODEL.yaml ...] [--format compute_only|compute_comms|both] [--steps N] [--timeout S]

Each DIR is what ``pipesmith export --to pytorch -o DIR`` wrote; ``--case`` pairs a DIR with its own
model, so plans of several models run in one job. Every rank builds the reference
transformer of MODEL.yaml (float64, the same seed everywhere), takes its stages from the plan,
loads the CSV into ``_PipelineScheduleRuntime`` and trains N steps (SGD) on one batch split into the
plan's microbatches. It then compares the loss, every gradient of its stages after the first step
and every parameter after the last step with an unpipelined run of the same model and batch. Rank 0
prints one line per (DIR, format); exit 0 when all match, 1 when any differs, 2 on bad flags or a bad
plan, CSV or model (``error: FILE:ROW:CELL ...``, no traceback). A rank that waits longer than
``--timeout`` seconds (default 60) for a case's setup or a step prints the last action it started and
the job ends with exit 124 (:mod:`pipesmith.torch.watchdog`).
"""
from __future__ import annotations

import argparse
import importlib
import math
import os
import sys

import torch
import torch.distributed as dist

from ..errors import BadInputError
from . import hf, hf_check, pipeline
from .model_yaml import ModelSpec, load_model
from .plan import Plan, PlanError, load_plan
from .reference import ReferenceTransformer, Scale, loss_fn
from .stepcheck import train_and_compare
from .watchdog import DEFAULT_TIMEOUT_S, Watchdog, timeout_s

RTOL = 1e-9  # float64: pipelined and unpipelined sums differ only in summation order


def _build(spec, scale, user_model):
    if user_model is None:
        return ReferenceTransformer(spec, scale)
    mod, _, fn = user_model.partition(":")
    try:
        build = getattr(importlib.import_module(mod), fn)
    except (ImportError, AttributeError) as e:
        raise pipeline.PipelineBuildError(f"--user-model {user_model}: {e}") from None
    return build(spec, scale)


def _reference(make, inputs, labels, M, steps, lr):
    model = make()
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    grads = loss = None
    for step in range(steps):
        opt.zero_grad()
        chunks = [torch.tensor_split(x, M) for x in inputs]
        label_chunks = torch.tensor_split(labels, M)
        total = 0
        for m in range(M):
            total = total + loss_fn(model(*(c[m] for c in chunks)), label_chunks[m])
        total = total / M
        total.backward()
        if step == 0:
            loss = total.item()
            grads = {n: (p.grad.clone() if p.grad is not None else None) for n, p in model.named_parameters()}
        opt.step()
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    return loss, grads, params


def _torchtitan_split(model, plan, stage):
    """torchtitan's own splitter on the plan's module names (``module_fqns_per_model_part``)."""
    try:
        from torchtitan.distributed.pipeline_parallel import _split_module
    except ImportError as e:
        raise pipeline.PipelineBuildError(f"--splitter torchtitan: torchtitan does not import ({e}); "
                                          "bash scripts/install-deps installs it") from None
    return _split_module(model, pipeline.module_fqns_per_model_part(plan)[stage])


def run_case(plan_dir: str, fmt: str, spec: ModelSpec, scale: Scale, rank: int, steps: int, lr: float,
             rows_per_mb: int, ref_cache: dict, user_model: str | None = None, splitter: str = "pipesmith",
             runtime_rules: bool = True) -> tuple[Plan, bool, float, float, float, list[str]]:
    plan = load_plan(plan_dir, runtime_rules=runtime_rules)
    if plan.devices != dist.get_world_size():
        raise PlanError(f"{plan.path}: the plan is for {plan.devices} ranks, the job has {dist.get_world_size()}")
    M = plan.microbatches
    make = lambda: _build(spec, scale, user_model)  # noqa: E731
    model = make()
    g = torch.Generator().manual_seed(99)
    vocab = getattr(model, "vocab", scale.vocab)  # a user's model may say its vocabulary; else the Scale's
    tokens = torch.randint(0, vocab, (M * rows_per_mb, scale.seq), generator=g)
    labels = torch.randint(0, vocab, (M * rows_per_mb, scale.seq), generator=g)
    if user_model is None:
        inputs = model.step_inputs(tokens, labels)
        modules = pipeline.reference_stage_modules(model, plan, rank)
        names = {id(p): n for n, p in model.named_parameters()}
        named = [(names[id(p)], p) for m in modules for p in m.parameters()]
    else:
        inputs = (tokens,)
        split = _torchtitan_split if splitter == "torchtitan" else pipeline.split_by_modules
        modules = [split(model, plan, s) for s in pipeline.stage_ids_this_rank(plan, rank)]
        named = [(n, p) for m in modules for n, p in m.named_parameters()]
    key = (M, steps)
    if key not in ref_cache:
        ref_cache[key] = _reference(make, inputs, labels, M, steps, lr)
    stages = pipeline.make_stages(modules, plan, rank, torch.device("cpu"))
    schedule = pipeline.build_schedule(stages, plan, fmt, loss_fn)
    c = train_and_compare(schedule, named, plan, rank, inputs, labels, steps, lr, ref_cache[key], RTOL)
    return plan, c.ok, c.worst_grad, c.worst_param, c.loss_err, c.missing


def _is_hf(model_path: str) -> bool:
    """A transformers config.json (run with --hf's check) rather than a model YAML."""
    return model_path.endswith(".json")


def check_inputs(cases: list[tuple[str, str]], runtime_rules: bool = True) -> None:
    """Reads every (plan directory, model YAML) of ``cases`` as the run will; raises
    :class:`pipesmith.errors.BadInputError` (PlanError, ModelFileError) for the first bad one."""
    seen: set[str] = set()
    for d, model_path in cases:
        load_plan(d, runtime_rules=runtime_rules)
        if not _is_hf(model_path) and model_path not in seen:
            seen.add(model_path)
            load_model(model_path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipesmith.torch.run", description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="*", help="directories written by `pipesmith export --to pytorch`")
    ap.add_argument("--model", help="the model YAML the DIRs' plans were made from")
    ap.add_argument("--case", nargs=2, action="append", default=[], metavar=("DIR", "MODEL"),
                    help="a directory and its model YAML, or a transformers config.json (a MODEL ending in .json: "
                         "run as --hf runs it) (repeatable)")
    ap.add_argument("--format", default="both", choices=["compute_only", "compute_comms", "both"])
    ap.add_argument("--steps", type=int, default=1, help="training steps (SGD); default 1")
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--hidden", type=int, default=None,
                    help=f"hidden size of the reference model (default {Scale.hidden}); with --hf: shrink the "
                         "transformers model to it (default: the config's own)")
    ap.add_argument("--rows-per-microbatch", type=int, default=2)
    ap.add_argument("--user-model", metavar="MODULE:FUNCTION",
                    help="build the model with FUNCTION(spec, scale) from MODULE instead of the reference "
                         "transformer: a torchtitan-layout model whose stages are cut by module names "
                         "(pipesmith.torch.titan_layout:build is one); the reference is that model unpipelined. "
                         "With --hf: FUNCTION(model, plan, rank) returns the rank's stage modules (your glue, in "
                         "place of pipesmith.torch.hf.stage_modules) and the reference is the transformers model's "
                         "own forward and loss")
    ap.add_argument("--hf", metavar="CONFIG.json",
                    help="run the DIRs' plans on the transformers *ForCausalLM of this config.json (random weights) "
                         "and compare with its own unpipelined step, model(input_ids, labels=...)")
    ap.add_argument("--layers", type=int, help="with --hf: decoder layers of the model (default: the config's)")
    ap.add_argument("--vocab", type=int, help="with --hf: vocabulary size (default: the config's)")
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32", "bfloat16"],
                    help="with --hf: the model's dtype (default float64)")
    ap.add_argument("--splitter", default="pipesmith", choices=["pipesmith", "torchtitan"],
                    help="with --user-model: cut stages with pipesmith.torch.pipeline.split_by_modules "
                         "(default) or torchtitan's own _split_module")
    ap.add_argument("--timeout", type=timeout_s, default=DEFAULT_TIMEOUT_S,
                    help="seconds a rank may take for a case's setup or one step before the job ends with exit "
                         f"124, each rank printing the last action it started (default {DEFAULT_TIMEOUT_S:g}; "
                         "a finite number in (0, 1e6])")
    ap.add_argument("--skip-runtime-rules", action="store_true",
                    help="run CSVs that break what PyTorch's runtime silently gets wrong (the last stage's "
                         "forwards out of microbatch order, a stage without exactly one REDUCE_GRAD) instead "
                         "of refusing them: to see what PyTorch does with them")
    args = ap.parse_args(argv)
    hf_hidden, args.hidden = args.hidden, Scale.hidden if args.hidden is None else args.hidden
    if args.hf and args.model:
        ap.error("--hf and --model: the DIRs run on one of them")
    any_hf = bool(args.hf) or any(_is_hf(m) for _, m in args.case)
    if any_hf and args.splitter != "pipesmith":
        ap.error("--splitter goes with a model YAML's --user-model, not with transformers configs")
    if not any_hf and (args.layers is not None or args.vocab is not None or args.dtype != "float64"):
        ap.error("--layers, --vocab and --dtype go with --hf")
    if (args.layers is not None and not 1 <= args.layers <= 100_000) or (
            args.vocab is not None and not 2 <= args.vocab <= 10_000_000):
        ap.error("--layers in 1..100000, --vocab in 2..10000000")
    if args.hf and not _is_hf(args.hf):
        ap.error(f"--hf {args.hf}: a transformers config.json (a file ending in .json)")
    if any_hf:
        # transformers' own PyTorch code, nothing fetched: a random-weight model needs no hub access,
        # and hub kernels (the `kernels` package) would replace the code paths being checked.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("USE_HUB_KERNELS", "0")
    if args.hf:
        args.model = args.hf
    if args.dirs and not args.model:
        ap.error("DIRs need --model (or give each as --case DIR MODEL)")
    cases = [(d, args.model) for d in args.dirs] + [tuple(c) for c in args.case]
    if not cases:
        ap.error("nothing to run: give DIRs with --model, or --case DIR MODEL")
    if args.splitter != "pipesmith" and not args.user_model:
        ap.error("--splitter needs --user-model (the reference model is cut by layer ranges)")
    if not (1 <= args.steps <= 1000 and 2 <= args.hidden <= 65536 and 1 <= args.rows_per_microbatch <= 65536
            and math.isfinite(args.lr)):
        ap.error("--steps in 1..1000, --hidden in 2..65536, --rows-per-microbatch in 1..65536, --lr finite")
    # Every plan, CSV and model is read and checked before the process group starts: a bad one ends
    # every rank alike (they read the same files), with no rank left waiting for another.
    try:
        check_inputs(cases, runtime_rules=not args.skip_runtime_rules)
    except BadInputError as e:
        print(f"rank {os.environ.get('RANK', '0')}: error: {e}", file=sys.stderr, flush=True)
        return 2
    torch.set_num_threads(1)
    pipeline.require_features()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    dog = Watchdog(rank, args.timeout)
    fmts = ["compute_only", "compute_comms"] if args.format == "both" else [args.format]
    status = 0
    try:
        scale = Scale(hidden=args.hidden)
        specs: dict = {}
        for d, model_path in cases:
            if model_path not in specs:
                specs[model_path] = (None if _is_hf(model_path) else load_model(model_path), {})
            spec, ref_cache = specs[model_path]
            for fmt in fmts:
                # The setup and the unpipelined reference, then every step: --timeout each.
                dog.arm(f"{d} ({fmt})", args.timeout * (1 + args.steps))
                if _is_hf(model_path):
                    dtype = hf.DTYPES[args.dtype]
                    tol = hf_check.RTOL[dtype]
                    plan, ok, g, p, l, missing = hf_check.run_case(
                        d, fmt, model_path, rank, args.steps, args.lr, args.rows_per_microbatch, scale.seq, ref_cache,
                        {"layers": args.layers, "hidden": hf_hidden, "vocab": args.vocab}, dtype, args.user_model,
                        not args.skip_runtime_rules)
                else:
                    tol = RTOL
                    plan, ok, g, p, l, missing = run_case(d, fmt, spec, scale, rank, args.steps, args.lr,
                                                          args.rows_per_microbatch, ref_cache, args.user_model,
                                                          args.splitter, not args.skip_runtime_rules)
                dog.disarm()
                flags = torch.tensor([0 if ok else 1, 0], dtype=torch.int64)
                worst = torch.tensor([g, p, l], dtype=torch.float64)
                dist.all_reduce(flags)
                dist.all_reduce(worst, op=dist.ReduceOp.MAX)
                if missing:
                    print(f"rank {rank}: gradients missing on one side for {missing[:4]}", flush=True)
                if rank == 0:
                    verdict = "match" if flags[0].item() == 0 else "DIFFER"
                    print(f"{d} {fmt}: P = {plan.devices}, S = {plan.num_stages}, M = {plan.microbatches}: "
                          f"loss, gradients and parameters after {args.steps} step(s) {verdict} the "
                          f"unpipelined run (max rel. diff: loss {worst[2]:.1e}, grad {worst[0]:.1e}, "
                          f"param {worst[1]:.1e}; tolerance {tol:.0e})", flush=True)
                if flags[0].item():
                    status = 1
    except BadInputError as e:  # a plan, CSV or model that cannot run: every rank reads the same files
        print(f"rank {rank}: error: {e}", file=sys.stderr, flush=True)
        os._exit(2)
    return status


if __name__ == "__main__":
    pipeline.finish(main())
