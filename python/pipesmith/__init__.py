"""pipesmith: synthesize, certify and run pipeline-parallel training schedules.

The functions here are the ``pipesmith`` command's subcommands as Python calls, on the same C++
library (``pipesmith._core``): the same inputs and options give the same results, and a schedule
written from Python is byte-identical to the command's::

    import pipesmith

    spec = pipesmith.load_spec("configs/models/llama2-7b.yaml",
                               cluster="configs/clusters/8xh100-80gb.yaml", devices=4, microbatches=8)
    result = pipesmith.synthesize(spec, evaluations=40, progress=print)
    result.schedule.write("schedule.yaml")             # as `pipesmith synth ... -o schedule.yaml`
    report = pipesmith.verify("schedule.yaml")          # as `pipesmith verify schedule.yaml`
    assert report.valid, report.text()
    pipesmith.export_pytorch(result.schedule, spec=spec).write("plan/")   # as `pipesmith export`

Errors raise :class:`pipesmith.Error` (``pipesmith.errors``) with the file, line and column they
point at. :mod:`pipesmith.torch` runs exported plans in ``torch.distributed.pipelining``.
"""

from __future__ import annotations

import importlib
import json
import math
import numbers
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Union

from pipesmith._tables import LIMITS as _LIMITS
from pipesmith._tables import OPTIONS as _OPTIONS
from pipesmith.errors import (BadInputError, Error, InfeasibleError, InterruptedError, InvalidScheduleError,
                              RuntimeFailure)

if TYPE_CHECKING:
    from pipesmith._core import PytorchExport, Report, RunResult, Schedule, Spec, Violation

__version__ = "0.1.0"

PathLike = Union[str, "os.PathLike[str]"]


class _Core:
    """pipesmith._core, imported on first use: :mod:`pipesmith.torch` runs from a source tree (the
    ``PYTHONPATH=python`` the command's ``profile --backend torch`` sets) without the extension."""

    _module = None

    def __getattr__(self, name: str) -> Any:
        if _Core._module is None:
            try:
                _Core._module = importlib.import_module("pipesmith._core")
            except ImportError as e:
                raise ImportError(
                    "pipesmith's C++ core (pipesmith._core) is not built into this copy of the package "
                    f"({os.path.dirname(__file__)}): `pip install .` at the repository root installs it, or "
                    "put a CMake build's BUILD/python on PYTHONPATH") from e
        return getattr(_Core._module, name)


_core = _Core()


def __getattr__(name: str) -> Any:  # Spec, Schedule, Report, RunResult, Violation, PytorchExport, z3_version
    if name in ("Spec", "Schedule", "Report", "RunResult", "Violation", "PytorchExport", "z3_version"):
        return getattr(_core, name)
    raise AttributeError(f"module 'pipesmith' has no attribute '{name}'")


# The core's bounds on its numbers (ir/limits.h through pipesmith._tables, generated from the extension;
# docs/inputs.md "Limits"). A longer time limit is no practical limit and is read as _MAX_TIME_LIMIT_S,
# as `synth` does.
# (1, S): stages per device V where one is given; 0 in baseline and bound: the schedule's default.
_STAGES_PER_DEVICE = _OPTIONS["synth.stages_per_device"]
_MAX_TIME_LIMIT_S = float(_LIMITS["time_limit_s"])
# The calls' integer options, "call.name": (lo, hi) (ir/limits.h's limits::option, the command's flags' ranges;
# "spec.*": load_spec's overrides, "mesh.*": a mesh's degrees and batch), read where each keyword is checked.
_MAX_EVALUATIONS = _OPTIONS["synth.evaluations"][1]    # 0: bounded by the clock
_MAX_SEARCH_THREADS = _OPTIONS["synth.search_threads"][1]  # 0: the machine's hardware threads


def _int(value: Any, name: str, lo: int, hi: int) -> int:
    """``value`` as an integer in [lo, hi], else BadInputError naming ``name`` (a float, a bool, or a
    number past the range never reaches the core, where it would be a TypeError or wrap around)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise BadInputError(f"{name} must be an integer in [{lo:,}, {hi:,}], got {value!r:.60}")
    v = int(value)
    if not lo <= v <= hi:
        got = f"{v:,}" if abs(v) < 10**30 else f"an integer of {v.bit_length()} bits"
        raise BadInputError(f"{name} must be an integer in [{lo:,}, {hi:,}], got {got}")
    return v


def _opt_int(value: Any, name: str, lo: int, hi: int) -> Optional[int]:
    return None if value is None else _int(value, name, lo, hi)


def _number(value: Any, name: str, lo: float, hi: float, *, open_low: bool = False) -> float:
    """``value`` as a finite float in [lo, hi] (``(lo, hi]`` with ``open_low``), else BadInputError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise BadInputError(f"{name} must be a number, got {value!r:.60}")
    try:
        v = float(value)
    except OverflowError:
        v = math.inf if value > 0 else -math.inf
    low_ok = v > lo if open_low else v >= lo
    if not (math.isfinite(v) and low_ok and v <= hi):
        raise BadInputError(f"{name} must be a finite number in {'(' if open_low else '['}{lo:g}, {hi:g}], got {v!r}")
    return v


def _time_limit(value: Any) -> float:
    """``synth --time-limit``: seconds > 0; beyond 1e6 (``inf`` too) no practical limit, read as 1e6."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and value > 0:  # NaN is not > 0
        return float(min(value, _MAX_TIME_LIMIT_S))  # compared before converting: 10**400 is past a float
    raise BadInputError(f"time_limit_s must be a number of seconds > 0 ('inf' for no limit), got {value!r:.60}")


def _opt_memory(value: Any) -> Optional[float]:
    """A memory limit as the core takes it (a float); its range is checked once, in the core
    (ir/units.h, check_memory_limit_gb), with the command's words."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise BadInputError(f"memory_limit_gb must be a number of GB, got {value!r:.60}")
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _text(value: Any, name: str) -> str:
    """A text argument (an option word, a partition string): a str without NUL characters."""
    if not isinstance(value, str):
        raise BadInputError(f"{name} must be a string, got {type(value).__name__}")
    if "\0" in value:
        raise BadInputError(f"{name} {value!r:.80} holds a NUL character")
    return value


def _path(p: Optional[PathLike], name: str = "path") -> Optional[str]:
    """A path argument as the core takes it; one holding a NUL character is refused (the C library
    would cut it there and open another file)."""
    if p is None:
        return None
    try:
        s = os.fspath(p)
    except TypeError:
        raise BadInputError(f"{name} must be a path (str or os.PathLike), got {type(p).__name__}") from None
    if isinstance(s, bytes):
        s = os.fsdecode(s)
    if "\0" in s:
        raise BadInputError(f"{name} {s!r:.120} holds a NUL character: no file has that name")
    return s


def load_spec(model: PathLike, cluster: Optional[PathLike] = None, *, devices: Optional[int] = None,
              microbatches: Optional[int] = None, memory_limit_gb: Optional[float] = None,
              gpus: Optional[int] = None, tensor_parallel: Optional[int] = None,
              context_parallel: Optional[int] = None, expert_parallel: Optional[int] = None,
              expert_tensor_parallel: Optional[int] = None, data_parallel: Optional[int] = None,
              optimizer: Optional[str] = None, micro_batch: Optional[int] = None,
              global_batch: Optional[int] = None, sequence_parallel: Optional[bool] = None,
              cp_comm_type: Optional[str] = None) -> Spec:
    """Reads a model YAML (which may hold ``cluster:``, ``pipeline:`` and ``parallel:`` blocks) and an
    optional cluster YAML, applies the overrides and validates everything (``pipesmith synth MODEL
    --cluster C --devices P --microbatches M --memory-limit-gb X``). ``memory_limit_gb=0`` means
    unlimited. The mesh's keyword arguments override the ``parallel:`` fields and ``cluster.gpus`` as
    the flags ``--gpus``, ``--tensor-parallel``, ... do (docs/mesh.md).

    Raises BadInputError with the file, line and column of the offending field."""
    parallel = _core.ParallelInput()
    parallel.gpus = _opt_int(gpus, "gpus", *_OPTIONS["mesh.gpus"])
    parallel.tensor = _opt_int(tensor_parallel, "tensor_parallel", *_OPTIONS["mesh.tensor"])
    parallel.context = _opt_int(context_parallel, "context_parallel", *_OPTIONS["mesh.context"])
    parallel.expert = _opt_int(expert_parallel, "expert_parallel", *_OPTIONS["mesh.expert"])
    parallel.expert_tensor = _opt_int(expert_tensor_parallel, "expert_tensor_parallel",
                                           *_OPTIONS["mesh.expert_tensor"])
    parallel.data = _opt_int(data_parallel, "data_parallel", *_OPTIONS["mesh.data"])
    parallel.micro_batch = _opt_int(micro_batch, "micro_batch", *_OPTIONS["mesh.micro_batch"])
    parallel.global_batch = _opt_int(global_batch, "global_batch", *_OPTIONS["mesh.global_batch"])
    if optimizer is not None and not isinstance(optimizer, str):
        raise BadInputError(f"optimizer must be 'replicated', 'distributed' or 'fsdp', got {optimizer!r:.60}")
    parallel.optimizer = optimizer
    if sequence_parallel is not None and not isinstance(sequence_parallel, bool):
        raise BadInputError(f"sequence_parallel must be True or False, got {sequence_parallel!r:.60}")
    parallel.sequence_parallel = sequence_parallel
    if cp_comm_type is not None and not isinstance(cp_comm_type, str):
        raise BadInputError(f"cp_comm_type must be 'p2p' or 'all_gather', got {cp_comm_type!r:.60}")
    parallel.cp_comm_type = cp_comm_type
    return _core.load_spec(_path(model, "model"), _path(cluster, "cluster"),
                           _opt_int(devices, "devices", *_OPTIONS["spec.devices"]),
                           _opt_int(microbatches, "microbatches", *_OPTIONS["spec.microbatches"]),
                           _opt_memory(memory_limit_gb),
                           parallel)


def _mesh_dims(dims: dict, what: str) -> tuple:
    """A dict of mesh dimensions (the keys of ``plan --fix``) as the core's ParallelInput and pipeline."""
    if not isinstance(dims, dict):
        raise BadInputError(f"{what} must be a dict of mesh dimensions, got {dims!r:.60}")
    mesh = _core.ParallelInput()
    pipeline = None
    ints = ("tensor", "context", "expert", "expert_tensor", "data", "micro_batch")
    for key, value in dims.items():
        if key == "pipeline":
            pipeline = _int(value, f"{what}['pipeline']", *_OPTIONS["plan.devices"])
        elif key in ints:
            setattr(mesh, key, _int(value, f"{what}[{key!r}]", *_OPTIONS[f"mesh.{key}"]))
        elif key == "optimizer":
            if not isinstance(value, str):
                raise BadInputError(f"{what}['optimizer'] must be 'replicated', 'distributed' or 'fsdp', got {value!r:.60}")
            mesh.optimizer = value
        elif key == "sequence_parallel":
            if not isinstance(value, bool):
                raise BadInputError(f"{what}['sequence_parallel'] must be True or False, got {value!r:.60}")
            mesh.sequence_parallel = value
        elif key == "cp_comm_type":
            if value not in ("p2p", "all_gather"):
                raise BadInputError(f"{what}['cp_comm_type'] must be 'p2p' or 'all_gather', got {value!r:.60}")
            mesh.cp_comm_type = value
        else:
            raise BadInputError(f"{what}: unknown dimension {key!r:.60} (expected pipeline, tensor, context, expert, "
                                "expert_tensor, data, micro_batch, optimizer, sequence_parallel, cp_comm_type)")
    return mesh, pipeline


def plan(model: PathLike, cluster: Optional[PathLike] = None, *, gpus: int, global_batch: int,
         fix: Optional[dict] = None, candidates: Optional[list] = None, memory_limit_gb: Optional[float] = None,
         top: int = 4, evaluations: int = 20, progress: Optional[Callable[[dict], None]] = None) -> tuple:
    """Chooses the mesh with the schedule (``pipesmith plan``, docs/mesh.md): the meshes of ``gpus``
    GPUs the model can run on, the ``top`` most promising synthesized with ``evaluations`` candidates
    each (deterministic). ``fix`` pins dimensions as ``--fix`` does: ``{"tensor": 8, "optimizer":
    "fsdp", "pipeline": 16}``. ``candidates`` are meshes always synthesized and ranked with the rest,
    as ``--candidate`` gives them: ``[{"pipeline": 4, "expert": 8}]`` (``pipeline`` required; unset
    dimensions 1, the optimizer distributed). ``progress``, when given, is called before and after
    each synthesis with a dict (``index``, ``planned``, ``done``, ``mesh``, ``optimizer``,
    ``candidate``, ``synthesized``, ``iteration_ms``, ``best_ms``, ``best_mesh``,
    ``pruned_by_bound``), as ``plan`` prints its progress lines; an exception it raises stops no
    synthesis (the plan goes on) and is raised when the plan returns. Returns ``(rows, best)``: the
    ranked rows as dicts (the keys of ``plan --json``) and the fastest mesh's certified Schedule.

    Raises BadInputError on bad arguments (a candidate the model cannot run included),
    InfeasibleError when no mesh gets a schedule."""
    if progress is not None and not callable(progress):
        raise BadInputError(f"progress must be callable, got {type(progress).__name__}")
    pinned, pipeline = _mesh_dims(fix or {}, "fix")
    given = []
    if candidates is not None and not isinstance(candidates, (list, tuple)):
        raise BadInputError(f"candidates must be a list of dicts, got {candidates!r:.60}")
    for i, c in enumerate(candidates or []):
        mesh, p = _mesh_dims(c, f"candidates[{i}]")
        if p is None:
            raise BadInputError(f"candidates[{i}]: the pipeline's devices are not given ('pipeline')")
        given.append((p, mesh))
    rows, best = _core.plan(_path(model, "model"), _path(cluster, "cluster"),
                            _int(gpus, "gpus", *_OPTIONS["mesh.gpus"]),
                            _int(global_batch, "global_batch", *_OPTIONS["mesh.global_batch"]), pinned, pipeline,
                            _opt_memory(memory_limit_gb), _int(top, "top", *_OPTIONS["plan.top"]),
                            _int(evaluations, "evaluations", *_OPTIONS["plan.evaluations"]), given, progress)
    return list(rows), best


def parse_spec(text: str, name: str = "<string>") -> Spec:
    """Like :func:`load_spec`, from YAML text (``name`` is used in error locations)."""
    return _core.parse_spec(_text(text, "text"), _text(name, "name"))


def read_schedule(path: PathLike, *, model: Optional[PathLike] = None, cluster: Optional[PathLike] = None,
                  microbatches: Optional[int] = None, stages: Optional[int] = None) -> Schedule:
    """Reads a pipesmith-schedule/1 YAML or a PyTorch pipelining CSV. A CSV's stages are costed with
    ``model`` (and ``cluster``) when given, else with unit costs; ``microbatches`` / ``stages``, when
    given, are checked against the file."""
    schedule, _notes = _core.read_schedule(_path(path, "path"), _path(model, "model"), _path(cluster, "cluster"),
                                           _opt_int(microbatches, "microbatches", *_OPTIONS["verify.microbatches"]),
                                           _opt_int(stages, "stages", *_OPTIONS["verify.stages"]))
    return schedule


def parse_schedule(text: str, name: str = "<string>") -> Schedule:
    """A pipesmith-schedule/1 YAML from text."""
    return _core.parse_schedule(_text(text, "text"), _text(name, "name"))


def verify(schedule: Union[Schedule, PathLike], *, semantics: str = "rendezvous",
           memory_limit_gb: Optional[float] = None, model: Optional[PathLike] = None,
           cluster: Optional[PathLike] = None) -> Report:
    """The independent checker (``pipesmith verify``): completeness, dependencies, comms,
    deadlock-freedom under ``semantics`` (rendezvous, grouped, buffered, posted), memory and the
    certificate; then the timing simulation. Returns the :class:`Report` with every violation (an
    invalid schedule is no exception: ``report.valid`` is False). ``schedule`` may be a path, read
    as :func:`read_schedule` reads it (its reader notes lead the report's notes)."""
    semantics = _text(semantics, "semantics")
    memory = _opt_memory(memory_limit_gb)
    if isinstance(schedule, _core.Schedule):
        return _core.verify(schedule, semantics, memory)
    loaded, notes = _core.read_schedule(_path(schedule, "schedule"), _path(model, "model"), _path(cluster, "cluster"),
                                        None, None)
    return _core.verify(loaded, semantics, memory, notes)


def simulate(schedule: Union[Schedule, PathLike], *, semantics: str = "rendezvous",
             memory_limit_gb: Optional[float] = None) -> Report:
    """The timing of a schedule (``pipesmith simulate``): the checker's report, whose ``makespan_ms``,
    ``bubble_ratio``, ``busy_ms``, ``peak_memory_gb`` and ``op_times`` hold the simulation. Raises
    InvalidScheduleError (with the report's text) when the schedule cannot be simulated."""
    report = verify(schedule, semantics=semantics, memory_limit_gb=memory_limit_gb)
    if not report.simulated:
        raise InvalidScheduleError(report.text(), code="invalid_schedule", exit_code=3,
                                   message="the schedule cannot be simulated")
    return report


@dataclass
class BaselineResult:
    """A published schedule on the user's model, checked and certified (``pipesmith baseline``)."""
    schedule: Schedule
    report: Report
    partition: list = field(default_factory=list)   # per stage, its (first, last) layer
    placement: list = field(default_factory=list)   # stage → device
    partition_desc: str = ""
    notes: list = field(default_factory=list)
    global_bound_ms: Optional[float] = None


def baseline_kinds() -> list:
    """The baselines :func:`baseline` generates: gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-h2, zbv, dualpipev."""
    return _core.baseline_kinds()


def baseline(spec: Spec, kind: str, *, stages_per_device: int = 0, partition: str = "balanced",
             recompute: str = "none") -> BaselineResult:
    """Generates a published schedule (``pipesmith baseline --schedule KIND``) on the spec, over the
    ``partition`` (balanced, balanced-memory, even or a Megatron layout string) and the schedule's own
    placement, and certifies it. ``stages_per_device=0`` takes the schedule's default. ``recompute``
    (none, selective, full) recomputes every stage's activations, R just before each backward
    (``--recompute``)."""
    schedule, report, info = _core.baseline(spec, _text(kind, "kind"),
                                            _int(stages_per_device, "stages_per_device", 0, _STAGES_PER_DEVICE[1]),
                                            _text(partition, "partition"), _text(recompute, "recompute"))
    return BaselineResult(schedule, report, **info)


def bound(spec: Spec, *, partition: Optional[str] = None, placement: Optional[str] = None,
          stages_per_device: int = 0) -> dict:
    """The lower bound on the iteration time over all partitions, placements and orders
    (``pipesmith bound --json``, the same keys), and under ``"plan"`` the checker's bound for one plan
    when ``partition``, ``placement`` or ``stages_per_device`` name it. A model whose states do not
    fit is no exception here: ``memory_feasible`` is False and ``memory_reason`` says why."""
    return json.loads(_core.bound(spec, None if partition is None else _text(partition, "partition"),
                                  None if placement is None else _text(placement, "placement"),
                                  _int(stages_per_device, "stages_per_device", 0, _STAGES_PER_DEVICE[1])))


@dataclass
class SynthesisResult:
    """What :func:`synthesize` returns: the certified schedule, its report and the run's figures."""
    schedule: Schedule
    report: Report
    makespan_ms: float = 0.0
    bound_ms: float = 0.0
    gap: float = 0.0
    optimal: bool = False
    solver_status: str = ""
    heuristic_ms: float = 0.0
    heuristic_policy: str = ""
    best_baseline: Optional[str] = None
    best_baseline_ms: Optional[float] = None
    plan: str = ""
    placement: list = field(default_factory=list)
    interrupted: bool = False          # Ctrl-C or the progress callback stopped the search
    z3_ran: bool = True
    global_bound_ms: Optional[float] = None
    stop_reason: str = ""              # converged, reached the lower bound, time limit, evaluation budget, interrupted, fixed
    evaluated: int = 0
    search_s: float = 0.0
    solve_s: float = 0.0
    recompute: list = field(default_factory=list)  # per stage: none, selective, full
    backward: list = field(default_factory=list)   # per stage: split (I and W) or fused (B)
    smt2_windows: int = 0
    smt2_written: bool = False


def synthesize(spec: Spec, *, partition: Optional[str] = None, placement: Optional[str] = None,
               stages_per_device: Optional[int] = None, cuts: str = "sublayers", time_limit_s: float = 10.0,
               evaluations: int = 0, rlimit: int = 0, seed: int = 0, z3_threads: int = 2, search_threads: int = 0,
               dump_smt2: Optional[PathLike] = None, recompute: str = "search",
               progress: Optional[Callable[[dict], Any]] = None) -> SynthesisResult:
    """Synthesizes a certified schedule (``pipesmith synth``): searches what ``partition`` /
    ``placement`` / ``stages_per_device`` leave open, refines the order with Z3, checks the result.

    ``evaluations > 0`` bounds the search by candidates instead of the clock: the same spec, options
    and seed give a byte-identical schedule on any machine (``time_limit_s`` then sizes Z3's share).
    ``progress`` is called with a dict (phase, evaluated, feasible, best_ms, lower_bound_ms, gap,
    elapsed_s, best) as the search goes; returning True stops it. Ctrl-C stops it too: the best
    schedule so far is checked and returned with ``interrupted=True`` (a KeyboardInterrupt is raised
    only when nothing fitted yet). The GIL is released while it runs.

    ``dump_smt2`` writes Z3's encoding as ``pipesmith synth --dump-smt2`` does (the whole plan's at that
    path, or each window's beside it: PATH.w1.smt2, ...; ``smt2_written`` / ``smt2_windows`` say which).

    ``recompute`` (``--recompute``): ``search`` lets the search give stages selective or full
    activation recomputation where memory binds, kept only where the plan gets shorter; ``none``,
    ``selective`` or ``full`` fix it for every stage. The result's ``recompute`` lists each stage's mode.
    Where a stage's fused backward is cheaper than its I + W (a measured ``backward_ms``, the cluster's
    ``op_overhead_ms``), the search also chooses whether it runs B; the result's ``backward`` lists
    each stage's (``split`` or ``fused``).

    Raises InfeasibleError when no plan fits the memory, BadInputError on bad options."""
    if progress is not None and not callable(progress):
        raise BadInputError(f"progress must be callable, got {type(progress).__name__}")
    time_limit = _time_limit(time_limit_s)
    schedule, report, info = _core.synthesize(
        spec, None if partition is None else _text(partition, "partition"),
        None if placement is None else _text(placement, "placement"),
        _opt_int(stages_per_device, "stages_per_device", *_STAGES_PER_DEVICE), _text(cuts, "cuts"), time_limit,
        _int(evaluations, "evaluations", 0, _MAX_EVALUATIONS), _int(rlimit, "rlimit", *_OPTIONS["synth.rlimit"]),
        _int(seed, "seed", *_OPTIONS["synth.seed"]), _int(z3_threads, "z3_threads", *_OPTIONS["synth.z3_threads"]),
        _int(search_threads, "search_threads", 0, _MAX_SEARCH_THREADS), _path(dump_smt2, "dump_smt2") or "",
        _text(recompute, "recompute"), progress)
    return SynthesisResult(schedule, report, **info)


def export_pytorch(schedule: Union[Schedule, PathLike], *, spec: Optional[Spec] = None, fsdp: bool = False,
                   model: Optional[PathLike] = None, cluster: Optional[PathLike] = None) -> PytorchExport:
    """A checked schedule as the files ``torch.distributed.pipelining`` runs (``pipesmith export --to
    pytorch``): ``compute_only_csv``, ``compute_comms_csv`` and ``plan_json``; ``.write(dir)`` writes
    them as one set. ``schedule`` may be a path (a CSV then needs ``model``). Raises
    InvalidScheduleError (the report's text) for a schedule the checker rejects."""
    model_file = ""
    if not isinstance(schedule, _core.Schedule):
        schedule, loaded_spec, _notes = _core.load_export_input(_path(schedule, "schedule"), _path(model, "model"),
                                                                _path(cluster, "cluster"))
        spec = spec if spec is not None else loaded_spec
        model_file = _path(model, "model") or ""
    ex = _core.export_pytorch(schedule, spec, bool(fsdp), model_file)
    if not ex.valid:
        raise InvalidScheduleError(ex.report.text(), code="invalid_schedule", exit_code=3,
                                   message="the schedule is not valid: nothing exported")
    return ex


def run(schedule: Union[Schedule, PathLike], *, model: Optional[Union[Spec, PathLike]] = None,
        cluster: Optional[PathLike] = None, microbatches: Optional[int] = None, backend: str = "host",
        check_gradients: bool = True, semantics: str = "rendezvous", verify: bool = True,
        memory_limit_gb: Optional[float] = None, timeout_s: float = 30.0, scale: float = 1.0, tokens: int = 32,
        seed: int = 1, widths: str = "cost",
        progress: Optional[Callable[[int, int], None]] = None) -> "RunResult":
    """Replays a schedule with real math, as ``pipesmith run`` does (the same library call): the
    checker's verdict first (InvalidScheduleError with its report when it rejects the schedule, unless
    ``verify=False``), comms inserted into a compute-only schedule, the executable model (widths from
    the layer costs, ``scale``-d, ``tokens`` per microbatch), the replay on ``backend`` ("host": a CPU
    thread per device; "mpi": one process per rank under mpirun) under a watchdog of ``timeout_s``
    seconds without progress, and — with ``check_gradients`` (the default) — every gradient compared
    with an unpipelined sequential run of the same model (RuntimeFailure, with the summary, when one
    differs by more than 1e-5 relative). ``schedule`` is a path (a PyTorch CSV takes ``model`` and
    ``cluster`` for its costs) or a :class:`Schedule`, with ``model`` then a :class:`Spec`.
    ``progress(ops_done, ops_total)`` is called every 2 s of a long replay. Returns a :class:`RunResult`:
    ``iteration_ms``, ``simulated_ms``, ``gradients_ok``, ``max_rel_diff``, ``loss``, ``notes``, and the
    command's outputs as ``text()``, ``json()`` and ``chrome_trace()``."""
    common = dict(backend=_text(backend, "backend"), semantics=_text(semantics, "semantics"), verify=bool(verify),
                  memory_limit_gb=_opt_memory(memory_limit_gb), check_gradients=bool(check_gradients),
                  timeout_s=_number(timeout_s, "timeout_s", 0, 1e6, open_low=True),
                  scale=_number(scale, "scale", 0, 1e6, open_low=True),
                  tokens=_int(tokens, "tokens", *_OPTIONS["run.tokens"]),
                  seed=_int(seed, "seed", 0, 2**64 - 1), widths=_text(widths, "widths"), progress=progress)
    if isinstance(schedule, _core.Schedule):
        if model is not None and not isinstance(model, _core.Spec):
            model = load_spec(model, cluster, devices=schedule.num_devices, microbatches=schedule.microbatches)
        return _core.run_schedule(schedule, model, **common)
    if isinstance(model, _core.Spec):
        raise BadInputError("with a schedule file, model is the model file's path (a Spec goes with a Schedule)")
    return _core.run_file(_path(schedule, "schedule"), _path(model, "model"), _path(cluster, "cluster"),
                          _opt_int(microbatches, "microbatches", *_OPTIONS["spec.microbatches"]), **common)


__all__ = [
    "BadInputError", "BaselineResult", "Error", "InfeasibleError", "InterruptedError", "InvalidScheduleError",
    "PytorchExport", "Report", "RunResult", "RuntimeFailure", "Schedule", "Spec", "SynthesisResult", "Violation", "baseline",
    "baseline_kinds", "bound", "plan", "export_pytorch", "load_spec", "parse_schedule", "parse_spec", "read_schedule",
    "run", "simulate", "synthesize", "verify", "z3_version",
]
