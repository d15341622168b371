"""One pipelined training run held against its unpipelined reference: the check behind
``python -m pipesmith.torch.run`` for the reference transformer, a user's model and a Hugging Face model
(``--hf``) alike. The pipelined schedule takes ``steps`` SGD steps; the loss and every gradient of the
first step, and every parameter after the last, are compared with the reference's, relative to the
reference's largest magnitude."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import torch

from .plan import Plan


@dataclass
class StepCheck:
    ok: bool
    worst_grad: float
    worst_param: float
    loss_err: float
    missing: list[str] = field(default_factory=list)  # parameters with a gradient on one side only


def rel_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """max |a - b| / max |b|, in float64."""
    return (a.double() - b.double()).abs().max().item() / (b.double().abs().max().item() + 1e-30)


def train_and_compare(schedule, named: Sequence[tuple[str, torch.nn.Parameter]], plan: Plan, rank: int,
                      inputs: tuple, labels: torch.Tensor, steps: int, lr: float,
                      reference: tuple[float, dict, dict], tol: float) -> StepCheck:
    """Runs ``schedule`` (this rank's part of ``plan``) for ``steps`` steps of SGD at ``lr`` on this rank's
    parameters ``named`` (the reference's names), and compares with ``reference`` = (loss, gradients of the
    first step by name, parameters after the last step by name)."""
    ref_loss, ref_grads, ref_params = reference
    mine = [p for _, p in named]
    opt = torch.optim.SGD(mine, lr=lr) if mine else None
    holds_first = 0 in plan.rank_to_stages[rank]
    holds_last = plan.num_stages - 1 in plan.rank_to_stages[rank]
    worst_grad, loss, missing = 0.0, None, []
    for step in range(steps):
        for p in mine:
            p.grad = None
        losses: list = []
        kwargs = {"target": labels, "losses": losses} if holds_last else {}
        schedule.step(*(inputs if holds_first else ()), **kwargs)
        if holds_last and step == 0:
            loss = torch.stack(losses).double().mean().item()
        if step == 0:
            for n, p in named:
                r = ref_grads[n]
                if p.grad is None or r is None:
                    if (p.grad is None) != (r is None):
                        missing.append(n)
                    continue
                worst_grad = max(worst_grad, rel_diff(p.grad, r))
        if opt is not None:
            opt.step()
    worst_param = max((rel_diff(p.detach(), ref_params[n]) for n, p in named), default=0.0)
    loss_err = abs(loss - ref_loss) / abs(ref_loss) if loss is not None else 0.0
    ok = worst_grad <= tol and worst_param <= tol and loss_err <= tol and not missing
    return StepCheck(ok, worst_grad, worst_param, loss_err, missing)
