"""A torchrun worker: torchtitan 0.3.0's pipeline path (``ParallelDims`` and its ``pp`` mesh, the trainer's
``ModelSpec.pipelining_fn`` call with torchtitan's config objects, ``_split_module``,
``_build_pipeline_schedule``) on a pipesmith plan through :func:`pipesmith.torch.titan.pipelining_fn`,
one step, compared with the unpipelined model (float64).

    torchrun --nproc-per-node P titan_worker.py PLAN_DIR MODEL.yaml

Two shims let torchtitan's ParallelDims build its mesh on a CPU-only machine: its device type is set
to "cpu" (torchtitan falls back to "cuda" when no accelerator is present) and PyTorch's "fake"
process-group backend, which ParallelDims uses for its degree-1 mesh axes, is registered.
Prints ``titan: match`` or ``titan: DIFFER`` with the largest relative differences; exit 0 / 1.
"""
import sys

import torch
import torch.distributed as dist
import torch.testing._internal.distributed.fake_pg  # noqa: F401  registers the "fake" backend

from pipesmith.torch import pipeline, titan
from pipesmith.torch.model_yaml import load_model
from pipesmith.torch.plan import load_plan
from pipesmith.torch.reference import Scale, loss_fn
from pipesmith.torch.titan_layout import TitanLayoutLM

RTOL = 1e-9


def main() -> int:
    plan_dir, model_path = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    import torchtitan.distributed.parallel_dims as pd
    from torchtitan.config import CompileConfig, ParallelismConfig, TrainingConfig
    from torchtitan.distributed import ParallelDims
    pd.device_type = "cpu"
    P = dist.get_world_size()
    plan = load_plan(plan_dir)
    rows = 2
    dims = ParallelDims(dp_replicate=1, dp_shard=1, cp=1, tp=1, pp=P, ep=1, world_size=P)
    dims.build_mesh()
    spec = load_model(model_path)
    model = TitanLayoutLM(spec, Scale())
    M = plan.microbatches
    g = torch.Generator().manual_seed(99)
    tokens = torch.randint(0, model.vocab, (M * rows, model.seq), generator=g)
    labels = torch.randint(0, model.vocab, (M * rows, model.seq), generator=g)

    reference = TitanLayoutLM(spec, Scale())
    total = sum(loss_fn(reference(t), y) for t, y in zip(torch.tensor_split(tokens, M), torch.tensor_split(labels, M)))
    (total / M).backward()
    ref = {n: p.grad for n, p in reference.named_parameters()}

    # torchtitan's loss functions return (loss, extra); its CSV runtime runs with scale_grads=False,
    # so the loss carries the 1/M itself, as torchtitan's global-token rescaling does.
    def titan_loss(out, target):
        return loss_fn(out, target) / M, None

    build = titan.pipelining_fn(plan_dir)
    schedule, parts, has_first, has_last = build(
        model, parallel_dims=dims, training=TrainingConfig(local_batch_size=M * rows),
        parallelism=ParallelismConfig(pipeline_parallel_degree=P, pipeline_parallel_microbatch_size=rows),
        compile_config=CompileConfig(), ac_config=None, dump_folder="",
        device=torch.device("cpu"), model_config=None, parallelize_fn=lambda m, **kw: m, loss_fn=titan_loss)
    schedule.step(*((tokens,) if has_first else ()), **({"target": labels} if has_last else {}))
    worst, missing = 0.0, []
    for part in parts:
        for n, p in part.named_parameters():
            if p.grad is None:
                missing.append(n)
                continue
            worst = max(worst, ((p.grad - ref[n]).abs().max() / ref[n].abs().max()).item())
    flags = torch.tensor([len(missing), len(parts)], dtype=torch.float64)
    w = torch.tensor([worst], dtype=torch.float64)
    dist.all_reduce(flags)
    dist.all_reduce(w, op=dist.ReduceOp.MAX)
    ok = flags[0].item() == 0 and w.item() <= RTOL
    if dist.get_rank() == 0:
        print(f"titan: {'match' if ok else 'DIFFER'}: {int(flags[1].item())} stages on {P} ranks "
              f"{[list(s) for s in plan.rank_to_stages]}, max rel. grad diff {w.item():.1e}, "
              f"{int(flags[0].item())} parameters without a gradient", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    pipeline.finish(main())
