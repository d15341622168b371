"""Count the autograd work of PyTorch's split and fused backward on one stage, without a clock.

:func:`backward_work` runs one microbatch through a stage module: F, then PyTorch's own
``stage_backward_input`` (I) and ``stage_backward_weight`` (W) from
``torch.distributed.pipelining._backward``; then F again on fresh inputs and the fused
``stage_backward`` (B). While each of those runs, ``torch.autograd.grad`` (and, for B,
``torch.autograd.backward``) is wrapped: before every call it walks the autograd graph from the
call's roots -- the nodes of its ``GradientEdge`` outputs, or the ``grad_fn`` of its output tensors
-- along ``next_functions`` and counts the distinct nodes it reaches. Those are the nodes the
autograd engine's dependency pass visits before it runs anything, whatever part of the graph the
call then executes. The wrappers are in place for the duration of one PyTorch call only and are
restored in ``finally``.

What it shows. ``stage_backward_input`` splits the stage's parameters into groups (parameters that
share the intermediate nodes their gradients start from), and ``stage_backward_weight`` calls
``torch.autograd.grad`` once per group, from those intermediates. An intermediate of layer j has
the stage's layers below j in its graph (the activation path runs through them to the stage's
input), so a group's call visits about the whole stage below it: W's visits grow with groups x
graph, quadratically in the stage's layers, while the fused backward's one call visits the graph
once (linear). The counts do not depend on the width, dtype or machine; they depend on the
stage's module structure and on PyTorch's ``_backward`` (``tests/python/test_split_weight_work.py``
pins them on the reference transformer; docs/pytorch.md, "Measured vs simulated", gives a table).
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
from typing import Any, Callable, Iterator, Sequence

import torch
from torch import nn


@dataclasses.dataclass(frozen=True)
class BackwardWork:
    """Autograd nodes visited by one microbatch's backward of one stage."""

    graph_nodes: int                 # distinct autograd nodes reachable from the stage's outputs after F
    groups: int                      # parameter groups stage_backward_input found
    calls: int                       # torch.autograd.grad calls stage_backward_weight made (one per group with gradients)
    split_i_nodes_visited: int       # nodes reachable from the roots of stage_backward_input's call(s)
    split_w_nodes_visited: int       # sum over W's calls of the nodes reachable from each call's roots
    fused_nodes_visited: int         # nodes reachable from the roots of stage_backward's torch.autograd.backward
    w_nodes_per_call: tuple[int, ...]  # W's calls in order: nodes reachable from each call's roots


def reachable_nodes(roots: Sequence[Any]) -> int:
    """Distinct autograd nodes reachable from ``roots`` (nodes; ``None`` skipped) along
    ``next_functions``, the roots included."""
    seen: set = set()
    queue: collections.deque = collections.deque()
    for node in roots:
        if node is not None and node not in seen:
            seen.add(node)
            queue.append(node)
    while queue:
        for nxt, _ in queue.popleft().next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return len(seen)


def _root_node(x: Any):
    """The graph node a ``torch.autograd.grad``/``backward`` output stands for: a ``GradientEdge``'s
    node, a tensor's ``grad_fn`` (a leaf's gradient accumulator, as PyTorch's ``_backward`` takes it)."""
    from torch.autograd.graph import GradientEdge
    from torch.distributed.pipelining._backward import _get_grad_fn_or_grad_acc
    if isinstance(x, GradientEdge):
        return x.node
    if isinstance(x, torch.Tensor) and x.requires_grad:
        return _get_grad_fn_or_grad_acc(x)
    return None


def _as_list(outputs: Any) -> list:
    from torch.autograd.graph import GradientEdge
    if isinstance(outputs, GradientEdge) or not isinstance(outputs, (list, tuple)):
        return [outputs]
    return list(outputs)


@contextlib.contextmanager
def _counting(name: str, counts: list[int]) -> Iterator[None]:
    """Wraps ``torch.autograd.<name>`` (``grad`` or ``backward``) so that every call first appends the
    number of nodes reachable from its outputs' roots to ``counts``; restored on exit."""
    original = getattr(torch.autograd, name)

    def counted(*args, **kwargs):
        outputs = args[0] if args else kwargs.get("outputs", kwargs.get("tensors"))
        counts.append(reachable_nodes([_root_node(x) for x in _as_list(outputs)]))
        return original(*args, **kwargs)

    setattr(torch.autograd, name, counted)
    try:
        yield
    finally:
        setattr(torch.autograd, name, original)


def _fresh_inputs(inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """The stage's inputs as a ``PipelineStage`` receives them: floating tensors as fresh leaves."""
    return [x.detach().clone().requires_grad_(True) if x.is_floating_point() else x for x in inputs]


def _forward(stage: nn.Module, inputs: list[torch.Tensor], loss_fn: Callable[[Any], torch.Tensor] | None):
    """(the tensors backward starts from, their output gradients: ones, or None for a loss)."""
    out = stage(*inputs)
    if loss_fn is not None:
        return [loss_fn(out)], None
    outs = [x for x in _as_list(out) if isinstance(x, torch.Tensor) and x.requires_grad]
    if not outs:
        raise ValueError("the stage's outputs carry no gradient: nothing for backward to do")
    return outs, [torch.ones_like(x) for x in outs]


def backward_work(stage: nn.Module, inputs: Sequence[torch.Tensor],
                  loss_fn: Callable[[Any], torch.Tensor] | None = None) -> BackwardWork:
    """Counts the autograd nodes PyTorch's split (I then W) and fused backward visit on ``stage`` for
    one microbatch ``inputs`` (the tensors the stage's forward takes; floating ones become fresh
    leaves, as a ``PipelineStage`` receives them). Backward starts from the stage's outputs that
    need gradients, with gradients of ones, or from ``loss_fn(outputs)`` for a last stage. At least
    one floating input must reach the outputs (a stage with no input gradient has no I: PyTorch's
    first stage runs a fused backward for its W). The parameters' ``.grad`` are left as they were
    before the call."""
    from torch.distributed.pipelining._backward import (stage_backward, stage_backward_input,
                                                        stage_backward_weight)
    params = [p for p in stage.parameters() if p.requires_grad]
    saved_grads = [p.grad for p in params]
    try:
        leaves = _fresh_inputs(inputs)
        if not any(x.requires_grad for x in leaves):
            raise ValueError("the stage has no floating input: PyTorch runs no I for it (a fused backward only)")
        outs, grads = _forward(stage, leaves, loss_fn)
        graph = reachable_nodes([_root_node(x) for x in outs])
        i_counts: list[int] = []
        with _counting("grad", i_counts):
            _, param_groups = stage_backward_input(outs, grads, leaves, iter(params))
        del outs, grads
        groups = len(param_groups)
        w_counts: list[int] = []
        with _counting("grad", w_counts):
            stage_backward_weight(iter(params), param_groups)
        del param_groups

        leaves = _fresh_inputs(inputs)
        outs, grads = _forward(stage, leaves, loss_fn)
        b_counts: list[int] = []
        with _counting("backward", b_counts):
            stage_backward(outs[0] if loss_fn is not None else outs, grads, leaves)
    finally:
        for p, g in zip(params, saved_grads):
            p.grad = g
    return BackwardWork(graph_nodes=graph, groups=groups, calls=len(w_counts),
                        split_i_nodes_visited=sum(i_counts), split_w_nodes_visited=sum(w_counts),
                        fused_nodes_visited=sum(b_counts), w_nodes_per_call=tuple(w_counts))
