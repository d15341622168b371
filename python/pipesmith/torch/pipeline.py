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
from typing import Callable, NoReturn, Sequence

import torch
import torch.distributed as dist
from torch import nn

from .plan import Plan, PlanError, Stage
from .reference import AttentionCore, StageModule


TOP_LEVEL = ("tok_embeddings", "norm", "lm_head", "output")  # torchtitan's non-layer modules


class PipelineBuildError(ValueError):
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


def reference_stage_modules(model, plan: Plan, rank: int) -> list[nn.Module]:
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


def module_fqns_per_model_part(plan: Plan) -> list[list[str]]:
    """torchtitan's ``module_fqns_per_model_part``: one list of module names per stage, in stage order
    (every stage must be buildable from whole modules)."""
    out = []
    for st in plan.stages:
        problems = st.whole_module_problems()
        if problems:
            raise PipelineBuildError(f"stage {st.index} (rank {st.rank}): {'; '.join(problems)}")
        out.append(list(st.modules or ()))
    return out


def stage_ids_this_rank(plan: Plan, rank: int) -> tuple[int, ...]:
    """The stage indices ``rank`` builds, for any placement (torchtitan's own helper knows only looped
    and V placements with ``num_stages % pp == 0``)."""
    if not 0 <= rank < plan.devices:
        raise PlanError(f"rank {rank}: the plan has ranks 0..{plan.devices - 1}")
    return plan.rank_to_stages[rank]


class Checkpointed(nn.Module):
    """``inner``'s forward under ``torch.utils.checkpoint`` (non-reentrant): its activations are
    dropped after the forward and recomputed when the backward first needs them."""

    def __init__(self, inner: nn.Module):
        super().__init__()
        self.inner = inner

    def forward(self, *args):
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
                group=None) -> list:
    """One ``PipelineStage`` per stage of ``rank``, each module set up for its stage's recomputation
    mode (:func:`with_recompute`)."""
    from torch.distributed.pipelining import PipelineStage
    ids = stage_ids_this_rank(plan, rank)
    if len(ids) != len(modules):
        raise PipelineBuildError(f"rank {rank} has {len(ids)} stages in the plan, {len(modules)} modules given")
    return [PipelineStage(with_recompute(m, plan.stages[s]), s, plan.num_stages, device, group=group)
            for m, s in zip(modules, ids)]


def build_schedule(stages: list, plan: Plan, fmt: str, loss_fn: Callable, scale_grads: bool = True):
    """``_PipelineScheduleRuntime`` over ``stages`` with the plan's CSV of format ``fmt`` loaded."""
    require_features()
    from torch.distributed.pipelining.schedules import _PipelineScheduleRuntime
    schedule = _PipelineScheduleRuntime(stages, n_microbatches=plan.microbatches, loss_fn=loss_fn,
                                        scale_grads=scale_grads)
    schedule._load_csv(plan.csv_path(fmt), format=fmt)
    inferred = getattr(schedule, "stage_index_to_group_rank", None)
    if inferred is not None:
        got = tuple(inferred[s] for s in range(plan.num_stages))
        if got != plan.stage_to_rank:
            raise PlanError(f"{plan.csv_path(fmt)}: PyTorch inferred stage -> rank {list(got)}, the plan "
                            f"says {list(plan.stage_to_rank)}")
    return schedule
