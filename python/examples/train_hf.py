"""Train a Hugging Face transformers causal LM for a few steps on a plan pipesmith exported, in
PyTorch's pipelining runtime: the README's transformers recipe as a script.

    torchrun --nproc-per-node P python/examples/train_hf.py PLAN_DIR CONFIG.json [--steps N]
        [--layers L] [--hidden H] [--vocab V] [--timeout S]

PLAN_DIR is what `pipesmith export SCHEDULE --to pytorch -o PLAN_DIR --model MODEL.yaml` wrote for the
YAML `pipesmith import hf CONFIG.json` made. The model has random weights of one seed on every rank
(`hf.model_from_config`; --layers/--hidden/--vocab shrink it; with real weights, load them the same
way on every rank: `AutoModelForCausalLM.from_pretrained(...)`). The same batch is used every step, so
the loss printed by the rank holding the last stage falls. A rank that waits longer than --timeout
seconds for a step prints the last action it started and the job ends with exit 124.
"""
import argparse

import torch
import torch.distributed as dist

from pipesmith.torch import hf, pipeline
from pipesmith.torch.plan import load_plan
from pipesmith.torch.watchdog import DEFAULT_TIMEOUT_S, Watchdog, timeout_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("plan", help="directory written by `pipesmith export --to pytorch`")
    ap.add_argument("config", help="the transformers config.json the plan's model YAML was imported from")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--layers", type=int)
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--vocab", type=int)
    ap.add_argument("--timeout", type=timeout_s, default=DEFAULT_TIMEOUT_S, help="seconds a step may take")
    args = ap.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    dog = Watchdog(rank, args.timeout)
    plan = load_plan(args.plan)
    model = hf.model_from_config(args.config, layers=args.layers, hidden=args.hidden, vocab=args.vocab,
                                 dtype=torch.float32)
    stages = pipeline.make_stages(hf.stage_modules(model, plan, rank), plan, rank, torch.device("cpu"))
    schedule = pipeline.build_schedule(stages, plan, "compute_only", hf.causal_lm_loss)  # sums tied gradients
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)  # the stages hold the model's own tensors

    first = 0 in plan.rank_to_stages[rank]
    last = plan.num_stages - 1 in plan.rank_to_stages[rank]
    g = torch.Generator().manual_seed(0)
    input_ids = torch.randint(0, model.config.vocab_size, (2 * plan.microbatches, 16), generator=g)
    for step in range(args.steps):
        dog.arm(f"step {step}")
        opt.zero_grad()
        losses: list = []
        schedule.step(*([input_ids] if first else []),
                      **({"target": input_ids, "losses": losses} if last else {}))  # labels: the ids, shifted by the loss
        opt.step()
        if last:
            print(f"step {step}: loss {torch.stack(losses).mean().item():.6f}", flush=True)
    dog.disarm()
    pipeline.finish()


if __name__ == "__main__":
    main()
