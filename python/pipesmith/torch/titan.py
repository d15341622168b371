"""torchtitan 0.3.0's pipeline path on a pipesmith plan: a drop-in for ``ModelSpec.pipelining_fn``.

torchtitan's trainer builds pipeline stages with ``ModelSpec.pipelining_fn`` (for its LLMs
``torchtitan.distributed.pipeline_parallel.pipeline_llm``), which maps ranks to stages with a private
helper that knows only looped and V placements with ``num_stages % pp == 0``: an irregular plan (any
stage on any rank, uneven stage counts) gets the wrong stages, and loading pipesmith's CSV then fails
inside PyTorch's runtime. :func:`pipelining_fn` returns a function with ``pipeline_llm``'s signature
that builds exactly the stages ``plan.json`` gives each rank and is otherwise torchtitan's own path:

* the module names per stage are the plan's (:func:`pipesmith.torch.pipeline.module_fqns_per_model_part`,
  checked against the model first: a missing name is refused with the closest ones the model has);
* each stage's module is cut by torchtitan's ``_split_module`` and wrapped in a ``PipelineStage`` on the
  ``pp`` mesh, with torchtitan's mesh callback, then handed to the model's ``parallelize_fn``;
* the schedule is torchtitan's ``_build_pipeline_schedule`` with ``pipeline_parallel_schedule_csv`` set
  to the plan's ``compute_only.csv`` (the format torchtitan loads): ``_PipelineScheduleRuntime``,
  ``scale_grads=False`` and torchtitan's loss, as with any CSV;
* the plan's tied parameters (``tied_parameters``) get their gradients summed over their holders after
  every ``step`` (:class:`pipesmith.torch.pipeline.TiedGradients`; ``_split_module`` copies the model
  per stage, so each side is its own tensor there).

Use::

    from pipesmith.torch import titan
    model_spec.pipelining_fn = titan.pipelining_fn("out/pt")   # the export directory

The plan's P must be the job's pipeline degree and its microbatch count torchtitan's
``local_batch_size // pipeline_parallel_microbatch_size``; both are checked.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import torch
from torch import nn

from . import pipeline
from .plan import Plan, PlanError, load_plan


def stage_ids_this_rank(plan: Plan, pp_rank: int) -> tuple[int, ...]:
    """The stages ``pp_rank`` builds: the plan's ``rank_to_stages`` (any placement)."""
    return pipeline.stage_ids_this_rank(plan, pp_rank)


def pipelining_fn(plan_dir: str) -> Callable:
    """A ``ModelSpec.pipelining_fn`` (torchtitan 0.3.0's ``pipeline_llm`` signature) that builds the
    stages of the plan in ``plan_dir`` (module docstring)."""
    plan = load_plan(plan_dir)

    def pipeline_from_plan(model: nn.Module, *, parallel_dims, training, parallelism, compile_config, ac_config,
                           dump_folder, device: torch.device, model_config=None, parallelize_fn, loss_fn):
        from torch.distributed.pipelining import PipelineStage
        from torchtitan.distributed import pipeline_parallel as tpp

        pp_mesh = parallel_dims.get_mesh("pp")
        pp_rank, pp = pp_mesh.get_local_rank(), pp_mesh.size()
        if pp != plan.devices:
            raise PlanError(f"{plan.path}: the plan is for {plan.devices} pipeline ranks, the job's pipeline "
                            f"degree is {pp}")
        n_mb = training.local_batch_size // parallelism.pipeline_parallel_microbatch_size
        if n_mb != plan.microbatches:
            raise PlanError(f"{plan.path}: the plan has {plan.microbatches} microbatches, torchtitan makes {n_mb} "
                            f"(local_batch_size {training.local_batch_size} // pipeline_parallel_microbatch_size "
                            f"{parallelism.pipeline_parallel_microbatch_size})")
        fqns = pipeline.module_fqns_per_model_part(plan, model)
        get_mesh = tpp._build_get_mesh_callback(parallel_dims)
        stages, parts = [], []
        for s in stage_ids_this_rank(plan, pp_rank):
            chunk = tpp._split_module(model, fqns[s])
            stages.append(PipelineStage(chunk, s, plan.num_stages, device, group=pp_mesh.get_group("pp"),
                                        get_mesh=get_mesh))
            parts.append(chunk)
        for i, m in enumerate(parts):
            m = parallelize_fn(m, parallel_dims=parallel_dims, training=training, parallelism=parallelism,
                               compile_config=compile_config, ac_config=ac_config, dump_folder=dump_folder)
            parts[i] = m
            stages[i].submod = m
        csv_parallelism = dataclasses.replace(parallelism,
                                              pipeline_parallel_schedule_csv=plan.csv_path("compute_only"))
        schedule = tpp._build_pipeline_schedule(parallelism=csv_parallelism, local_batch_size=training.local_batch_size,
                                                stages=stages, loss_fn=loss_fn)
        inferred = getattr(schedule, "stage_index_to_group_rank", None)
        if inferred is not None and tuple(inferred[s] for s in range(plan.num_stages)) != plan.stage_to_rank:
            raise PlanError(f"{plan.csv_path('compute_only')}: PyTorch inferred stage -> rank "
                            f"{[inferred[s] for s in range(plan.num_stages)]}, the plan says "
                            f"{list(plan.stage_to_rank)}")
        ties = pipeline.TiedGradients(stages, plan, 1)  # torchtitan's runtime runs with scale_grads=False
        if ties.groups:
            schedule.__class__ = pipeline._runtime_class()
            schedule.tied_gradients = ties
        has_first = any(st.is_first for st in stages)
        has_last = any(st.is_last for st in stages)
        return schedule, parts, has_first, has_last

    return pipeline_from_plan
