"""Train the reference transformer of a model YAML for a few steps with a schedule pipesmith
exported, in PyTorch's pipelining runtime: what a training script does with the package.

    torchrun --nproc-per-node P python/examples/train_reference.py PLAN_DIR MODEL.yaml [--steps N] [--timeout S]

PLAN_DIR is what `pipesmith export SCHEDULE --to pytorch -o PLAN_DIR --model MODEL.yaml` wrote. The
same batch is used every step, so the loss printed by the rank holding the last stage falls. A rank
that waits longer than --timeout seconds for a step prints the last action it started and the job ends
with exit 124 (pipesmith.torch.watchdog).
"""
import argparse

import torch
import torch.distributed as dist

from pipesmith.torch import pipeline
from pipesmith.torch.model_yaml import load_model
from pipesmith.torch.plan import load_plan
from pipesmith.torch.reference import ReferenceTransformer, Scale, loss_fn
from pipesmith.torch.watchdog import DEFAULT_TIMEOUT_S, Watchdog, timeout_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("plan", help="directory written by `pipesmith export --to pytorch`")
    ap.add_argument("model", help="the model YAML the plan was made from")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--format", default="compute_comms", choices=["compute_only", "compute_comms"])
    ap.add_argument("--timeout", type=timeout_s, default=DEFAULT_TIMEOUT_S, help="seconds a step may take")
    args = ap.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    dog = Watchdog(rank, args.timeout)  # ends the job (exit 124) when a rank waits too long
    plan = load_plan(args.plan)  # checks plan.json against both CSVs
    model = ReferenceTransformer(load_model(args.model), Scale())  # same seed on every rank
    modules = pipeline.reference_stage_modules(model, plan, rank)  # this rank's stages, ascending
    stages = pipeline.make_stages(modules, plan, rank, torch.device("cpu"))
    schedule = pipeline.build_schedule(stages, plan, args.format, loss_fn)
    opt = torch.optim.AdamW([p for m in modules for p in m.parameters()], lr=1e-2)

    first = 0 in plan.rank_to_stages[rank]
    last = plan.num_stages - 1 in plan.rank_to_stages[rank]
    tokens, labels = model.batch(rows=2 * plan.microbatches)  # 2 rows per microbatch
    for step in range(args.steps):
        dog.arm(f"step {step}")
        opt.zero_grad()
        losses: list = []
        schedule.step(*(model.step_inputs(tokens, labels) if first else ()),
                      **({"target": labels, "losses": losses} if last else {}))
        opt.step()
        if last:
            print(f"step {step}: loss {torch.stack(losses).mean().item():.6f}", flush=True)
    dog.disarm()
    pipeline.finish()  # destroys the process group and exits (why not a plain return: its docstring)


if __name__ == "__main__":
    main()
