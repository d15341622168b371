"""Reading a pipesmith model YAML (schema 1) as the PyTorch side needs it.

The C++ reader (ir/model.cpp) is the authority on the format (docs/inputs.md); this module reads the
parts a PyTorch model is built from: the architecture numbers, the layer types (kind, joins_next,
per-type architecture overrides, vocabulary shards), the expanded layer list with its extra inputs and
module names. Errors name the file and, where the YAML parser knows it, the line and column.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any

import yaml


class ModelFileError(ValueError):
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


_ALIASES = {
    "dense_block": ("attention", "mlp"),
    "moe_block": ("attention", "moe"),
    "mtp": ("mtp_projection", "attention", "moe", "head"),
}
_COMPONENTS = {"embedding", "attention", "linear_attention", "mlp", "moe", "mamba", "head",
               "mtp_projection"}
_MODULE_NAME = re.compile(r"^[A-Za-z0-9_.]*(\{i\}[A-Za-z0-9_.]*)*$")


def _where(path: str, node: Any) -> str:
    mark = getattr(node, "start_mark", None)
    if mark is None:
        return path
    return f"{path}:{mark.line + 1}:{mark.column + 1}"


def _components(kind: str, where: str) -> tuple[str, ...]:
    out: list[str] = []
    for part in kind.split("+"):
        part = part.strip()
        if part in _ALIASES:
            out.extend(_ALIASES[part])
        elif part in _COMPONENTS:
            out.append(part)
        else:
            raise ModelFileError(f"{where}: unknown kind component '{part}' in '{kind}' "
                                 f"(known: {', '.join(sorted(_COMPONENTS | set(_ALIASES)))})")
    return tuple(out)


def _node_map(node: yaml.Node) -> dict[str, yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: v for k, v in node.value}


def load_model(path: str) -> ModelSpec:
    """Reads the model YAML at ``path``."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ModelFileError(f"{path}: cannot read: {e.strerror}") from None
    try:
        root_node = yaml.compose(text)
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        loc = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        raise ModelFileError(f"{loc}: not valid YAML: {getattr(e, 'problem', e)}") from None
    if not isinstance(doc, dict) or "model" not in doc or not isinstance(doc["model"], dict):
        raise ModelFileError(f"{path}: no 'model:' mapping (docs/inputs.md)")
    model = doc["model"]
    model_node = _node_map(root_node).get("model")
    mnodes = _node_map(model_node)
    arch = dict(model.get("architecture") or {})
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
        kind = str(t.get("kind") or "")
        overrides = dict(t.get("architecture") or {})
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
        pattern = str(entry["type"])
        repeat = int(entry.get("repeat", 1))
        inputs = tuple(int(i) for i in (entry.get("inputs") or ()))
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
