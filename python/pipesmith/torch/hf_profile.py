"""Profile a Hugging Face ``transformers`` causal LM on its own layers: the model YAML the synthesizer
reads, with each layer kind's F, I, W, fused B, memory and weight walk measured on the model
transformers builds from a ``config.json``.

    result = profile_hf("config.json", ProfileOptions(seq=32, rows=1), layers=4, hidden=64, vocab=128)
    write_atomic("model.yaml", profiled_yaml(None, result))     # pipesmith.torch.profile's writer

(``pipesmith profile --backend torch --hf config.json`` and ``python -m pipesmith.torch.profile --hf
config.json`` run it.)

What is measured. The model is :func:`pipesmith.torch.hf.model_from_config`'s: random weights,
transformers' eager attention and experts, at the config's own sizes or shrunk by ``layers``,
``hidden`` and ``vocab`` as ``python -m pipesmith.torch.run --hf`` shrinks it
(:func:`pipesmith.torch.hf._shrink`). Its layer list
and layer kinds are those ``pipesmith import hf`` writes for the same (shrunk) config, with the
options' sequence length and rows as ``seq_length`` and ``micro_batch_size``, so the YAML describes
the model measured: the same model ``python -m pipesmith.torch.run --hf config.json`` builds with
the same ``--layers``, ``--hidden`` and ``--vocab``. Each YAML layer is one piece of the model, timed
by :mod:`pipesmith.torch.profiler` as a one-layer stage (its method: chain sweeps, medians,
``stage_backward_input`` / ``stage_backward_weight``, memory from autograd's saved tensors):

* a decoder layer (``model.layers.N``) is the layer's own module called as the model's forward
  calls it: with the position ids, the mask of its kind (full, sliding, linear/Mamba) and the rotary
  embeddings that forward computes, taken once from a forward of the whole model (they depend on the
  shapes, not on the tokens) and shared by every layer, as in a stage;
* the embedding and the head (final norm, ``lm_head``, the family's post-processing, and the loss,
  :func:`pipesmith.torch.hf.causal_lm_loss`) are stages of :func:`pipesmith.torch.hf` run through the
  model's own forward, so they also carry the work a stage does once around its layers (position
  ids, masks, rotary embeddings).

The layer kinds are the import's: embedding, a dense decoder layer (``attention+mlp``), an MoE layer
(``attention+moe``), a Mamba layer, the head; a kind's numbers are medians over its layers.

Inputs are checked before anything is built: the config must be one ``pipesmith import hf`` reads
(its message names the supported families, or the field at its file:line:col) and one this
transformers builds (:class:`ProfileError` naming the file and transformers' reason). The import runs
the ``pipesmith`` command (``command``; by default the one beside this Python, as ``pip install .``
puts them, else the one on the PATH).
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Callable

from .model_yaml import ModelFileError, ModelSpec, load_model
from .profiler import (ProfileError, ProfileOptions, ProfileResult, _check_options, host_memory_available,
                       profile_built)


def find_command() -> str:
    """The ``pipesmith`` command the import runs: $PIPESMITH_COMMAND, else the one beside this Python
    (``pip install .`` installs both into one environment), else the one on the PATH."""
    env = os.environ.get("PIPESMITH_COMMAND")
    if env:
        return env
    beside = os.path.join(os.path.dirname(sys.executable), "pipesmith")
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("pipesmith")
    if found:
        return found
    raise ProfileError("--hf: no `pipesmith` command to import the config with (none beside "
                       f"{sys.executable} nor on the PATH): install the package (pip install .) or set "
                       "PIPESMITH_COMMAND")


def import_config(config: str, options: ProfileOptions, shrink: dict, command: str | None = None) -> str:
    """The model YAML text ``pipesmith import hf`` writes for ``config`` as the profile builds it
    (shrunk by ``shrink``'s ``layers``, ``hidden``, ``vocab`` where not None), with the options'
    ``seq`` and ``rows`` as its sequence length and micro-batch size. The config itself is imported
    first, so that its errors name the user's file."""
    from .hf import _shrink, read_config
    exe = command or find_command()
    raw = read_config(config, ProfileError)
    with tempfile.TemporaryDirectory(prefix="pipesmith-hf-profile-") as tmp:
        out = os.path.join(tmp, "model.yaml")
        shape = ["--seq-length", str(options.seq), "--micro-batch-size", str(options.rows)]

        def run(path: str) -> None:
            try:
                p = subprocess.run([exe, "import", "hf", path, "-o", out, *shape], capture_output=True, text=True,
                                   timeout=600)
            except OSError as e:
                raise ProfileError(f"--hf: cannot run '{exe}': {e.strerror}") from None
            if p.returncode != 0:
                msg = p.stderr.strip().removeprefix("pipesmith: error: ")
                raise ProfileError(f"--hf: {msg}" if msg else f"--hf: `{exe} import hf {path}` exited {p.returncode}")

        run(config)
        if any(v is not None for v in shrink.values()):
            small = os.path.join(tmp, os.path.basename(config))
            with open(small, "w", encoding="utf-8") as f:
                json.dump(_shrink(raw, **shrink), f, indent=1)
            run(small)
        with open(out, encoding="utf-8") as f:
            return f.read()


class HFChain:
    """A transformers ``*ForCausalLM`` as the profiler's chain: one piece per YAML layer (the layer's
    ``module:`` names), each taking and returning a carry dict (``tokens`` before the embedding,
    ``h`` between pieces, ``logits`` after the head). Built by :class:`HFMaker`."""

    def __init__(self, model, spec: ModelSpec, rows: int, seq: int, config_name: str = "config.json"):
        import torch
        from torch import nn
        from . import hf
        from .pipeline import PipelineBuildError
        try:
            layout = hf.Layout(model)
            hf._check_config(model)
        except PipelineBuildError as e:
            raise ProfileError(str(e)) from None
        self.model, self.layout = model, layout
        self.vocab = model.config.vocab_size
        pieces = [list(layer.modules) for layer in spec.layers]
        if [n for p in pieces for n in p] != layout.parts:
            raise ProfileError(_parts_mismatch(spec, layout, type(model).__name__, config_name))
        kwargs = self._layer_arguments(torch.zeros(rows, seq, dtype=torch.long, device=model.device))
        self.shared = [t for k in kwargs.values() for t in _tensors(k)]
        chain = []
        for i, names in enumerate(pieces):
            last = i + 1 == len(pieces)
            outs = ("logits",) if last else ("h",)
            ins = ("tokens",) if i == 0 else ("h",)
            if len(names) == 1 and names[0] in layout.layer_names:
                j = layout.layer_names.index(names[0])
                chain.append(_Decoder(layout.layers[j], kwargs[j], ins, outs))
            else:
                chain.append(_Stage(hf.HFStage(layout, names, i), ins, outs))
        self.chain = nn.ModuleList(chain)

    def _layer_arguments(self, ids) -> dict[int, tuple[tuple, dict]]:
        """What the model's forward hands each decoder layer besides the hidden state, for inputs of
        ``ids``'s shape: one forward with a hook before each layer."""
        import torch
        got: dict[int, tuple[tuple, dict]] = {}
        def keep(j, args, kwargs):  # everything but the hidden state, however the forward passes it
            kwargs = dict(kwargs)
            got[j] = (args if kwargs.pop("hidden_states", None) is not None else args[1:], kwargs)

        hooks = [layer.register_forward_pre_hook(lambda m, a, k, j=j: keep(j, a, k), with_kwargs=True)
                 for j, layer in enumerate(self.layout.layers)]
        try:
            with torch.no_grad():
                self.model(input_ids=ids, use_cache=False)
        finally:
            for h in hooks:
                h.remove()
        return got

    # The profiler's protocol (pipesmith.torch.profiler).
    def layer(self, i: int):
        return self.chain[i]

    def layout_before(self, i: int) -> tuple[str, ...]:
        return self.chain[i].in_names

    def layout_after(self, i: int) -> tuple[str, ...]:
        return self.chain[i].out_names

    def step_inputs(self, tokens, labels) -> tuple:
        return (tokens,)

    def parameters(self):
        return self.model.parameters()

    def shared_storages(self) -> list[int]:
        return [t.untyped_storage().data_ptr() for t in self.shared]

    def stage(self, first: int, last: int):
        return _Span([self.chain[i] for i in range(first, last + 1)])


def _parts_mismatch(spec: ModelSpec, layout, model_class: str, config_name: str) -> str:
    """Why the imported layers' modules are not the model's parts, naming the layers it lacks."""
    have = set(layout.parts)
    lacking = [f"layer {i} ({spec.types[layer.symbol].name}: {', '.join(n for n in layer.modules if n not in have)})"
               for i, layer in enumerate(spec.layers) if any(n not in have for n in layer.modules)]
    msg = (f"--hf {config_name}: the layers `pipesmith import hf` writes for it are not {model_class}'s parts in "
           f"forward order ({', '.join(layout.parts[:2])}, ..., {layout.parts[-1]})")
    if lacking:
        msg += f": {'; '.join(lacking[:4])} not in the model transformers builds"
    if any("mtp" in x for x in lacking):
        msg += ("; transformers builds no multi-token-prediction (MTP) module: profile a copy of the config with "
                "num_nextn_predict_layers 0")
    return msg


def _tensors(x) -> list:
    import torch
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors(v)]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors(v)]
    return []


def _piece_base():
    from torch import nn

    class Piece(nn.Module):
        def __init__(self, ins, outs):
            super().__init__()
            self.in_names, self.out_names = ins, outs

    return Piece


class _Decoder(_piece_base()):
    """A decoder layer called as the model's forward calls it."""

    def __init__(self, layer, arguments: tuple[tuple, dict], ins, outs):
        super().__init__(ins, outs)
        self.inner = layer
        self.args, self.kwargs = arguments

    def forward(self, carry: dict) -> dict:
        out = self.inner(carry["h"], *self.args, **self.kwargs)
        return {self.out_names[0]: out[0] if isinstance(out, tuple) else out}


class _Stage(_piece_base()):
    """Modules run through the model's own forward (:class:`pipesmith.torch.hf.HFStage`)."""

    def __init__(self, stage, ins, outs):
        super().__init__(ins, outs)
        self.inner = stage

    def forward(self, carry: dict) -> dict:
        return {self.out_names[0]: self.inner(carry[self.in_names[0]])}


class _Span(_piece_base()):
    """Pieces first..last as one stage (the weight walk's), speaking tensors at both ends."""

    def __init__(self, pieces):
        from torch import nn
        super().__init__(pieces[0].in_names, pieces[-1].out_names)
        self.pieces = nn.ModuleList(pieces)

    def forward(self, *tensors):
        carry = dict(zip(self.in_names, tensors))
        for p in self.pieces:
            carry = p(carry)
        return carry[self.out_names[0]]


@dataclasses.dataclass(frozen=True)
class HFMaker:
    """Builds the transformers model of ``config`` and its chain (picklable: each background process
    of ``concurrent`` builds its own)."""
    config: str
    spec_yaml: str
    shrink: dict  # model_from_config's layers, hidden, vocab

    def model(self, o: ProfileOptions):
        import torch
        from .hf import model_from_config
        from .pipeline import PipelineBuildError
        try:
            return model_from_config(self.config, dtype=getattr(torch, o.dtype), seed=o.seed, **self.shrink)
        except PipelineBuildError as e:
            raise ProfileError(str(e)) from None

    def __call__(self, o: ProfileOptions):
        from .hf import causal_lm_loss
        spec = load_model(self.spec_yaml)
        model = self.model(o).to(o.device)
        return HFChain(model, spec, o.rows, o.seq, self.config), causal_lm_loss


def _check_memory(maker: HFMaker, o: ProfileOptions, layers: int) -> str:
    """Refuses a model whose profile needs more host memory than there is (parameters and their
    gradients, counted on PyTorch's meta device, every layer's output, the logits); returns the
    model's class and sizes for the header."""
    import torch
    with torch.device("meta"):
        m = maker.model(o)
    cfg = m.config
    elem = torch.empty((), dtype=getattr(torch, o.dtype)).element_size()
    params = sum(p.numel() for p in m.parameters())
    tokens = o.rows * o.seq
    need = (2 * params + (layers + 2) * tokens * cfg.hidden_size + 3 * tokens * cfg.vocab_size) * elem
    avail, sources = host_memory_available()
    if o.device == "cpu" and need > avail:
        raise ProfileError(f"--hf {maker.config}: profiling {type(m).__name__} ({params / 1e9:.2f} B parameters, "
                           f"{o.dtype}) needs at least {need / 1e9:.1f} GB of host memory, more than the "
                           f"{avail / 1e9:.1f} GB available ({sources}): shrink it with --layers, --hidden, --vocab")
    return (f"{type(m).__name__} built by transformers from {os.path.basename(maker.config)} "
            f"({cfg.num_hidden_layers} decoder layers, hidden {cfg.hidden_size}, vocabulary {cfg.vocab_size}, "
            f"{params / 1e6:.3g} M parameters, random weights, eager attention)")


def profile_hf(config: str, options: ProfileOptions = ProfileOptions(), layers: int | None = None,
               hidden: int | None = None, vocab: int | None = None, command: str | None = None,
               progress: Callable[[str], None] | None = None) -> ProfileResult:
    """Profiles the transformers model of ``config`` (module docstring): at the config's own sizes,
    or with ``layers`` decoder layers, ``hidden`` units and a vocabulary of ``vocab``. Of
    ``options``, ``hidden``, ``vocab`` and ``full_width`` (the reference model's) do not apply; the
    result states the sizes built. ``options.method`` must be chain or isolated. ``command``: the
    ``pipesmith`` command the import runs (:func:`find_command`). The result's ``source_yaml`` is the
    imported model YAML, which :func:`pipesmith.torch.profile_yaml.profiled_yaml` fills in."""
    _check_options(options)
    if options.method == "single":
        raise ProfileError("--hf: method 'single' builds the reference model's layers one by one; profile a "
                           "transformers model with chain or isolated (shrink it with --layers, --hidden, --vocab)")
    if options.user_model:
        raise ProfileError("--hf and --user-model both name the model: give one")
    if options.full_width:
        raise ProfileError("--hf builds the config's own sizes unless --layers, --hidden or --vocab shrink it: "
                           "--full-width does not apply")
    limits = (("layers", layers, 1, 100_000), ("hidden", hidden, 2, 1 << 16), ("vocab", vocab, 2, 1 << 24))
    for name, v, lo, hi in limits:
        if v is not None and not lo <= v <= hi:
            raise ProfileError(f"--{name} must be in {lo}..{hi}, got {v}")
    shrink = {"layers": layers, "hidden": hidden, "vocab": vocab}
    text = import_config(config, options, shrink, command)
    with tempfile.TemporaryDirectory(prefix="pipesmith-hf-profile-") as tmp:
        spec_path = os.path.join(tmp, os.path.basename(config).removesuffix(".json") + ".yaml")
        with open(spec_path, "w", encoding="utf-8") as f:
            f.write(text)
        try:
            spec = load_model(spec_path)
        except ModelFileError as e:
            raise ProfileError(f"--hf: the imported model YAML: {e}") from None
        maker = HFMaker(config, spec_path, shrink)
        built = _check_memory(maker, options, len(spec.layers))
        arch = spec.architecture  # the sizes built, for the header and the table
        options = dataclasses.replace(options, hidden=int(arch.get("hidden_size", 0)),
                                      vocab=int(arch.get("vocab_size", 0)))
        result = profile_built(spec, options, maker, progress)
    return dataclasses.replace(result, built=built, source_yaml=text)
