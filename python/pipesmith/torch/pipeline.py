"""Building PyTorch pipeline stages and the schedule runtime from a pipesmith plan.

Two ways to get a stage's module:

* :func:`reference_stage_modules` takes them from a :class:`~pipesmith.torch.reference.ReferenceTransformer`
  by layer range: every plan builds, sublayer cuts, vocabulary shards and skip inputs included.
* :func:`split_by_modules` cuts a user's model laid out as torchtitan's are (``tok_embeddings``,
  ``layers`` as a ModuleDict, ``norm``, ``lm_head``; older torchtitan: ``output``) by the module names
  the plan lists per stage, the way torchtitan's splitter does: a copy of the model with every other module removed. Stages a
  whole-module splitter cannot build are refused with the stage and the reason.

:func:`build_schedule` loads the plan's CSV into ``_PipelineScheduleRuntime`` and checks that the
stage -> rank mapping PyTorch inferred from the rows is the plan's.

:func:`make_stages` applies each stage's recomputation mode (plan.json ``stages[].recompute``; the
export drops the R actions, which PyTorch's CSV grammar lacks): ``full`` runs each layer of a
reference stage (a user's module: the whole module) under ``torch.utils.checkpoint``
(non-reentrant), ``selective`` only the attention cores
(:class:`~pipesmith.torch.reference.AttentionCore`); PyTorch then recomputes when the stage's
backward starts.
"""
from __future__ import annotations

import copy
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Optional, Sequence

import torch
import torch.distributed as dist
from torch import nn

from ..errors import BadInputError
from .plan import Plan, PlanError, Stage
from .reference import AttentionCore, StageModule

if TYPE_CHECKING:  # PyTorch's pipelining types, for the hints only (imported where used)
    from torch.distributed.pipelining import PipelineStage
    from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime


TOP_LEVEL = ("tok_embeddings", "norm", "lm_head", "output")  # torchtitan's non-layer modules


class PipelineBuildError(BadInputError):
    """A plan that cannot be built into PyTorch stages; the message names the stage and the reason."""


def missing_features() -> list[str]:
    """What this PyTorch lacks of what pipesmith's exports use (empty: all there)."""
    missing = []
    try:
        from torch.distributed.pipelining import PipelineStage  # noqa: F401
        from torch.distributed.pipelining import schedules
    except ImportError as e:
        return [f"torch.distributed.pipelining ({e})"]
    ct = getattr(schedules, "_ComputationType", None)
    for name in ("REDUCE_GRAD", "OVERLAP_F_B", "SEND_F", "RECV_B", "BACKWARD_INPUT", "BACKWARD_WEIGHT"):
        if ct is None or not hasattr(ct, name):
            missing.append(f"_ComputationType.{name}")
    rt = getattr(schedules, "_PipelineScheduleRuntime", None)
    if rt is None or not hasattr(rt, "_load_csv"):
        missing.append("_PipelineScheduleRuntime._load_csv")
    return missing


def require_features() -> None:
    missing = missing_features()
    if missing:
        raise RuntimeError(f"PyTorch {torch.__version__} lacks what pipesmith's exports use: "
                           f"{', '.join(missing)} (docs/pytorch.md, 'Which PyTorch')")


def finish(status: int = 0) -> NoReturn:
    """Ends a torchrun worker: destroys the default process group (when there is one), flushes stdout
    and stderr, and leaves with ``status`` without the interpreter's finalization (``os._exit``).

    Why not a plain return: gloo's worker threads (PyTorch 2.13) drop their reference to a collective
    after the caller's ``wait()`` has returned, and for ``all_gather_object``, ``all_reduce`` and the
    like that can be the last reference to a tensor that Python owns. Freeing it takes the GIL; a
    thread that asks for the GIL while the interpreter finalizes is ended with ``pthread_exit``, whose
    unwinding through the worker's noexcept frame calls ``std::terminate``: the rank aborts
    ("terminate called without an active exception", SIGABRT) after all its work succeeded, and
    torchrun reports the job failed. ``destroy_process_group`` does not join those threads, so only
    skipping finalization closes the window. Files the worker wrote must be closed before the call;
    ``atexit`` handlers do not run."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: nothing more can reach it
            pass
    os._exit(status)


def reference_stage_modules(model: nn.Module, plan: Plan, rank: int) -> list[nn.Module]:
    """The modules of ``rank``'s stages (ascending), cut from the reference model by layer range."""
    if plan.num_layers != len(model.chain):
        raise PipelineBuildError(f"{plan.path}: the plan covers {plan.num_layers} layers, the model "
                                 f"'{model.spec.name}' has {len(model.chain)}")
    for st in plan.stages:
        names = tuple(model.spec.type_of(i).name for i in range(st.first_layer, st.last_layer + 1))
        if names != st.layer_types:
            raise PipelineBuildError(f"{plan.path}: stage {st.index}'s layer types {list(st.layer_types)} "
                                     f"differ from the model's {list(names)} ({model.spec.path})")
    return [model.stage(plan.stages[s].first_layer, plan.stages[s].last_layer)
            for s in plan.rank_to_stages[rank]]


def split_by_modules(model: nn.Module, plan: Plan, stage: int) -> nn.Module:
    """A copy of ``model`` holding only the modules the plan lists for ``stage`` (torchtitan layout:
    ``tok_embeddings``, ``layers`` ModuleDict, ``norm``, ``lm_head`` or ``output``; absent parts set to None, which
    the model's forward must skip, as torchtitan's models do)."""
    st = plan.stages[stage]
    problems = st.whole_module_problems()
    if problems:
        raise PipelineBuildError(f"stage {stage} (rank {st.rank}, layers {st.first_layer}-{st.last_layer}) "
                                 f"cannot be built from whole modules: {'; '.join(problems)}. Build it "
                                 "from the reference model (reference_stage_modules) or write its module")
    keep = set(st.modules or ())
    for other in plan.stages:
        shared = sorted(keep & set(other.modules or ())) if other.index != stage else []
        if shared:
            raise PipelineBuildError(f"stage {stage} (rank {st.rank}) and stage {other.index} both hold "
                                     f"parts of module {shared[0]}: the plan cuts inside it, so neither "
                                     "stage can be built from whole modules")
    layers = getattr(model, "layers", None)
    if not isinstance(layers, nn.ModuleDict):
        raise PipelineBuildError("split_by_modules needs the torchtitan layout: `layers` as an nn.ModuleDict")
    known = {f"layers.{k}" for k in layers.keys()} | {n for n in TOP_LEVEL
                                                       if getattr(model, n, None) is not None}
    unknown = sorted(keep - known)
    if unknown:
        raise PipelineBuildError(f"stage {stage}: module(s) {unknown} are not in the model "
                                 f"(it has {', '.join(sorted(known)[:6])}, ...)")
    part = copy.deepcopy(model)
    for name in TOP_LEVEL:
        if name not in keep and getattr(part, name, None) is not None:
            setattr(part, name, None)
    for k in list(part.layers.keys()):
        if f"layers.{k}" not in keep:
            del part.layers[k]
    return part


def module_fqns_per_model_part(plan: Plan, model: nn.Module | None = None) -> list[list[str]]:
    """torchtitan's ``module_fqns_per_model_part``: one list of module names per stage, in stage order
    (every stage must be buildable from whole modules). With ``model``, every name must be one of its
    modules (:func:`pipesmith.torch.hf.check_names`: the missing names and the closest ones it has):
    torchtitan's splitter would otherwise build a stage without them, silently."""
    if model is not None:
        from .hf import check_names
        check_names(model, plan)
    out = []
    for st in plan.stages:
        problems = st.whole_module_problems()
        if problems:
            raise PipelineBuildError(f"stage {st.index} (rank {st.rank}): {'; '.join(problems)}")
        out.append(list(st.modules or ()))
    return out


def stage_ids_this_rank(plan: Plan, rank: int) -> tuple[int, ...]:
    """The stage indices ``rank`` builds, for any placement: the plan's ``rank_to_stages``. (torchtitan
    0.3.0's own mapping, the private ``_get_pp_rank_to_stage_indices_mapping`` inside its module split,
    knows only looped and V placements with ``num_stages % pp == 0``; :mod:`pipesmith.torch.titan`
    builds its stages from this instead.)"""
    if not 0 <= rank < plan.devices:
        raise PlanError(f"rank {rank}: the plan has ranks 0..{plan.devices - 1}")
    return plan.rank_to_stages[rank]


class Checkpointed(nn.Module):
    """``inner``'s forward under ``torch.utils.checkpoint`` (non-reentrant): its activations are
    dropped after the forward and recomputed when the backward first needs them."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, *args: Any) -> Any:
        from torch.utils.checkpoint import checkpoint
        return checkpoint(self.inner, *args, use_reentrant=False)


def with_recompute(module: nn.Module, stage: Stage) -> nn.Module:
    """``module`` set up for ``stage.recompute``, in place where it can be:

    * ``none``: unchanged;
    * ``full``: in a reference stage (:class:`~pipesmith.torch.reference.StageModule`) each layer is
      made :class:`Checkpointed`, so the forward keeps the layers' inputs, as pipesmith's full mode
      counts its memory (``recompute_kept_mb``); any other module is wrapped whole;
    * ``selective``: each AttentionCore inside it is made checkpointed (a reference stage without
      attention has nothing to recompute); a module with neither attention cores nor the reference's
      stage type is refused.
    """
    if stage.recompute == "none":
        return module
    if stage.recompute == "full":
        if isinstance(module, StageModule):
            for i, layer in enumerate(module.layers):
                if not isinstance(layer, Checkpointed):
                    module.layers[i] = Checkpointed(layer)
            return module
        return module if isinstance(module, Checkpointed) else Checkpointed(module)
    found = False
    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, AttentionCore):
                setattr(parent, name, Checkpointed(child))
                found = True
            elif isinstance(child, Checkpointed) and isinstance(child.inner, AttentionCore):
                found = True
    if not found and not isinstance(module, StageModule):
        raise PipelineBuildError(f"stage {stage.index} (rank {stage.rank}) recomputes selectively, which "
                                 "checkpoints the reference transformer's attention cores "
                                 "(pipesmith.torch.reference.AttentionCore), and its module has none: "
                                 "checkpoint its attention yourself, or make the schedule with full recomputation")
    return module


def make_stages(modules: Sequence[nn.Module], plan: Plan, rank: int, device: torch.device,
                group: Optional["dist.ProcessGroup"] = None) -> list["PipelineStage"]:
    """One ``PipelineStage`` per stage of ``rank``, each module set up for its stage's recomputation
    mode (:func:`with_recompute`)."""
    from torch.distributed.pipelining import PipelineStage
    ids = stage_ids_this_rank(plan, rank)
    if len(ids) != len(modules):
        raise PipelineBuildError(f"rank {rank} has {len(ids)} stages in the plan, {len(modules)} modules given")
    return [PipelineStage(with_recompute(m, plan.stages[s]), s, plan.num_stages, device, group=group)
            for m, s in zip(modules, ids)]


def _find_parameter(module: nn.Module, name: str) -> Optional[nn.Parameter]:
    """``module``'s parameter ``name`` (a model-relative name), looking through a :class:`Checkpointed`
    wrapper; None when it has none."""
    while True:
        try:
            return module.get_parameter(name)
        except AttributeError:
            if not isinstance(module, Checkpointed):
                return None
            module = module.inner


class TiedGradients:
    """What :func:`build_schedule`'s runtime does after each step for the plan's tied parameters
    (``plan.tied_parameters``: one tensor of the model held by several stages, such as a tied
    embedding and LM head): every holder ends the step with the sum of all holders' gradients, as
    the unpipelined model's one tensor gets it (Megatron's embedding group does the same).

    * On one rank, the sides are summed locally (one Parameter in two stage modules is summed by
      autograd already; copies, as :func:`split_by_modules` makes, are summed here).
    * Over ranks, the holders all-reduce the sum in a process group of just the holders (made once,
      here, by the holders only).
    * A Parameter that two of this rank's stages share would be divided by M at each stage's
      REDUCE_GRAD; then this rank's runtime runs with ``scale_grads=False`` and :meth:`after_step`
      divides every gradient of its stages by M once (``scales``).

    Refused, with the reason (:class:`PipelineBuildError`): a holder stage whose module lacks the
    parameter, and a sharded (DTensor, FSDP) tied parameter. Stages of the reference transformer are
    left alone: it does not tie weights, nor does its unpipelined run."""

    def __init__(self, stages: Sequence["PipelineStage"], plan: Plan, scale: int) -> None:
        self.groups: list[tuple[list[nn.Parameter], object]] = []  # (this rank's sides, process group or None)
        self.scales = False
        self.scale = scale
        self.params: list[nn.Parameter] = []
        if not stages or not plan.tied_parameters:
            return
        if all(isinstance(_unwrap(st.submod), StageModule) for st in stages):
            return
        group = stages[0].group
        rank = stages[0].group_rank
        by_index = {st.stage_index: st for st in stages}
        for tie in plan.tied_parameters:
            holders = sorted(set(tie.ranks))
            if rank not in holders:
                continue
            sides: dict[int, nn.Parameter] = {}
            for name, s, r in zip(tie.names, tie.stages, tie.ranks):
                if r != rank:
                    continue
                if s not in by_index:
                    raise PipelineBuildError(f"tied parameter {name}: the plan puts it on stage {s} (rank {r}), "
                                             f"which is not among this rank's stages {sorted(by_index)}")
                p = _find_parameter(by_index[s].submod, name)
                if p is None:
                    raise PipelineBuildError(f"stage {s} (rank {r}): the plan ties {' = '.join(tie.names)}, and the "
                                             f"stage's module has no parameter '{name}': its gradient could not be "
                                             "summed with the other side's (build the stage from the model the "
                                             "plan names, e.g. pipesmith.torch.hf.stage_modules)")
                if type(p.data).__name__ == "DTensor" or type(p).__name__ == "DTensor":
                    raise PipelineBuildError(f"stage {s}: tied parameter '{name}' is sharded (FSDP); pipesmith sums "
                                             "whole tied gradients only: leave the tied modules unsharded")
                sides[id(p)] = p
            pg = None
            if len(holders) > 1:
                members = holders if group is None else [dist.get_global_rank(group, r) for r in holders]
                pg = dist.new_group(ranks=members, use_local_synchronization=True)
            self.groups.append((list(sides.values()), pg))
        unique: dict[int, nn.Parameter] = {}
        for st in stages:
            for p in st.submod.parameters():
                if id(p) in unique:
                    self.scales = scale != 1  # two of this rank's stages share it
                unique[id(p)] = p
        self.params = list(unique.values())

    def after_step(self) -> None:
        if self.scales:
            for p in self.params:
                if p.grad is not None:
                    p.grad.div_(self.scale)
        for sides, pg in self.groups:
            total = None
            for p in sides:
                if p.grad is not None:
                    total = p.grad.clone() if total is None else total.add_(p.grad)
            if total is None:
                total = torch.zeros_like(sides[0])
            if pg is not None:
                dist.all_reduce(total, group=pg)
            for p in sides:
                if p.grad is None:
                    p.grad = total.clone()
                else:
                    p.grad.copy_(total)


def _unwrap(module: nn.Module) -> nn.Module:
    return module.inner if isinstance(module, Checkpointed) else module


_RUNTIME = None


def _runtime_class() -> type:
    """``_PipelineScheduleRuntime`` whose ``step`` ends with the plan's tied-gradient sums
    (:class:`TiedGradients`)."""
    global _RUNTIME
    if _RUNTIME is None:
        from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime

        class PipesmithRuntime(_PipelineScheduleRuntime):
            tied_gradients: TiedGradients

            def step(self, *args, **kwargs):
                out = super().step(*args, **kwargs)
                self.tied_gradients.after_step()
                return out

        _RUNTIME = PipesmithRuntime
    return _RUNTIME


def build_schedule(stages: list["PipelineStage"], plan: Plan, fmt: str, loss_fn: Callable,
                   scale_grads: bool = True) -> "_PipelineScheduleRuntime":
    """``_PipelineScheduleRuntime`` over ``stages`` with the plan's CSV of format ``fmt`` loaded; its
    ``step`` also sums the gradients of the plan's tied parameters over their holders
    (:class:`TiedGradients`), so that after ``step`` every parameter holds its unpipelined gradient."""
    require_features()
    ties = TiedGradients(stages, plan, plan.microbatches if scale_grads else 1)
    schedule = _runtime_class()(stages, n_microbatches=plan.microbatches, loss_fn=loss_fn,
                                scale_grads=scale_grads and not ties.scales)
    schedule.tied_gradients = ties
    try:
        schedule._load_csv(plan.csv_path(fmt), format=fmt)
    except (RuntimeError, AssertionError, ValueError, KeyError, IndexError) as e:  # its validation of the rows
        raise PlanError(f"{plan.csv_path(fmt)}: PyTorch's runtime refuses the schedule: {e}") from None
    inferred = getattr(schedule, "stage_index_to_group_rank", None)
    if inferred is not None:
        got = tuple(inferred[s] for s in range(plan.num_stages))
        if got != plan.stage_to_rank:
            raise PlanError(f"{plan.csv_path(fmt)}: PyTorch inferred stage -> rank {list(got)}, the plan "
                            f"says {list(plan.stage_to_rank)}")
    return schedule
