"""A torchrun worker for test_recompute.py: runs an exported plan through pipesmith.torch the way a
training script does (reference_stage_modules, make_stages, build_schedule, schedule.step) and
counts, per stage, the forward calls (pre-hooks: a recomputation that stops early counts too) of its layers and of its attention cores during one step
(after a first, uncounted step: PyTorch's first step also runs shape inference). Rank 0 prints one
line per plan, ``COUNTS PLAN_DIR {json}``: stage -> {"layers": calls per layer, "cores": calls per
attention core}.

    torchrun --nproc-per-node P tests/python/recompute_counts.py --case PLAN_DIR MODEL.yaml ... [--format F]
"""
import argparse
import json

import torch
import torch.distributed as dist

from pipesmith.torch import pipeline
from pipesmith.torch.model_yaml import load_model
from pipesmith.torch.plan import load_plan
from pipesmith.torch.reference import AttentionCore, ReferenceLayer, ReferenceTransformer, Scale, loss_fn


def count(plan_dir: str, model_path: str, fmt: str, rank: int) -> None:
    plan = load_plan(plan_dir)
    model = ReferenceTransformer(load_model(model_path), Scale())
    modules = pipeline.reference_stage_modules(model, plan, rank)
    counts: dict = {}
    for stage, module in zip(plan.rank_to_stages[rank], modules):
        layers, cores = [0] * len(module.layers), []
        counts[stage] = {"layers": layers, "cores": cores}
        for i, layer in enumerate(module.layers):
            assert isinstance(layer, ReferenceLayer)
            layer.register_forward_pre_hook(lambda *_, c=layers, i=i: c.__setitem__(i, c[i] + 1))
            for sub in layer.modules():
                if isinstance(sub, AttentionCore):
                    cores.append(0)
                    k = len(cores) - 1
                    sub.register_forward_pre_hook(lambda *_, c=cores, k=k: c.__setitem__(k, c[k] + 1))
    stages = pipeline.make_stages(modules, plan, rank, torch.device("cpu"))
    schedule = pipeline.build_schedule(stages, plan, fmt, loss_fn)
    tokens, labels = model.batch(rows=2 * plan.microbatches)
    inputs = model.step_inputs(tokens, labels)
    first, last = 0 in plan.rank_to_stages[rank], plan.num_stages - 1 in plan.rank_to_stages[rank]
    for step in range(2):
        if step == 1:
            for c in counts.values():
                c["layers"][:] = [0] * len(c["layers"])
                c["cores"][:] = [0] * len(c["cores"])
        schedule.step(*(inputs if first else ()), **({"target": labels, "losses": []} if last else {}))
    gathered = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, counts)
    if rank == 0:
        merged = {s: c for g in gathered for s, c in g.items()}
        print(f"COUNTS {plan_dir} " + json.dumps({str(s): merged[s] for s in sorted(merged)}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", nargs=2, action="append", required=True, metavar=("DIR", "MODEL"))
    ap.add_argument("--format", default="compute_comms", choices=["compute_only", "compute_comms"])
    args = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    for plan_dir, model_path in args.case:
        count(plan_dir, model_path, args.format, dist.get_rank())
    pipeline.finish()


if __name__ == "__main__":
    main()
