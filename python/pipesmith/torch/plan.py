"""Reading what ``pipesmith export --to pytorch`` writes: ``plan.json`` and the two CSVs.

:func:`load_plan` checks the plan's schema and its internal agreement (P, S, M, stage -> rank, the
per-rank stage lists, contiguous layer ranges) and that each CSV's rows put every stage on the rank
the plan says, which is the mapping PyTorch infers from the rows (``_validate_schedule``).
"""
from __future__ import annotations

import csv
import dataclasses
import json
import os
import re
from typing import Any

SCHEMA = "pipesmith-plan/1"
FORMATS = ("compute_only", "compute_comms")
RECOMPUTE_MODES = ("none", "selective", "full")  # stages[].recompute; absent means "none"
_CELL = re.compile(r"^(\d+)([A-Z_]+?)(\d*)$")
_OVERLAP = re.compile(r"^\((.*)\)\s*OVERLAP_F_B$")


class PlanError(ValueError):
    """A plan or CSV that does not agree with itself; the message names the file and the key."""


@dataclasses.dataclass(frozen=True)
class Stage:
    index: int
    rank: int
    first_layer: int
    last_layer: int
    layer_types: tuple[str, ...]
    modules: tuple[str, ...] | None
    starts_inside_joined_layer: bool
    ends_inside_joined_layer: bool
    vocab_shards: bool
    skip_inputs_cross: bool
    recompute: str = "none"   # "selective": its attention cores recompute; "full": its whole forward

    def whole_module_problems(self) -> list[str]:
        """Why a splitter that keeps whole framework modules cannot build this stage."""
        out = []
        if self.modules is None:
            out.append("the model YAML names no modules for its layers (`module:`, docs/inputs.md)")
        if self.starts_inside_joined_layer:
            out.append("it starts inside a joined layer (a sublayer cut)")
        if self.ends_inside_joined_layer:
            out.append("it ends inside a joined layer (a sublayer cut)")
        if self.vocab_shards:
            out.append("it holds vocabulary shards of a sharded head")
        if self.skip_inputs_cross:
            out.append("a skip input (a model `inputs:` edge) crosses its boundary")
        return out


@dataclasses.dataclass(frozen=True)
class Plan:
    path: str                 # the plan.json
    directory: str
    model: str
    devices: int
    num_stages: int
    microbatches: int
    stage_to_rank: tuple[int, ...]
    rank_to_stages: tuple[tuple[int, ...], ...]
    files: dict[str, str]
    fsdp: bool
    whole_modules: bool | None
    stages: tuple[Stage, ...]
    raw: dict[str, Any]

    @property
    def num_layers(self) -> int:
        return self.stages[-1].last_layer + 1

    def csv_path(self, fmt: str) -> str:
        if fmt not in FORMATS:
            raise PlanError(f"format '{fmt}': one of {', '.join(FORMATS)}")
        return os.path.join(self.directory, self.files[fmt])


def _need(d: dict, key: str, kind, where: str):
    if key not in d:
        raise PlanError(f"{where}: missing key '{key}'")
    v = d[key]
    if kind is int and (isinstance(v, bool) or not isinstance(v, int)):
        raise PlanError(f"{where}: '{key}' must be an integer, got {v!r}")
    if kind is not int and not isinstance(v, kind):
        raise PlanError(f"{where}: '{key}' must be {kind.__name__}, got {type(v).__name__}")
    return v


def load_plan(path: str, check_csvs: bool = True, runtime_rules: bool = True) -> Plan:
    """Reads plan.json (``path`` may be the export directory or the file). With ``check_csvs``, both
    CSVs must put every stage on its plan rank and (with ``runtime_rules``) hold what PyTorch's
    runtime silently gets wrong otherwise (:func:`check_runtime_rules`)."""
    if os.path.isdir(path):
        path = os.path.join(path, "plan.json")
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise PlanError(f"{path}: cannot read: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise PlanError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    if not isinstance(doc, dict):
        raise PlanError(f"{path}: a plan is a JSON object")
    if doc.get("schema") != SCHEMA:
        raise PlanError(f"{path}: 'schema' is {doc.get('schema')!r}, expected '{SCHEMA}' "
                        "(written by `pipesmith export --to pytorch`)")
    P = _need(doc, "devices", int, path)
    S = _need(doc, "num_stages", int, path)
    M = _need(doc, "microbatches", int, path)
    if P < 1 or S < 1 or M < 1:
        raise PlanError(f"{path}: devices, num_stages and microbatches must be >= 1 (got {P}, {S}, {M})")
    s2r = _need(doc, "stage_to_rank", list, path)
    if len(s2r) != S or any(isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < P for r in s2r):
        raise PlanError(f"{path}: 'stage_to_rank' must list {S} ranks in [0, {P})")
    r2s = _need(doc, "rank_to_stages", list, path)
    expect = [[s for s in range(S) if s2r[s] == r] for r in range(P)]
    if r2s != expect:
        raise PlanError(f"{path}: 'rank_to_stages' {r2s} disagrees with 'stage_to_rank' (expected {expect})")
    files = _need(doc, "files", dict, path)
    for fmt in FORMATS:
        if not isinstance(files.get(fmt), str) or os.sep in files[fmt]:
            raise PlanError(f"{path}: 'files.{fmt}' must name a file beside plan.json")
    stages_doc = _need(doc, "stages", list, path)
    if len(stages_doc) != S:
        raise PlanError(f"{path}: 'stages' has {len(stages_doc)} entries, num_stages is {S}")
    stages = []
    next_layer = 0
    for i, st in enumerate(stages_doc):
        where = f"{path}: stages[{i}]"
        if not isinstance(st, dict):
            raise PlanError(f"{where}: not an object")
        if _need(st, "stage", int, where) != i or _need(st, "rank", int, where) != s2r[i]:
            raise PlanError(f"{where}: 'stage'/'rank' are {st.get('stage')}/{st.get('rank')}, "
                            f"expected {i}/{s2r[i]}")
        layers = _need(st, "layers", list, where)
        if len(layers) != 2 or layers[0] != next_layer or layers[1] < layers[0]:
            raise PlanError(f"{where}: 'layers' {layers} must be [first, last] starting at layer {next_layer}")
        next_layer = layers[1] + 1
        types = tuple(_need(st, "layer_types", list, where))
        if len(types) != layers[1] - layers[0] + 1:
            raise PlanError(f"{where}: 'layer_types' has {len(types)} names for {layers[1] - layers[0] + 1} layers")
        modules = st.get("modules")
        recompute = st.get("recompute", "none")
        if recompute not in RECOMPUTE_MODES:
            raise PlanError(f"{where}: 'recompute' must be one of {', '.join(RECOMPUTE_MODES)}, got {recompute!r}")
        stages.append(Stage(index=i, rank=s2r[i], first_layer=layers[0], last_layer=layers[1],
                            layer_types=types, modules=None if modules is None else tuple(modules),
                            starts_inside_joined_layer=bool(st.get("starts_inside_joined_layer")),
                            ends_inside_joined_layer=bool(st.get("ends_inside_joined_layer")),
                            vocab_shards=bool(st.get("vocab_shards")),
                            skip_inputs_cross=bool(st.get("skip_inputs_cross")), recompute=recompute))
    plan = Plan(path=path, directory=os.path.dirname(os.path.abspath(path)), model=str(doc.get("model", "")),
                devices=P, num_stages=S, microbatches=M, stage_to_rank=tuple(s2r),
                rank_to_stages=tuple(tuple(x) for x in r2s), files=dict(files), fsdp=bool(doc.get("fsdp")),
                whole_modules=doc.get("whole_modules"), stages=tuple(stages), raw=doc)
    renumbering = doc.get("microbatch_renumbering")
    if renumbering is not None and (not isinstance(renumbering, list) or sorted(renumbering) != list(range(M))):
        raise PlanError(f"{path}: 'microbatch_renumbering' must be null or a permutation of 0..{M - 1}")
    if check_csvs:
        for fmt in FORMATS:
            check_csv(plan, plan.csv_path(fmt))
            if runtime_rules:
                check_runtime_rules(plan, fmt)
    return plan


def csv_stage_to_rank(path: str) -> tuple[int, dict[int, int]]:
    """Rows and the stage -> rank mapping a PyTorch CSV's rows imply (stage s on the row of its cells)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        raise PlanError(f"{path}: cannot read: {e.strerror}") from None
    mapping: dict[int, int] = {}
    for rank, row in enumerate(rows):
        for col, cell in enumerate(row):
            for stage, _, _ in _actions(cell):
                if mapping.setdefault(stage, rank) != rank:
                    raise PlanError(f"{path}:{rank + 1}:{col + 1}: cell '{cell.strip()}' puts stage {stage} on "
                                    f"rank {rank}, an earlier cell put it on rank {mapping[stage]}")
    return len(rows), mapping


def _actions(cell: str) -> list[tuple[int, str, str]]:
    """(stage, kind, microbatch) of a cell's actions: one, or the sub-actions of an OVERLAP_F_B cell."""
    cell = cell.strip()
    m = _OVERLAP.match(cell)
    parts = m.group(1).split(";") if m else [cell]
    out = []
    for part in parts:
        a = _CELL.match(part.strip())
        if a:
            out.append((int(a.group(1)), a.group(2), a.group(3)))
    return out


def last_stage_forward_order(path: str, last_stage: int) -> list[tuple[int, int, int]]:
    """(microbatch, row, column) of each forward of ``last_stage``, in the order its rank runs them."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    out = []
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            for stage, kind, mb in _actions(cell):
                if stage == last_stage and kind == "F" and mb:
                    out.append((int(mb), r + 1, c + 1))
    return out


def _reduce_grads(path: str) -> dict[int, list[tuple[int, int]]]:
    """Stage -> (row, column) of each of its REDUCE_GRAD cells."""
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    out: dict[int, list[tuple[int, int]]] = {}
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            for stage, kind, _ in _actions(cell):
                if kind == "REDUCE_GRAD":
                    out.setdefault(stage, []).append((r + 1, c + 1))
    return out


def check_runtime_rules(plan: Plan, fmt: str) -> None:
    """What PyTorch's runtime (2.13) gets wrong without an error, refused here:

    * it keeps the last stage's losses in the order that stage runs its forwards and hands the k-th
      to the backward of microbatch k, so a last stage running F(m) out of order trains on the wrong
      losses (``pipesmith export`` renumbers the microbatches so this holds);
    * in a compute_comms CSV, a stage's gradients are divided by the microbatch count only at its
      REDUCE_GRAD: without one they come out M times too large. PyTorch's own lowering writes exactly
      one per stage, and so does ``pipesmith export``.
    """
    path = plan.csv_path(fmt)
    for k, (mb, row, col) in enumerate(last_stage_forward_order(path, plan.num_stages - 1)):
        if mb != k:
            raise PlanError(f"{path}:{row}:{col}: the last stage's forward number {k} is of microbatch {mb}; "
                            f"PyTorch would pair its loss with the backward of microbatch {k} (wrong gradients, "
                            "no error). `pipesmith export --to pytorch` renumbers the microbatches so the last "
                            "stage runs its forwards in order")
    if fmt != "compute_comms":
        return
    reduce = _reduce_grads(path)
    for stage in range(plan.num_stages):
        cells = reduce.get(stage, [])
        if len(cells) != 1:
            where = f"{path}:{cells[1][0]}:{cells[1][1]}" if cells else path
            raise PlanError(f"{where}: stage {stage} has {len(cells)} REDUCE_GRAD cells, PyTorch needs exactly one "
                            f"(it divides the stage's gradients by the {plan.microbatches} microbatches there)")


def check_csv(plan: Plan, path: str) -> None:
    rows, mapping = csv_stage_to_rank(path)
    if rows != plan.devices:
        raise PlanError(f"{path}: {rows} rows, the plan has {plan.devices} ranks ({plan.path})")
    for s in range(plan.num_stages):
        if s not in mapping:
            raise PlanError(f"{path}: no cell of stage {s} (the plan has {plan.num_stages} stages)")
        if mapping[s] != plan.stage_to_rank[s]:
            raise PlanError(f"{path}: stage {s} is on rank {mapping[s]}, the plan puts it on rank "
                            f"{plan.stage_to_rank[s]}")
    extra = sorted(s for s in mapping if s >= plan.num_stages)
    if extra:
        raise PlanError(f"{path}: cells name stage {extra[0]}, the plan has {plan.num_stages} stages")
