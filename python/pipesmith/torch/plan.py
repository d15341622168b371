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
_CELL = re.compile(r"^(\d+)([A-Z_]+?)(\d*)$")


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


def load_plan(path: str, check_csvs: bool = True) -> Plan:
    """Reads plan.json (``path`` may be the export directory or the file)."""
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
        stages.append(Stage(index=i, rank=s2r[i], first_layer=layers[0], last_layer=layers[1],
                            layer_types=types, modules=None if modules is None else tuple(modules),
                            starts_inside_joined_layer=bool(st.get("starts_inside_joined_layer")),
                            ends_inside_joined_layer=bool(st.get("ends_inside_joined_layer")),
                            vocab_shards=bool(st.get("vocab_shards")),
                            skip_inputs_cross=bool(st.get("skip_inputs_cross"))))
    plan = Plan(path=path, directory=os.path.dirname(os.path.abspath(path)), model=str(doc.get("model", "")),
                devices=P, num_stages=S, microbatches=M, stage_to_rank=tuple(s2r),
                rank_to_stages=tuple(tuple(x) for x in r2s), files=dict(files), fsdp=bool(doc.get("fsdp")),
                whole_modules=doc.get("whole_modules"), stages=tuple(stages), raw=doc)
    if check_csvs:
        for fmt in FORMATS:
            check_csv(plan, plan.csv_path(fmt))
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
            cell = cell.strip()
            if not cell:
                continue
            m = _CELL.match(cell)
            if not m:
                continue  # OVERLAP_F_B and other composite cells: their stages appear in plain cells too
            stage = int(m.group(1))
            if mapping.setdefault(stage, rank) != rank:
                raise PlanError(f"{path}:{rank + 1}:{col + 1}: cell '{cell}' puts stage {stage} on rank "
                                f"{rank}, an earlier cell put it on rank {mapping[stage]}")
    return len(rows), mapping


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
