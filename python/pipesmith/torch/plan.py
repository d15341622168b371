"""Reading what ``pipesmith export --to pytorch`` writes: ``plan.json`` and the two CSVs.

:func:`load_plan` checks the plan's schema and its internal agreement (P, S, M, stage -> rank, the
per-rank stage lists, contiguous layer ranges) and that each CSV's rows put every stage on the rank
the plan says, which is the mapping PyTorch infers from the rows (``_validate_schedule``).

Both files are read as the command reads its inputs (docs/inputs.md, "Limits"): at most 128 MiB,
UTF-8, counted while read. plan.json is strict JSON (``NaN``, ``Infinity`` and numbers that overflow
are refused), at most 1,000,000 values nested at most 64 deep; P, S and M within the command's limits
before anything is allocated for them; every key of the type its reader needs. A CSV has at most
100,000 rows and 933,333 actions; every cell is an empty cell or an :class:`Action` in PyTorch's
grammar, its stage and microbatch within the plan's. Every refusal is a :class:`PlanError` whose
message starts with ``FILE``, ``FILE:LINE:COL`` (JSON) or ``FILE:ROW:CELL`` (CSV).
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import re
from typing import Any, Iterator, Optional

from .._tables import LIMITS
from ..errors import BadInputError

SCHEMA = "pipesmith-plan/1"
FORMATS = ("compute_only", "compute_comms")
RECOMPUTE_MODES = ("none", "selective", "full")  # stages[].recompute; absent means "none"

# The command's limits (ir/limits.h through pipesmith._tables; docs/inputs.md "Limits").
MAX_DEVICES = LIMITS["devices"]
MAX_MICROBATCHES = LIMITS["microbatches"]
MAX_STAGES = LIMITS["stages"]
MAX_LAYERS = LIMITS["layers"]
MAX_PLAN_OPS = LIMITS["plan_ops"]                  # 3 * S * M
MAX_SCHEDULE_ACTIONS = LIMITS["schedule_actions"]  # actions a CSV may list (7/3 of the plan's ops)
MAX_CSV_ROWS = MAX_DEVICES
MAX_INPUT_BYTES = LIMITS["input_bytes"]
MAX_JSON_VALUES = LIMITS["json_values"]
MAX_JSON_DEPTH = LIMITS["json_depth"]


class PlanError(BadInputError):
    """A plan or CSV that does not agree with itself; the message names the file and the key."""


# ---- actions --------------------------------------------------------------------------------------

COMPUTE_KINDS = ("F", "I", "W", "B")
COMM_KINDS = ("SEND_F", "RECV_F", "SEND_B", "RECV_B")
MARKER_KINDS = ("UNSHARD", "RESHARD", "REDUCE_GRAD")  # no microbatch
OVERLAP_F_B = "OVERLAP_F_B"
_ACTION = re.compile(r"(\d+)(SEND_F|RECV_F|SEND_B|RECV_B|UNSHARD|RESHARD|REDUCE_GRAD|F|I|W|B)(\d*)")
_INDEX_DIGITS = 7  # more digits than any stage (100,000) or microbatch (1,000,000) index has


def _excerpt(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[:width] + f"... ({len(text)} characters)"


@dataclasses.dataclass(frozen=True)
class Action:
    """One cell of a PyTorch pipelining CSV: ``3F1`` (stage 3, forward, microbatch 1), ``0SEND_B2``,
    ``1REDUCE_GRAD`` (a marker: no microbatch), or ``(0F1;1B0)OVERLAP_F_B`` (compute actions run
    overlapped: ``sub_actions``; ``stage`` is then -1 and ``microbatch`` None, as in PyTorch).
    ``str(action)`` is its text, and ``Action.from_str(str(action)) == action``."""

    stage: int
    kind: str                       # F, I, W, B, SEND_F, RECV_F, SEND_B, RECV_B, UNSHARD, RESHARD, REDUCE_GRAD, OVERLAP_F_B
    microbatch: Optional[int] = None
    sub_actions: Optional[tuple["Action", ...]] = None

    @staticmethod
    def from_str(text: str) -> Optional["Action"]:
        """The action a cell's text holds (surrounding blanks ignored), None for an empty cell.
        Raises :class:`PlanError` (without a location: the reader adds it) for anything else."""
        t = text.strip()
        if not t:
            return None
        if t.startswith("(") or OVERLAP_F_B in t:
            if not (t.startswith("(") and t.endswith(")" + OVERLAP_F_B)):
                raise PlanError(f"bad action '{_excerpt(t)}': an overlapped action is written '(A;B)OVERLAP_F_B', "
                                "e.g. '(0F1;1B0)OVERLAP_F_B'")
            subs = []
            for part in t[1:-len(")" + OVERLAP_F_B)].split(";"):
                sub = Action._single(part.strip(), t)
                if sub.kind not in COMPUTE_KINDS:
                    raise PlanError(f"in '{_excerpt(t)}': sub-action '{sub}' is a {sub.kind}; OVERLAP_F_B overlaps "
                                    "compute actions (F, I, W, B)")
                subs.append(sub)
            return Action(-1, OVERLAP_F_B, None, tuple(subs))
        return Action._single(t, t)

    @staticmethod
    def _single(t: str, cell: str) -> "Action":
        m = _ACTION.fullmatch(t)
        if m is None:
            what = "empty sub-action" if not t else f"bad action '{_excerpt(t)}'"
            raise PlanError(f"{what}{'' if t == cell else f' in {_excerpt(cell)!r}'}: an action is "
                            "STAGE KIND [MICROBATCH], KIND one of F, I, W, B, SEND_F, RECV_F, SEND_B, RECV_B "
                            "(with a microbatch) or UNSHARD, RESHARD, REDUCE_GRAD (without), e.g. '3F1'")
        stage, kind, mb = m.groups()
        if len(stage) > _INDEX_DIGITS:
            raise PlanError(f"bad action '{_excerpt(t)}': stage number of {len(stage)} digits, a plan has at most "
                            f"{MAX_STAGES:,} stages")
        if len(mb) > _INDEX_DIGITS:
            raise PlanError(f"bad action '{_excerpt(t)}': microbatch number of {len(mb)} digits, a plan has at most "
                            f"{MAX_MICROBATCHES:,} microbatches")
        if kind in MARKER_KINDS and mb:
            raise PlanError(f"bad action '{t}': {kind} takes no microbatch")
        if kind not in MARKER_KINDS and not mb:
            raise PlanError(f"bad action '{t}': {kind} needs a microbatch (e.g. '{stage}{kind}0')")
        return Action(int(stage), kind, int(mb) if mb else None)

    def leaves(self) -> tuple["Action", ...]:
        """The actions it runs: its sub-actions for OVERLAP_F_B, else itself."""
        return self.sub_actions if self.sub_actions is not None else (self,)

    def __str__(self) -> str:
        if self.sub_actions is not None:
            return f"({';'.join(str(a) for a in self.sub_actions)}){self.kind}"
        return f"{self.stage}{self.kind}{'' if self.microbatch is None else self.microbatch}"


@dataclasses.dataclass(frozen=True)
class Cell:
    """A non-empty cell of a CSV: its 1-based row (rank + 1) and column, and its action."""

    row: int
    col: int
    action: Action


# ---- bounded reading ------------------------------------------------------------------------------

def _line_col(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    return f"{line}:{pos - (text.rfind(chr(10), 0, pos) + 1) + 1}"


def read_text(path: str, error: type[BadInputError] = PlanError) -> str:
    """The UTF-8 text of ``path``, read with the command's 128 MiB cap (``/dev/zero`` is refused, not
    read); a byte that is not UTF-8 is refused at its line and column. Raises ``error``."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_INPUT_BYTES + 1)
    except OSError as e:
        raise error(f"{path}: cannot read: {e.strerror}") from None
    except ValueError as e:  # a NUL in the path
        raise error(f"{path!r}: cannot read: {e}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise error(f"{path}: larger than {MAX_INPUT_BYTES >> 20} MiB, the limit of any input file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        before = data[:e.start]
        line = before.count(b"\n") + 1
        col = e.start - (before.rfind(b"\n") + 1) + 1
        raise error(f"{path}:{line}:{col}: not UTF-8 (byte 0x{data[e.start]:02x})") from None


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},]')


def read_json(path: str) -> Any:
    """``path``'s JSON document: strict (no ``NaN``, ``Infinity``, numbers past a double or integers
    of more than 18 digits), at most 1,000,000 values nested at most 64 deep, each counted before
    the document is built."""
    text = read_text(path)
    depth = values = 0
    for m in _JSON_TOKEN.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            values += 1
            if depth > MAX_JSON_DEPTH:
                raise PlanError(f"{path}:{_line_col(text, m.start())}: nested more than {MAX_JSON_DEPTH} levels deep")
        elif c in "]}":
            depth -= 1
        elif c == ",":
            values += 1
        if values > MAX_JSON_VALUES:
            raise PlanError(f"{path}:{_line_col(text, m.start())}: more than {MAX_JSON_VALUES:,} values")

    def refuse(token: str, why: str) -> PlanError:
        pos = text.find(token)
        return PlanError(f"{path}{':' + _line_col(text, pos) if pos >= 0 else ''}: {why}")

    def constant(name: str) -> Any:
        raise refuse(name, f"'{name}' is not JSON (a number must be finite)")

    def integer(digits: str) -> int:
        if len(digits.lstrip("-")) > 18:
            raise refuse(digits, f"an integer of {len(digits.lstrip('-'))} digits: out of range")
        return int(digits)

    def number(digits: str) -> float:
        v = float(digits)
        if not math.isfinite(v):
            raise refuse(digits, f"the number '{_excerpt(digits)}' is out of range")
        return v

    try:
        return json.loads(text, parse_constant=constant, parse_int=integer, parse_float=number)
    except json.JSONDecodeError as e:
        raise PlanError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}") from None
    except RecursionError:
        raise PlanError(f"{path}: nested too deep") from None


def read_csv(path: str) -> list[list[Cell]]:
    """Per row (rank), its non-empty cells, each parsed into an :class:`Action`; at most 100,000 rows
    and 933,333 actions (an OVERLAP_F_B cell counts its sub-actions), counted while read."""
    text = read_text(path)
    rows: list[list[Cell]] = []
    actions = 0
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        for r, row in enumerate(reader):
            if r >= MAX_CSV_ROWS:
                raise PlanError(f"{path}:{r + 1}:1: more than {MAX_CSV_ROWS:,} rows (a row is a rank)")
            cells = []
            for c, text_cell in enumerate(row):
                try:
                    a = Action.from_str(text_cell)
                except PlanError as e:
                    raise PlanError(f"{path}:{r + 1}:{c + 1}: {e}") from None
                if a is None:
                    continue
                actions += len(a.leaves())
                if actions > MAX_SCHEDULE_ACTIONS:
                    raise PlanError(f"{path}:{r + 1}:{c + 1}: more than {MAX_SCHEDULE_ACTIONS:,} actions")
                cells.append(Cell(r + 1, c + 1, a))
            rows.append(cells)
    except csv.Error as e:
        raise PlanError(f"{path}:{reader.line_num}: not a CSV: {e}") from None
    return rows


def _cells(rows: list[list[Cell]]) -> Iterator[tuple[Cell, Action]]:
    """Every (cell, action it runs) in row order; an OVERLAP_F_B cell gives each of its sub-actions."""
    for row in rows:
        for cell in row:
            for a in cell.action.leaves():
                yield cell, a


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
class Tie:
    """Parameters that are one tensor of the model (plan.json ``tied_parameters``): ``names[i]`` is held
    by stage ``stages[i]`` on rank ``ranks[i]``; after a step each holder needs the sum of all sides'
    gradients (:func:`pipesmith.torch.pipeline.build_schedule` does it)."""
    names: tuple[str, ...]
    stages: tuple[int, ...]
    ranks: tuple[int, ...]


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
    tied_parameters: tuple[Tie, ...] = ()

    @property
    def num_layers(self) -> int:
        return self.stages[-1].last_layer + 1

    def csv_path(self, fmt: str) -> str:
        if fmt not in FORMATS:
            raise PlanError(f"format '{fmt}': one of {', '.join(FORMATS)}")
        return os.path.join(self.directory, self.files[fmt])


def _int(d: dict, key: str, where: str, lo: int, hi: int) -> int:
    """``d[key]``, an integer in [lo, hi]."""
    if key not in d:
        raise PlanError(f"{where}: missing key '{key}'")
    v = d[key]
    if isinstance(v, bool) or not isinstance(v, int):
        raise PlanError(f"{where}: '{key}' must be an integer, got {_excerpt(json.dumps(v))}")
    if not lo <= v <= hi:
        raise PlanError(f"{where}: '{key}' must be in [{lo:,}, {hi:,}], got {v:,}")
    return v


def _typed(d: dict, key: str, kind: type, where: str) -> Any:
    if key not in d:
        raise PlanError(f"{where}: missing key '{key}'")
    v = d[key]
    if not isinstance(v, kind):
        raise PlanError(f"{where}: '{key}' must be {_JSON_NAMES[kind]}, got {_json_type(v)}")
    return v


_JSON_NAMES = {list: "a list", dict: "an object", str: "a string", bool: "true or false"}


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    return "a list" if isinstance(v, list) else "an object"


def _flag(d: dict, key: str, where: str, null: bool = False) -> Optional[bool]:
    """An optional true/false key (absent: false; ``null`` allows null, kept as None)."""
    v = d.get(key, None if null else False)
    if v is None and null:
        return None
    if not isinstance(v, bool):
        raise PlanError(f"{where}: '{key}' must be true or false{' or null' if null else ''}, got {_json_type(v)}")
    return v


def _ints(v: Any, n: int, lo: int, hi: int, what: str) -> list[int]:
    """``v`` as a list of ``n`` integers in [lo, hi) (``n`` < 0: any length)."""
    if not isinstance(v, list) or (n >= 0 and len(v) != n) or any(
            isinstance(x, bool) or not isinstance(x, int) or not lo <= x < hi for x in v):
        raise PlanError(f"{what} must list {n if n >= 0 else 'the'} integers in [{lo}, {hi})")
    return v


def _strings(v: Any, what: str) -> tuple[str, ...]:
    if not isinstance(v, list) or any(not isinstance(x, str) for x in v):
        raise PlanError(f"{what} must be a list of strings")
    return tuple(v)


def load_plan(path: str, check_csvs: bool = True, runtime_rules: bool = True) -> Plan:
    """Reads plan.json (``path`` may be the export directory or the file). With ``check_csvs``, both
    CSVs must put every stage on its plan rank and (with ``runtime_rules``) hold what PyTorch's
    runtime silently gets wrong otherwise (:func:`check_runtime_rules`)."""
    if "\0" in path:
        raise PlanError(f"{path!r}: a path may not contain a NUL character")
    if os.path.isdir(path):
        path = os.path.join(path, "plan.json")
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise PlanError(f"{path}: a plan is a JSON object")
    if doc.get("schema") != SCHEMA:
        raise PlanError(f"{path}: 'schema' is {_excerpt(repr(doc.get('schema')))}, expected '{SCHEMA}' "
                        "(written by `pipesmith export --to pytorch`)")
    P = _int(doc, "devices", path, 1, MAX_DEVICES)
    S = _int(doc, "num_stages", path, 1, MAX_STAGES)
    M = _int(doc, "microbatches", path, 1, MAX_MICROBATCHES)
    if 3 * S * M > MAX_PLAN_OPS:
        raise PlanError(f"{path}: {S:,} stages x {M:,} microbatches make {3 * S * M:,} F/I/W ops, more than the "
                        f"{MAX_PLAN_OPS:,} a plan may have")
    s2r = _ints(_typed(doc, "stage_to_rank", list, path), S, 0, P, f"{path}: 'stage_to_rank'")
    r2s = _typed(doc, "rank_to_stages", list, path)
    expect: list[list[int]] = [[] for _ in range(P)]
    for s, r in enumerate(s2r):
        expect[r].append(s)
    if r2s != expect:
        raise PlanError(f"{path}: 'rank_to_stages' {_excerpt(json.dumps(r2s), 120)} disagrees with 'stage_to_rank' "
                        f"(expected {_excerpt(json.dumps(expect), 120)})")
    files = _typed(doc, "files", dict, path)
    for fmt in FORMATS:
        name = files.get(fmt)
        if not isinstance(name, str) or not name or os.sep in name or name in (".", "..") or "\0" in name:
            raise PlanError(f"{path}: 'files.{fmt}' must name a file beside plan.json")
    stages_doc = _typed(doc, "stages", list, path)
    if len(stages_doc) != S:
        raise PlanError(f"{path}: 'stages' has {len(stages_doc):,} entries, num_stages is {S:,}")
    stages = []
    next_layer = 0
    for i, st in enumerate(stages_doc):
        where = f"{path}: stages[{i}]"
        if not isinstance(st, dict):
            raise PlanError(f"{where}: not an object")
        if _int(st, "stage", where, 0, MAX_STAGES) != i or _int(st, "rank", where, 0, P - 1) != s2r[i]:
            raise PlanError(f"{where}: 'stage'/'rank' are {st.get('stage')}/{st.get('rank')}, "
                            f"expected {i}/{s2r[i]}")
        layers = _ints(_typed(st, "layers", list, where), 2, 0, MAX_LAYERS, f"{where}: 'layers'")
        if layers[0] != next_layer or layers[1] < layers[0]:
            raise PlanError(f"{where}: 'layers' {layers} must be [first, last] starting at layer {next_layer}")
        next_layer = layers[1] + 1
        types = _strings(_typed(st, "layer_types", list, where), f"{where}: 'layer_types'")
        if len(types) != layers[1] - layers[0] + 1:
            raise PlanError(f"{where}: 'layer_types' has {len(types)} names for {layers[1] - layers[0] + 1} layers")
        modules = st.get("modules")
        if modules is not None:
            modules = _strings(modules, f"{where}: 'modules' (or null)")
        recompute = st.get("recompute", "none")
        if not isinstance(recompute, str) or recompute not in RECOMPUTE_MODES:
            raise PlanError(f"{where}: 'recompute' must be one of {', '.join(RECOMPUTE_MODES)}, got "
                            f"{_excerpt(json.dumps(recompute))}")
        stages.append(Stage(index=i, rank=s2r[i], first_layer=layers[0], last_layer=layers[1],
                            layer_types=types, modules=modules,
                            starts_inside_joined_layer=bool(_flag(st, "starts_inside_joined_layer", where)),
                            ends_inside_joined_layer=bool(_flag(st, "ends_inside_joined_layer", where)),
                            vocab_shards=bool(_flag(st, "vocab_shards", where)),
                            skip_inputs_cross=bool(_flag(st, "skip_inputs_cross", where)), recompute=recompute))
    model = doc.get("model", "")
    if not isinstance(model, str):
        raise PlanError(f"{path}: 'model' must be a string, got {_json_type(model)}")
    plan = Plan(path=path, directory=os.path.dirname(os.path.abspath(path)), model=model,
                devices=P, num_stages=S, microbatches=M, stage_to_rank=tuple(s2r),
                rank_to_stages=tuple(tuple(x) for x in expect), files=dict(files), fsdp=bool(_flag(doc, "fsdp", path)),
                whole_modules=_flag(doc, "whole_modules", path, null=True), stages=tuple(stages), raw=doc)
    plan = dataclasses.replace(plan, tied_parameters=_ties(doc, path, S, P, s2r))
    renumbering = doc.get("microbatch_renumbering")
    if renumbering is not None:
        _ints(renumbering, M, 0, M, f"{path}: 'microbatch_renumbering' (or null)")
        if sorted(renumbering) != list(range(M)):
            raise PlanError(f"{path}: 'microbatch_renumbering' must be null or a permutation of 0..{M - 1}")
    if check_csvs:
        for fmt in FORMATS:
            rows = read_csv(plan.csv_path(fmt))
            check_csv(plan, plan.csv_path(fmt), rows)
            if runtime_rules:
                check_runtime_rules(plan, fmt, rows)
    return plan


def _ties(doc: dict, path: str, S: int, P: int, s2r: list[int]) -> tuple[Tie, ...]:
    """plan.json ``tied_parameters`` (absent: none): each entry's parameters, and the stage and rank
    holding each, consistent with ``stage_to_rank``."""
    raw = doc.get("tied_parameters", [])
    if not isinstance(raw, list):
        raise PlanError(f"{path}: 'tied_parameters' must be a list, got {_json_type(raw)}")
    out = []
    for i, t in enumerate(raw):
        where = f"{path}: tied_parameters[{i}]"
        if not isinstance(t, dict):
            raise PlanError(f"{where}: not an object")
        names = _strings(_typed(t, "parameters", list, where), f"{where}: 'parameters'")
        if len(names) < 2 or len(set(names)) != len(names) or not all(names):
            raise PlanError(f"{where}: 'parameters' must name at least two distinct parameters")
        stages = _ints(_typed(t, "stages", list, where), len(names), 0, S, f"{where}: 'stages'")
        ranks = _ints(_typed(t, "ranks", list, where), len(names), 0, P, f"{where}: 'ranks'")
        for s, r in zip(stages, ranks):
            if s2r[s] != r:
                raise PlanError(f"{where}: stage {s} is on rank {s2r[s]}, the entry says rank {r}")
        out.append(Tie(names=names, stages=tuple(stages), ranks=tuple(ranks)))
    return tuple(out)


def csv_stage_to_rank(path: str, rows: Optional[list[list[Cell]]] = None) -> tuple[int, dict[int, int]]:
    """Rows and the stage -> rank mapping a PyTorch CSV's rows imply (stage s on the row of its cells)."""
    rows = read_csv(path) if rows is None else rows
    mapping: dict[int, int] = {}
    for cell, a in _cells(rows):
        rank = cell.row - 1
        if mapping.setdefault(a.stage, rank) != rank:
            raise PlanError(f"{path}:{cell.row}:{cell.col}: cell '{cell.action}' puts stage {a.stage} on "
                            f"rank {rank}, an earlier cell put it on rank {mapping[a.stage]}")
    return len(rows), mapping


def last_stage_forward_order(path: str, last_stage: int,
                             rows: Optional[list[list[Cell]]] = None) -> list[tuple[int, int, int]]:
    """(microbatch, row, column) of each forward of ``last_stage``, in the order its rank runs them."""
    rows = read_csv(path) if rows is None else rows
    return [(a.microbatch, cell.row, cell.col) for cell, a in _cells(rows)
            if a.stage == last_stage and a.kind == "F" and a.microbatch is not None]


def _reduce_grads(rows: list[list[Cell]]) -> dict[int, list[tuple[int, int]]]:
    """Stage -> (row, column) of each of its REDUCE_GRAD cells."""
    out: dict[int, list[tuple[int, int]]] = {}
    for cell, a in _cells(rows):
        if a.kind == "REDUCE_GRAD":
            out.setdefault(a.stage, []).append((cell.row, cell.col))
    return out


def check_runtime_rules(plan: Plan, fmt: str, rows: Optional[list[list[Cell]]] = None) -> None:
    """What PyTorch's runtime (2.13) gets wrong without an error, refused here:

    * it keeps the last stage's losses in the order that stage runs its forwards and hands the k-th
      to the backward of microbatch k, so a last stage running F(m) out of order trains on the wrong
      losses (``pipesmith export`` renumbers the microbatches so this holds);
    * in a compute_comms CSV, a stage's gradients are divided by the microbatch count only at its
      REDUCE_GRAD: without one they come out M times too large, and a B or W of the stage after it
      adds its microbatch's gradient undivided. PyTorch's own lowering writes exactly one per stage,
      after the stage's last B or W, and so does ``pipesmith export``.
    """
    path = plan.csv_path(fmt)
    rows = read_csv(path) if rows is None else rows
    for k, (mb, row, col) in enumerate(last_stage_forward_order(path, plan.num_stages - 1, rows)):
        if mb != k:
            raise PlanError(f"{path}:{row}:{col}: the last stage's forward number {k} is of microbatch {mb}; "
                            f"PyTorch would pair its loss with the backward of microbatch {k} (wrong gradients, "
                            "no error). `pipesmith export --to pytorch` renumbers the microbatches so the last "
                            "stage runs its forwards in order")
    if fmt != "compute_comms":
        return
    reduce = _reduce_grads(rows)
    for stage in range(plan.num_stages):
        cells = reduce.get(stage, [])
        if len(cells) != 1:
            where = f"{path}:{cells[1][0]}:{cells[1][1]}" if cells else path
            raise PlanError(f"{where}: stage {stage} has {len(cells)} REDUCE_GRAD cells, PyTorch needs exactly one "
                            f"(it divides the stage's gradients by the {plan.microbatches} microbatches there)")
    reduced: dict[int, Cell] = {}  # stage -> its REDUCE_GRAD cell, once the row order has passed it
    for cell, a in _cells(rows):
        if a.kind == "REDUCE_GRAD":
            reduced[a.stage] = cell
        elif a.kind in ("B", "W") and a.stage in reduced:
            r = reduced[a.stage]
            raise PlanError(f"{path}:{r.row}:{r.col}: '{r.action}' comes before '{a}' ({path}:{cell.row}:{cell.col}), "
                            f"a backward of stage {a.stage}; PyTorch divides the stage's gradients by the "
                            f"{plan.microbatches} microbatches at its REDUCE_GRAD, so that backward's gradient "
                            "would stay undivided (wrong gradients, no error). REDUCE_GRAD goes after the stage's "
                            "last B or W")


def check_csv(plan: Plan, path: str, rows: Optional[list[list[Cell]]] = None) -> None:
    """The CSV's rows are the plan's ranks, each stage on its plan rank, every stage and microbatch
    within the plan's."""
    rows = read_csv(path) if rows is None else rows
    for cell, a in _cells(rows):
        if a.stage >= plan.num_stages:
            raise PlanError(f"{path}:{cell.row}:{cell.col}: cell '{cell.action}' names stage {a.stage}, the plan has "
                            f"{plan.num_stages} stages ({plan.path})")
        if a.microbatch is not None and a.microbatch >= plan.microbatches:
            raise PlanError(f"{path}:{cell.row}:{cell.col}: cell '{cell.action}' names microbatch {a.microbatch}, the "
                            f"plan has {plan.microbatches} microbatches ({plan.path})")
    n, mapping = csv_stage_to_rank(path, rows)
    if n != plan.devices:
        raise PlanError(f"{path}: {n} rows, the plan has {plan.devices} ranks ({plan.path})")
    for s in range(plan.num_stages):
        if s not in mapping:
            raise PlanError(f"{path}: no cell of stage {s} (the plan has {plan.num_stages} stages)")
        if mapping[s] != plan.stage_to_rank[s]:
            raise PlanError(f"{path}: stage {s} is on rank {mapping[s]}, the plan puts it on rank "
                            f"{plan.stage_to_rank[s]}")
