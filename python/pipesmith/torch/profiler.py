"""The profiler: each layer type's F, I, W, fused B time and memory, measured with PyTorch
(:func:`profile_model`); ``python -m pipesmith.torch.profile`` is its command
(:mod:`pipesmith.torch.profile`), :mod:`pipesmith.torch.profile_yaml` writes what it measured.

Method. The model is the reference transformer of MODEL.yaml (:mod:`pipesmith.torch.reference`) at the
given width, or the one ``FUNCTION(spec, scale)`` from ``MODULE`` builds (it must have the reference's
``chain`` of layers speaking the carry layout). Each layer runs as a one-layer stage on fresh input
leaves (as a ``PipelineStage`` receives them), ``warmup`` times unmeasured and ``repeats`` times
measured:

* **F**: the layer's forward (for the model's last layer, the loss too, as PyTorch's last stage does);
* **I**: ``stage_backward_input`` (PyTorch's own, ``torch.distributed.pipelining._backward``):
  ``torch.autograd.grad`` of the outputs with respect to the inputs, keeping the graph and the
  gradients the weight pass starts from;
* **W**: ``stage_backward_weight``: ``torch.autograd.grad`` with respect to the parameters from those;
* **B** (fused): ``stage_backward`` (``torch.autograd.backward``), written as the type's
  ``backward_ms`` (what a B-only schedule's B costs; it is less than I + W in PyTorch).

* **weight_walk_ms** (``method="chain"``): PyTorch's W of a stage of several layers costs more than
  its layers' one-layer Ws (``stage_backward_weight`` walks the stage's graph below every parameter
  group): the W of the stage of up to 8 layers from the type's first, less those layers' one-layer
  Ws, over the stage's pairs of layers (docs/inputs.md).

A layer without floating inputs (the embedding) has no I and a whole backward as W, as PyTorch's
first stage. ``method="chain"`` (default) times every layer in sweeps of the whole model (every F in
order, every I in reverse, every W, then every B after a second forward sweep), and a type's numbers
are medians over its layers and the repeats; ``method="isolated"`` times each type's first layer
alone (its weights then stay in the cache); ``method="single"`` builds only each type's first layer
and times it alone on random inputs of the carry's shapes, so that a model too large for the machine
is profiled layer type by layer type. ``full_width`` builds the layers at the architecture's own
hidden size, heads (and ``head_dim``), experts, vocabulary, sequence length and ``micro_batch_size``
(the numbers the analytic cost model uses), the MoE routing each token to its top-k experts only;
on CUDA attention is PyTorch's fused ``scaled_dot_product_attention``. ``concurrent`` = N runs N - 1
other processes sweeping meanwhile, as N ranks load the machine.

Times are medians over the repeats: wall clock after ``torch.set_num_threads(threads)`` on the CPU,
``torch.cuda.Event`` pairs on CUDA. Memory per microbatch comes from one extra, untimed repeat of the type's first layer under
``torch.autograd.graph.saved_tensors_hooks`` that follows every tensor autograd saves until its node
is freed (parameters excluded, shared storages counted once): ``activation_mb`` = max(saved bytes
after F, bytes after I), ``wgrad_stash_mb`` = bytes after I (the saved tensors still held plus the
gradients I keeps for W) -- the convention of ``pipesmith profile`` (runtime/profile.h); the
``output_mb`` is the bytes of the tensors the layer hands on (the carry after it, skip inputs of
earlier layers excepted); ``params_m`` is its parameters / 1e6. MB = 1e6 bytes.
"""
from __future__ import annotations

import dataclasses
import importlib
import statistics
import time
import weakref
from typing import Any, Callable

from .._tables import OPTIONS
from ..errors import BadInputError
from .model_yaml import ModelFileError, ModelSpec, load_model


class ProfileError(BadInputError):
    """A profile that cannot be taken or written; the message names the input and the reason."""


DTYPES = ("float32", "float64", "bfloat16")
METHODS = ("chain", "isolated", "single")


@dataclasses.dataclass(frozen=True)
class ProfileOptions:
    hidden: int = 256              # hidden size of the reference model
    seq: int = 64                  # tokens per sequence
    vocab: int = 512               # vocabulary of the reference model
    rows: int = 2                  # sequences per microbatch
    dtype: str = "float32"
    threads: int = 1               # torch.set_num_threads on the CPU
    device: str = "cpu"            # "cpu" or "cuda"
    warmup: int = 2
    repeats: int = 5
    seed: int = 1234
    method: str = "chain"          # "chain": every layer in a sweep of the model; "isolated": the type's first
                                   # layer alone; "single": only that layer built, on random inputs
    concurrent: int = 1            # processes running the same sweeps at once (the measured one included), as P ranks do
    user_model: str | None = None  # MODULE:FUNCTION building the model from (spec, scale)
    full_width: bool = False       # the architecture's own hidden size, heads, experts, vocabulary, sequence, rows


@dataclasses.dataclass(frozen=True)
class TypeProfile:
    symbol: str
    name: str
    layer: int                  # the type's first layer (memory is measured on it; isolated timing too)
    forward_ms: float
    backward_input_ms: float
    backward_weight_ms: float
    backward_ms: float          # fused B (stage_backward): the type's backward_ms
    activation_mb: float
    wgrad_stash_mb: float
    output_mb: float
    params_m: float
    samples: int                # timings the medians are over (layers of the type x repeats)
    weight_walk_ms: float = 0.0  # split W's extra per layer before it in a stage (chain method; 0: not measured)

    def numbers(self, backward: str = "split") -> dict[str, float]:
        """The nine schema numbers, the fused B as ``backward_ms``. ``backward="fused"`` also scales I
        and W so that I + W is the measured fused B (split schedules then cost as B-only ones)."""
        i, w, walk = self.backward_input_ms, self.backward_weight_ms, self.weight_walk_ms
        if backward == "fused" and i + w > 0:
            i, w, walk = i * self.backward_ms / (i + w), w * self.backward_ms / (i + w), 0.0
        return {"forward_ms": self.forward_ms, "backward_input_ms": i,
                "backward_weight_ms": w, "backward_ms": self.backward_ms, "weight_walk_ms": walk,
                "activation_mb": self.activation_mb, "wgrad_stash_mb": self.wgrad_stash_mb,
                "output_mb": self.output_mb, "params_m": self.params_m}


@dataclasses.dataclass(frozen=True)
class ProfileResult:
    model: str
    where: str                  # "cpu, 1 thread(s), torch 2.13.0" / "cuda:0 NVIDIA H200, torch ..."
    options: ProfileOptions
    types: tuple[TypeProfile, ...]   # by first use in the layer list
    unprofiled: tuple[str, ...]      # types no layer uses (their numbers are left as they were)
    sweep_ms: float = 0.0            # chain: median over repeats of a whole sweep's F + I + W (the load probe)
    built: str = ""                  # the model measured, when not the reference transformer
    source_yaml: str = ""            # the model YAML the profile fills in, when not read from a file


# The sizes' ranges: the core's options table (ir/limits.h, limits::option, "profile.NAME"; the flags of
# `pipesmith profile --backend torch` check the same), read through pipesmith._tables so this module runs
# without the extension.
_SIZES = ("hidden", "seq", "vocab", "rows", "threads", "concurrent", "warmup", "repeats")


def _check_options(o: ProfileOptions) -> None:
    bad = []
    for name in _SIZES:
        lo, hi = OPTIONS[f"profile.{name}"]
        v = getattr(o, name)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            bad.append(f"{name} must be an integer in [{lo}, {hi}], got {v!r:.60}")
    if o.dtype not in DTYPES:
        bad.append(f"dtype must be one of {', '.join(DTYPES)}, got '{o.dtype}'")
    if o.method not in METHODS:
        bad.append(f"method must be one of {', '.join(METHODS)}, got '{o.method}'")
    if o.device not in ("cpu", "cuda"):
        bad.append(f"device must be cpu or cuda, got '{o.device}'")
    if o.method == "single" and o.user_model:
        bad.append("method 'single' builds the reference model's layers one by one; it does not take --user-model")
    if o.method == "single" and isinstance(o.concurrent, int) and o.concurrent > 1:
        bad.append("method 'single' times layers alone; concurrent must be 1")
    if bad:
        raise ProfileError("; ".join(bad))


class _Clock:
    """Milliseconds of a callable: wall clock on the CPU, CUDA events on the current stream."""

    def __init__(self, device: str):
        import torch
        self.cuda = device == "cuda"
        self.torch = torch

    def time(self, fn: Callable[[], Any]) -> tuple[float, Any]:
        if self.cuda:
            start = self.torch.cuda.Event(enable_timing=True)
            end = self.torch.cuda.Event(enable_timing=True)
            start.record()
            out = fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end), out
        t0 = time.perf_counter()
        out = fn()
        return (time.perf_counter() - t0) * 1e3, out


class _SavedBytes:
    """Follows every tensor autograd saves while active, until the node holding it is freed."""

    class _Held:
        __slots__ = ("t", "__weakref__")

        def __init__(self, t):
            self.t = t

    def __init__(self, exclude_ptrs: set[int]):
        self.held: "weakref.WeakSet[_SavedBytes._Held]" = weakref.WeakSet()
        self.exclude = exclude_ptrs

    def pack(self, t):
        h = _SavedBytes._Held(t)
        self.held.add(h)
        return h

    @staticmethod
    def unpack(h):
        return h.t

    def live_bytes(self, extra=()) -> int:
        seen: dict[int, int] = {}
        for t in [h.t for h in list(self.held)] + list(extra):
            st = t.untyped_storage()
            ptr = st.data_ptr()
            if ptr in self.exclude or ptr == 0:
                continue
            seen[ptr] = max(seen.get(ptr, 0), st.nbytes())
        return sum(seen.values())


def _scale(spec: ModelSpec, o: ProfileOptions):
    from .reference import Scale
    if o.full_width:
        return Scale.full(spec.architecture)
    return Scale(hidden=o.hidden, seq=o.seq, vocab=o.vocab)


def resolve_width(spec: ModelSpec, o: ProfileOptions) -> ProfileOptions:
    """``o`` with ``full_width`` spelled out: the architecture's hidden size, sequence length,
    vocabulary and micro_batch_size as hidden, seq, vocab and rows."""
    if not o.full_width:
        return o
    try:
        sc = _scale(spec, o)
    except ModelFileError as e:
        raise ProfileError(f"--full-width: {e}") from None
    for i, layer in enumerate(spec.layers):  # the reference carries one hidden size through the chain
        t = spec.types[layer.symbol]
        h = t.architecture.get("hidden_size", sc.hidden)
        if h != sc.hidden:
            raise ProfileError(f"--full-width: layer {i} (type '{t.symbol}' {t.name}) has hidden_size {h}, the model "
                               f"{sc.hidden}: the reference model is built at one hidden size, so a model whose layers "
                               "differ in width (a vision encoder) is profiled at --hidden, not at full width")
    rows = int(spec.architecture.get("micro_batch_size", 1) or 1)
    return dataclasses.replace(o, hidden=sc.hidden, seq=sc.seq, vocab=sc.vocab, rows=max(1, rows))


def _build_model(spec: ModelSpec, o: ProfileOptions, only=None):
    """The reference model (or the user's), on o.device in o.dtype; with ``only``, just those layers
    (:class:`ReferenceLayers`)."""
    import torch
    from .reference import ReferenceLayers, ReferenceTransformer
    scale = _scale(spec, o)
    dtype = getattr(torch, o.dtype)
    if only is not None:
        model = ReferenceLayers(spec, only, scale, seed=o.seed, dtype=dtype, device=o.device)
    elif o.user_model is None:
        model = ReferenceTransformer(spec, scale, seed=o.seed, dtype=dtype)
    else:
        mod, _, fn = o.user_model.partition(":")
        try:
            build = getattr(importlib.import_module(mod), fn)
        except (ImportError, AttributeError, ValueError) as e:
            raise ProfileError(f"--user-model {o.user_model}: {e}") from None
        model = build(spec, scale).to(dtype)
        if not hasattr(model, "chain") or not hasattr(model, "layout_before"):
            raise ProfileError(f"--user-model {o.user_model}: the model needs the reference's `chain` of "
                               "layers and `layout_before` (the carry layout) to be profiled layer by layer")
    return model.to(o.device), scale


def _leaves(carry: dict, names) -> dict:
    """A layer's inputs as a PipelineStage receives them: floating tensors as fresh leaves."""
    return {k: (carry[k].detach().requires_grad_(True) if carry[k].is_floating_point() else carry[k]) for k in names}


def _forward(layer, inputs: dict, final: bool, labels, loss_fn):
    """(the carry after the layer, the outputs backward starts from, their names); the last layer's
    output is its loss. An input handed on unchanged is cloned, as StageModule does."""
    res = dict(layer(inputs))
    for k, x in res.items():
        if any(x is v for v in inputs.values()) and x.is_floating_point():
            res[k] = x.clone()
    if final:
        (name,) = layer.out_names
        return res, [loss_fn(res[name], labels)], [name]
    keys = [k for k in layer.out_names if res[k].is_floating_point() and res[k].requires_grad]
    return {k: res[k] for k in layer.out_names}, [res[k] for k in keys], keys


def _chain_samples(model, inputs0: tuple, labels, clock, o: ProfileOptions, loss_fn) -> list[tuple[list, ...]]:
    """Per layer: (F, I, W, B) samples in ms, each repeat a sweep of the whole model as one-layer
    stages: every layer's F in order, then every I in reverse (the gradient one layer's I returns is
    the next one's output gradient), then every W in reverse; then a second forward sweep and every
    fused B in reverse. Each layer thus runs with the caches the rest of the model leaves, as in a
    pipeline stage. A layer without floating inputs (the embedding) has no I and a whole backward as
    W, as PyTorch's first stage."""
    import torch
    from torch.distributed.pipelining._backward import (stage_backward, stage_backward_input,
                                                        stage_backward_weight)
    n = len(model.chain)
    samples: list[tuple[list, list, list, list]] = [([], [], [], []) for _ in range(n)]
    params = [list(model.chain[i].parameters()) for i in range(n)]

    def sweep_forward(timed: bool):
        recs, carry = [], dict(zip(model.layout_before(0), inputs0))
        for i in range(n):
            inp = _leaves(carry, model.layout_before(i))
            ms, (carry, outs, keys) = clock.time(lambda: _forward(model.chain[i], inp, i + 1 == n, labels, loss_fn))
            recs.append((inp, outs, keys, ms))
        return recs

    def out_grads(i, outs, keys, grad_in):
        if i + 1 == n:
            return None
        return [grad_in[k] if grad_in.get(k) is not None else torch.zeros_like(x) for k, x in zip(keys, outs)]

    for r in range(o.warmup + o.repeats):
        keep = r >= o.warmup
        recs = sweep_forward(True)
        grad_in: dict = {}
        pending = [None] * n
        times_i = [0.0] * n
        for i in reversed(range(n)):
            inp, outs, keys, _ = recs[i]
            names = model.layout_before(i)
            inputs = [inp[k] for k in names]
            grads = out_grads(i, outs, keys, grad_in)
            if any(x.requires_grad for x in inputs):
                times_i[i], (dinputs, groups) = clock.time(
                    lambda: stage_backward_input(outs, grads, inputs, iter(params[i])))
                pending[i] = ("weight", groups)
            else:
                dinputs = (None,) * len(names)
                pending[i] = ("full", (outs[0] if i + 1 == n else outs, grads, inputs))
            grad_in = dict(zip(names, dinputs))
        for i in reversed(range(n)):
            kind, arg = pending[i]
            if kind == "weight":
                w_ms, _ = clock.time(lambda: stage_backward_weight(iter(params[i]), arg))
            else:
                w_ms, _ = clock.time(lambda: stage_backward(*arg))
            if keep:
                samples[i][0].append(recs[i][3])
                samples[i][1].append(times_i[i])
                samples[i][2].append(w_ms)
        recs = sweep_forward(False)
        grad_in = {}
        for i in reversed(range(n)):
            inp, outs, keys, _ = recs[i]
            names = model.layout_before(i)
            inputs = [inp[k] for k in names]
            grads = out_grads(i, outs, keys, grad_in)
            b_ms, _ = clock.time(lambda: stage_backward(outs[0] if i + 1 == n else outs, grads, inputs))
            grad_in = {k: x.grad for k, x in zip(names, inputs) if isinstance(x, torch.Tensor) and x.requires_grad}
            if keep:
                samples[i][3].append(b_ms)
        for p in model.parameters():
            p.grad = None
    return samples


def _sweep_total(samples) -> float:
    """The median over repeats of one sweep's F + I + W over every layer."""
    repeats = len(samples[0][0])
    return statistics.median(sum(s[0][r] + s[1][r] + s[2][r] for s in samples) for r in range(repeats))


def sweep_ms(model: Any, rows: int, repeats: int = 2, warmup: int = 1, seed: int = 1234, seq: int | None = None,
             loss: Callable | None = None) -> float:
    """The load probe: the median ms of a sweep of ``model``'s layers (F, then I, then W of every
    layer, as method chain times them) on one microbatch of ``rows`` rows (of ``seq`` tokens, by
    default the reference model's), the last one's output scored by ``loss`` (by default the
    reference's). The same number as :attr:`ProfileResult.sweep_ms` when the machine is as loaded
    as during the profile; their ratio says how much slower compute runs now."""
    from .reference import loss_fn
    import torch
    loss_fn = loss or loss_fn
    g = torch.Generator().manual_seed(seed + 1)
    seq = seq or model.scale.seq
    tokens = torch.randint(0, model.vocab, (rows, seq), generator=g)
    labels = torch.randint(0, model.vocab, (rows, seq), generator=g)
    o = ProfileOptions(warmup=warmup, repeats=repeats)
    return _sweep_total(_chain_samples(model, model.step_inputs(tokens, labels), labels, _Clock("cpu"), o, loss_fn))


class _Reference:
    """Builds the reference model (or the user's) of the model YAML at ``path`` with its loss: what
    :func:`profile_model` measures, and what each background process of ``concurrent`` sweeps
    (picklable, so a spawned process builds its own)."""

    def __init__(self, path: str):
        self.path = path

    def __call__(self, options: ProfileOptions):
        from .reference import loss_fn
        model, _ = _build_model(load_model(self.path), options)
        return model, loss_fn


def _load_worker(make: Callable, options: ProfileOptions, ready, stop) -> None:
    """A background process of ``concurrent``: the same sweeps of the model ``make(options)`` builds
    (with its loss), untimed, until ``stop`` is set."""
    import torch
    torch.set_num_threads(options.threads)
    model, loss = make(options)
    g = torch.Generator().manual_seed(options.seed + 1)
    tokens = torch.randint(0, model.vocab, (options.rows, options.seq), generator=g).to(options.device)
    labels = torch.randint(0, model.vocab, (options.rows, options.seq), generator=g).to(options.device)
    once = dataclasses.replace(options, warmup=0, repeats=1)
    clock = _Clock(options.device)
    _chain_samples(model, model.step_inputs(tokens, labels), labels, clock, once, loss)
    ready.release()
    while not stop.is_set():
        _chain_samples(model, model.step_inputs(tokens, labels), labels, clock, once, loss)


def host_memory_available() -> tuple[int, str]:
    """(bytes this process may still allocate, where that number comes from): MemAvailable of
    /proc/meminfo, or what ``ulimit -v`` leaves when that is less (runtime/host_memory.h's rule)."""
    import resource
    avail, sources = None, []
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    sources.append(f"MemAvailable {avail / 1e9:.1f} GB")
                    break
    except (OSError, ValueError):
        pass
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        try:
            with open("/proc/self/statm", encoding="ascii") as f:
                mapped = int(f.read().split()[0]) * resource.getpagesize()
        except (OSError, ValueError, IndexError):
            mapped = 0
        left = max(0, soft - mapped)
        sources.append(f"ulimit -v leaves {left / 1e9:.1f} GB")
        avail = left if avail is None else min(avail, left)
    return (avail if avail is not None else 1 << 62), "; ".join(sources) or "no limit known"


def host_memory_estimate(spec: ModelSpec, o: ProfileOptions) -> tuple[int, str]:
    """A lower bound on the host bytes the profile of the reference model allocates, and what it is
    made of: the parameters and their gradients of what it builds (counted on PyTorch's meta device,
    so nothing is allocated: the whole model, or each type's first layer for ``single``), with
    ``chain`` every layer's output held for the backward sweep, and the largest single tensor a layer
    makes (the attention scores, the logits); on CUDA only the parameters, which the model holds on the
    host before it is moved. ``o`` has its width resolved (:func:`resolve_width`)."""
    import torch
    from .reference import ReferenceLayers, ReferenceTransformer
    scale = _scale(spec, o)
    dtype = getattr(torch, o.dtype)
    elem = torch.empty((), dtype=dtype).element_size()
    first_of: dict[str, int] = {}
    for i, layer in enumerate(spec.layers):
        first_of.setdefault(layer.symbol, i)
    if o.method == "single":
        built = ReferenceLayers(spec, first_of.values(), scale, seed=o.seed, dtype=dtype, device="meta")
    else:
        with torch.device("meta"):
            built = ReferenceTransformer(spec, scale, seed=o.seed, dtype=dtype)
    params = sum(p.numel() for p in built.parameters())
    tokens = o.rows * o.seq
    layers = len(spec.layers) if o.method == "chain" else 1
    held = layers * tokens * o.hidden * elem  # the carry after each layer, kept for the backward sweep
    biggest = tokens * scale.vocab * elem  # the logits of a head
    for m in built.modules():
        heads = getattr(m, "heads", None)
        if heads is not None and hasattr(m, "core"):
            biggest = max(biggest, o.rows * heads * o.seq * o.seq * elem)  # the scores of one attention
    if o.device == "cuda":  # built on the host, then moved: the gradients and activations live on the GPU
        return params * elem, f"{params / 1e9:.2f} B parameters {params * elem / 1e9:.1f} GB, built on the host"
    need = 2 * params * elem + held + biggest
    what = (f"{params / 1e9:.2f} B parameters and their gradients {2 * params * elem / 1e9:.1f} GB, "
            f"layer outputs {held / 1e9:.1f} GB, largest activation {biggest / 1e9:.1f} GB")
    return need, what


def check_host_memory(spec: ModelSpec, o: ProfileOptions) -> None:
    """Refuses (ProfileError) a profile whose :func:`host_memory_estimate` exceeds what the machine
    has available, before anything is allocated, as ``pipesmith profile --backend host`` does."""
    if o.user_model is not None or (o.device == "cuda" and o.method == "single"):
        return  # a user's model is not known here; single layers on CUDA are built on the GPU
    need, what = host_memory_estimate(spec, o)
    avail, sources = host_memory_available()
    if need > avail:
        raise ProfileError(f"profiling '{spec.name}' ({'full width' if o.full_width else f'hidden {o.hidden}'}, "
                           f"method {o.method}, {o.dtype}) needs at least {need / 1e9:.1f} GB of host memory ({what}), "
                           f"more than the {avail / 1e9:.1f} GB available ({sources})")


def profile_model(spec: ModelSpec, options: ProfileOptions = ProfileOptions(),
                  progress: Callable[[str], None] | None = None) -> ProfileResult:
    """Measures every layer type of ``spec`` that some layer uses (method: the module's docstring).
    With ``concurrent`` = N > 1, N - 1 other processes run the same sweeps meanwhile (spawned, each
    pinned to ``threads``), so the numbers are those of a machine as loaded as by N ranks."""
    _check_options(options)
    options = resolve_width(spec, options)
    check_host_memory(spec, options)
    return profile_built(spec, options, _Reference(spec.path), progress)


def profile_built(spec: ModelSpec, options: ProfileOptions, make: Callable,
                  progress: Callable[[str], None] | None = None) -> ProfileResult:
    """Measures every layer type of ``spec`` on the model ``make(options)`` builds, with its loss
    (``(model, loss_fn)``: the reference protocol, ``chain`` of layers speaking the carry layout;
    :mod:`pipesmith.torch.hf_profile` builds a transformers model's); ``make`` must be picklable
    when ``concurrent`` > 1, as each background process builds its own. ``options`` are checked and
    resolved by the caller."""
    if options.concurrent == 1:
        return _profile(spec, options, progress, make)
    import multiprocessing
    ctx = multiprocessing.get_context("spawn")
    ready, stop = ctx.Semaphore(0), ctx.Event()
    procs = [ctx.Process(target=_load_worker, args=(make, options, ready, stop), daemon=True)
             for _ in range(options.concurrent - 1)]
    for p in procs:
        p.start()
    try:
        for _ in procs:
            if not ready.acquire(timeout=600):
                raise ProfileError(f"the {options.concurrent - 1} background process(es) of concurrent did not start")
        return _profile(spec, options, progress, make)
    finally:
        stop.set()
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.terminate()


def _profile(spec: ModelSpec, options: ProfileOptions, progress, make: Callable) -> ProfileResult:
    import torch
    from torch.distributed.pipelining._backward import (stage_backward, stage_backward_input,
                                                        stage_backward_weight)
    from .reference import loss_fn as reference_loss
    o = options
    if o.device == "cuda" and not torch.cuda.is_available():
        raise ProfileError("--device cuda: this PyTorch sees no CUDA device "
                           f"(torch {torch.__version__}, built with CUDA {torch.version.cuda})")
    torch.set_num_threads(o.threads)
    torch.manual_seed(o.seed)
    first_of: dict[str, int] = {}
    for i, layer in enumerate(spec.layers):
        first_of.setdefault(layer.symbol, i)
    single = o.method == "single"
    if single:
        model, _ = _build_model(spec, o, only=first_of.values())
        loss_fn = reference_loss
    else:
        model, loss_fn = make(o)
    dev = torch.device(o.device)
    n = len(spec.layers)
    g = torch.Generator().manual_seed(o.seed + 1)
    tokens = torch.randint(0, model.vocab, (o.rows, o.seq), generator=g).to(dev)
    labels = torch.randint(0, model.vocab, (o.rows, o.seq), generator=g).to(dev)
    clock = _Clock(o.device)
    layer_at = model.layer if hasattr(model, "layer") else model.chain.__getitem__  # a user's model: its chain
    param_ptrs = {p.untyped_storage().data_ptr() for p in model.parameters()}
    # Tensors every layer of a stage shares (a transformers model's masks and rotary embeddings):
    # held once per stage, not per layer, so not a layer's activation memory.
    param_ptrs |= set(getattr(model, "shared_storages", lambda: ())())
    # The carry before every profiled layer: computed once without gradients through the model, or
    # (single) random tensors of the carry's shapes.
    carries: dict[int, dict] = {}
    if single:
        for i in first_of.values():
            carries[i] = model.carry_before(i, o.rows, seed=o.seed + 2, device=dev)
            if "labels" in carries[i]:
                carries[i]["labels"] = labels
    else:
        with torch.no_grad():
            carry = dict(zip(model.layout_before(0), model.step_inputs(tokens, labels)))
            for i in range(n):
                carries[i] = carry
                carry = layer_at(i)(carry)
                carry = {k: carry[k] for k in model.layout_after(i)} if i + 1 < n else carry
    chain = []
    if o.method == "chain":
        if progress:
            progress(f"timing {o.warmup} + {o.repeats} sweeps of the model's {n} layers")
        chain = _chain_samples(model, model.step_inputs(tokens, labels), labels, clock, o, loss_fn)
    out: list[TypeProfile] = []
    for sym, i in sorted(first_of.items(), key=lambda kv: kv[1]):
        t = spec.types[sym]
        if progress:
            progress(f"profiling layer type '{sym}' ({t.name}) on layer {i}")
        layer = layer_at(i)
        params = list(layer.parameters())
        final = i + 1 == n
        in_names = model.layout_before(i)

        def fresh_inputs():
            c = {}
            for k in in_names:
                v = carries[i][k]
                c[k] = v.detach().clone().requires_grad_(True) if v.is_floating_point() else v
            return c

        def forward(c):
            _, outs, keys = _forward(layer, c, final, labels, loss_fn)
            if final:
                return outs, None
            return outs, [torch.randn_like(x) for x in outs]

        def fused(outs):  # stage_backward takes the last stage's loss as a tensor, other outputs as a list
            return outs[0] if final else outs

        grad_inputs = any(carries[i][k].is_floating_point() for k in in_names)
        fs, is_, ws, bs = [], [], [], []
        if o.method == "chain":
            for j, lay in enumerate(spec.layers):
                if lay.symbol == sym:
                    for dst, src in zip((fs, is_, ws, bs), chain[j]):
                        dst.extend(src)
        for r in range(o.warmup + o.repeats if o.method != "chain" else 0):
            c = fresh_inputs()
            inputs = [c[k] for k in in_names]
            f_ms, (outs, grads) = clock.time(lambda: forward(c))
            if grad_inputs:
                i_ms, (_, groups) = clock.time(lambda: stage_backward_input(outs, grads, inputs, iter(params)))
                w_ms, _ = clock.time(lambda: stage_backward_weight(iter(params), groups))
            else:  # as PyTorch's first stage: no I, and W is the whole backward
                i_ms = 0.0
                w_ms, _ = clock.time(lambda: stage_backward(fused(outs), grads, inputs))
            c = fresh_inputs()
            inputs = [c[k] for k in in_names]
            outs, grads = forward(c)
            b_ms, _ = clock.time(lambda: stage_backward(fused(outs), grads, inputs))
            if r >= o.warmup:
                fs.append(f_ms)
                is_.append(i_ms)
                ws.append(w_ms)
                bs.append(b_ms)
            for p in params:
                p.grad = None
        # Memory: one untimed repeat with every saved tensor followed.
        tracker = _SavedBytes(param_ptrs)
        c = fresh_inputs()
        inputs = [c[k] for k in in_names]
        with torch.autograd.graph.saved_tensors_hooks(tracker.pack, tracker.unpack):
            outs, grads = forward(c)
        after_f = tracker.live_bytes()
        if grad_inputs:
            _, groups = stage_backward_input(outs, grads, inputs, iter(params))
            kept = [x for grp in groups for gt in (grp.get("grads") or ()) for x in (gt or ()) if x is not None]
            after_i = tracker.live_bytes(kept)
            del groups, kept
        else:  # no I: everything F saved is held until W
            after_i = after_f
        del outs, grads
        handed = []
        if not final:
            res = layer(fresh_inputs())
            skip_before = {f"skip{k}" for k in range(i)}
            seen = set()
            for k in layer.out_names:
                x = res[k]
                if k in skip_before or x.untyped_storage().data_ptr() in seen:
                    continue
                seen.add(x.untyped_storage().data_ptr())
                handed.append(x.numel() * x.element_size())
        for p in params:
            p.grad = None
        med = statistics.median
        walk = 0.0
        if o.method == "chain" and grad_inputs and hasattr(model, "stage"):
            walk = _weight_walk_ms(model, i, carries[i], chain, clock, o, progress)
        out.append(TypeProfile(symbol=sym, name=t.name, layer=i, forward_ms=med(fs), backward_input_ms=med(is_),
                               backward_weight_ms=med(ws), backward_ms=med(bs),
                               activation_mb=max(after_f, after_i) / 1e6, wgrad_stash_mb=after_i / 1e6,
                               output_mb=sum(handed) / 1e6, params_m=sum(p.numel() for p in params) / 1e6,
                               samples=len(fs), weight_walk_ms=walk))
    if o.device == "cuda":
        where = f"cuda:{torch.cuda.current_device()} {torch.cuda.get_device_name()}, torch {torch.__version__}"
    else:
        where = f"cpu, {torch.get_num_threads()} thread(s), torch {torch.__version__}"
    unused = tuple(sorted(s for s in spec.types if s not in first_of))
    return ProfileResult(model=spec.name, where=where, options=o, types=tuple(out), unprofiled=unused,
                         sweep_ms=_sweep_total(chain) if chain else 0.0)


WALK_LAYERS = 8  # the stage whose split W the walk is measured on: up to this many layers


def _weight_walk_ms(model, first: int, carry: dict, chain, clock, o: ProfileOptions, progress) -> float:
    """A split W's extra time per layer before it in its stage (the type's ``weight_walk_ms``): the W of
    the stage of up to WALK_LAYERS layers from ``first`` (the model's last layer, whose loss ends the
    step, excluded), timed as PyTorch's runtime runs it, less the sum of the same layers' one-layer W
    (the chain's medians), over the k(k-1)/2 pairs of its layers; 0 when that is not positive or the
    stage has one layer."""
    import torch
    from torch.distributed.pipelining._backward import stage_backward_input, stage_backward_weight
    n = len(model.chain)
    last = min(first + WALK_LAYERS - 1, n - 2)
    k = last - first + 1
    if k < 2:
        return 0.0
    if progress:
        progress(f"timing the split W of layers {first}..{last} as one stage")
    stage = model.stage(first, last)
    params = list(stage.parameters())
    names = model.layout_before(first)
    ws = []
    for r in range(o.warmup + o.repeats):
        inputs = [carry[nm].detach().clone().requires_grad_(True) if carry[nm].is_floating_point() else carry[nm]
                  for nm in names]
        res = stage(*inputs)
        res = list(res) if isinstance(res, tuple) else [res]
        outs = [x for x in res if x.is_floating_point() and x.requires_grad]
        grads = [torch.randn_like(x) for x in outs]
        floats = [x for x in inputs if x.is_floating_point()]
        _, groups = stage_backward_input(outs, grads, floats, iter(params))
        w_ms, _ = clock.time(lambda: stage_backward_weight(iter(params), groups))
        if r >= o.warmup:
            ws.append(w_ms)
        for p in params:
            p.grad = None
    one_layer = sum(statistics.median(chain[j][2]) for j in range(first, last + 1))
    return max(0.0, (statistics.median(ws) - one_layer) / (k * (k - 1) / 2))
