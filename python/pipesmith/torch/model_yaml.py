"""Reading a pipesmith model YAML (schema 1) as the PyTorch side needs it.

The C++ reader (ir/model.cpp) is the authority on the format (docs/inputs.md); this module reads the
parts a PyTorch model is built from: the architecture numbers, the layer types (kind, joins_next,
per-type architecture overrides, vocabulary shards), the expanded layer list with its extra inputs and
module names. Errors name the file and, where the YAML parser knows it, the line and column.

It reads the YAML itself, not through the extension, because :mod:`pipesmith.torch` also runs from a
source tree without it (``pipesmith profile --backend torch`` of a build tree puts python/ on
PYTHONPATH); the kinds and the bounds it checks are the core's own, from :mod:`pipesmith._tables`
(generated from the extension and tested against it), so a kind or a bound means the same here.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any

import yaml

from .._tables import KINDS, LIMITS
from ..errors import BadInputError
from .plan import read_text  # the one bounded reader of every input file


class ModelFileError(BadInputError):
    """A model YAML the PyTorch side cannot use; the message starts with file:line:col."""


@dataclasses.dataclass(frozen=True)
class LayerType:
    symbol: str
    name: str
    kind: str                 # analytic kind as written ("attention+mlp"); "" when none
    components: tuple[str, ...]
    joins_next: bool
    architecture: dict[str, Any]  # the model's architecture with this type's overrides applied
    vocab_shards: int


@dataclasses.dataclass(frozen=True)
class Layer:
    index: int
    symbol: str
    inputs: tuple[int, ...]   # extra producers (besides index - 1)
    modules: tuple[str, ...]  # framework module names; () when the file names none


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    name: str
    path: str
    architecture: dict[str, Any]
    types: dict[str, LayerType]
    layers: tuple[Layer, ...]

    def type_of(self, layer: int) -> LayerType:
        return self.types[self.layers[layer].symbol]


_MODULE_NAME = re.compile(r"^[A-Za-z0-9_.]*(\{i\}[A-Za-z0-9_.]*)*$")

# The core's bounds (ir/limits.h through pipesmith._tables, generated from the extension).
MAX_YAML_DEPTH = int(LIMITS["yaml_depth"])
MAX_LAYERS = int(LIMITS["layers"])


def _check_depth(path: str, root: Any) -> None:
    """Refuses a document nested deeper than the command's limit (walking the composed nodes; an
    alias is a node composed once, so the walk is bounded by the document's own size)."""
    stack = [(root, 1)] if root is not None else []
    seen: set[int] = set()
    while stack:
        node, depth = stack.pop()
        if depth > MAX_YAML_DEPTH:
            raise ModelFileError(f"{_where(path, node)}: nested more than {MAX_YAML_DEPTH} levels deep")
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((n, depth + 1) for n in node.value)
        elif isinstance(node, yaml.MappingNode):
            stack.extend((n, depth + 1) for kv in node.value for n in kv)


def _where(path: str, node: Any) -> str:
    mark = getattr(node, "start_mark", None)
    if mark is None:
        return path
    return f"{path}:{mark.line + 1}:{mark.column + 1}"


def _components(kind: str, where: str) -> tuple[str, ...]:
    out: list[str] = []
    for part in kind.split("+"):
        part = part.strip()
        if part not in KINDS:  # the core's kinds: components and aliases (ir/cost_model.h)
            raise ModelFileError(f"{where}: unknown kind component '{part}' in '{kind}' "
                                 f"(known: {', '.join(sorted(KINDS))})")
        out.extend(KINDS[part])
    return tuple(out)


def _node_map(node: yaml.Node) -> dict[str, yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: v for k, v in node.value}


def load_model(path: str) -> ModelSpec:
    """Reads the model YAML at ``path`` (at most 128 MiB, UTF-8, nested at most 64 levels, at most
    100,000 layers once expanded, as the command reads it)."""
    text = read_text(path, ModelFileError)
    try:
        root_node = yaml.compose(text)
        _check_depth(path, root_node)
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        loc = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        raise ModelFileError(f"{loc}: not valid YAML: {getattr(e, 'problem', e)}") from None
    except RecursionError:
        raise ModelFileError(f"{path}: nested more than {MAX_YAML_DEPTH} levels deep") from None
    if not isinstance(doc, dict) or "model" not in doc or not isinstance(doc["model"], dict):
        raise ModelFileError(f"{path}: no 'model:' mapping (docs/inputs.md)")
    model = doc["model"]
    model_node = _node_map(root_node).get("model")
    mnodes = _node_map(model_node)
    arch = model.get("architecture") or {}
    if not isinstance(arch, dict):
        raise ModelFileError(f"{_where(path, mnodes.get('architecture'))}: 'architecture' must be a mapping")
    arch = dict(arch)
    types_doc = model.get("layer_types")
    if not isinstance(types_doc, dict) or not types_doc:
        raise ModelFileError(f"{_where(path, model_node)}: model has no 'layer_types:'")
    tnodes = _node_map(mnodes.get("layer_types"))
    types: dict[str, LayerType] = {}
    for sym, t in types_doc.items():
        sym = str(sym)
        where = _where(path, tnodes.get(sym))
        if not isinstance(t, dict):
            raise ModelFileError(f"{where}: layer type '{sym}' is not a mapping")
        kind = t.get("kind") or ""
        overrides = t.get("architecture") or {}
        if not isinstance(kind, str):
            raise ModelFileError(f"{where}: layer type '{sym}': 'kind' must be a string")
        if not isinstance(overrides, dict):
            raise ModelFileError(f"{where}: layer type '{sym}': 'architecture' must be a mapping")
        shards = overrides.get("vocab_shards", arch.get("vocab_shards", 1))
        if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= MAX_LAYERS:
            raise ModelFileError(f"{where}: layer type '{sym}': 'vocab_shards' must be an integer in [1, {MAX_LAYERS:,}]")
        a = dict(arch)
        a.update(overrides)
        comps = _components(kind, where) if kind else ()
        types[sym] = LayerType(symbol=sym, name=str(t.get("name", sym)), kind=kind, components=comps,
                               joins_next=bool(t.get("joins_next", False)), architecture=a,
                               vocab_shards=int(a.get("vocab_shards", 1)))
    layers = _expand_layers(path, model.get("layers"), mnodes.get("layers"), types)
    return ModelSpec(name=str(model.get("name", "")), path=path, architecture=arch, types=types,
                     layers=tuple(layers))


def _expand_layers(path: str, layers_doc: Any, node: Any, types: dict[str, LayerType]) -> list[Layer]:
    out: list[Layer] = []
    if isinstance(layers_doc, str):
        if len(layers_doc) > MAX_LAYERS and sum(not ch.isspace() for ch in layers_doc) > MAX_LAYERS:
            raise ModelFileError(f"{_where(path, node)}: more than {MAX_LAYERS:,} layers")
        for ch in layers_doc:
            if ch.isspace():
                continue
            if ch not in types:
                raise ModelFileError(f"{_where(path, node)}: layer symbol '{ch}' has no layer type")
            out.append(Layer(index=len(out), symbol=ch, inputs=(), modules=()))
        return out
    if not isinstance(layers_doc, list):
        raise ModelFileError(f"{_where(path, node)}: 'layers' must be a string or a list")
    entry_nodes = node.value if isinstance(node, yaml.SequenceNode) else [None] * len(layers_doc)
    copies_of: dict[str, int] = {}
    for entry, enode in zip(layers_doc, entry_nodes):
        where = _where(path, enode)
        if not isinstance(entry, dict) or "type" not in entry:
            raise ModelFileError(f"{where}: a layers entry needs 'type'")
        pattern = entry["type"]
        repeat = entry.get("repeat", 1)
        inputs = entry.get("inputs") or []
        if not isinstance(pattern, str):
            raise ModelFileError(f"{where}: 'type' must be a string of layer symbols")
        if isinstance(repeat, bool) or not isinstance(repeat, int) or not 1 <= repeat <= MAX_LAYERS:
            raise ModelFileError(f"{where}: 'repeat' must be an integer in [1, {MAX_LAYERS:,}], got {repeat!r:.40}")
        if not isinstance(inputs, list) or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < MAX_LAYERS
                                                for i in inputs):
            raise ModelFileError(f"{where}: 'inputs' must be a list of layer indices")
        inputs = tuple(inputs)
        if len(out) + repeat * len(pattern) > MAX_LAYERS:
            raise ModelFileError(f"{where}: more than {MAX_LAYERS:,} layers")
        module = entry.get("module")
        templates: tuple[str, ...] = ()
        if module is not None:
            templates = tuple(str(m) for m in (module if isinstance(module, list) else [module]))
            for t in templates:
                if not _MODULE_NAME.match(t):
                    raise ModelFileError(f"{where}: module name '{t}' (letters, digits, _, . and {{i}})")
        for _ in range(repeat):
            names = []
            for t in templates:
                i = copies_of.get(t, 0)
                names.append(t.replace("{i}", str(i)))
            for t in templates:
                copies_of[t] = copies_of.get(t, 0) + 1
            for ch in pattern:
                if ch not in types:
                    raise ModelFileError(f"{where}: layer symbol '{ch}' has no layer type")
                out.append(Layer(index=len(out), symbol=ch, inputs=inputs, modules=tuple(names)))
    return out
