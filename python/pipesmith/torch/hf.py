"""Pipeline stages straight from a Hugging Face ``transformers`` causal LM and a pipesmith plan.

    model = AutoModelForCausalLM.from_config(config)          # or from_pretrained(...)
    modules = hf.stage_modules(model, plan, rank)             # this rank's stages, ascending
    stages = pipeline.make_stages(modules, plan, rank, device)
    schedule = pipeline.build_schedule(stages, plan, "compute_only", hf.causal_lm_loss)

How a stage computes. A stage holds some of the model's own modules, by the names the plan lists
(``model.embed_tokens``, ``model.layers.N``, ``model.norm``, ``lm_head``; what ``pipesmith import hf``
writes), registered under those names, so ``stage.named_parameters()`` are the model's names and the
stage trains the model's own parameters (no copies: an optimizer on ``model.parameters()`` trains
them). Its forward runs *the model's own forward* with the decoder layers of other stages replaced
by pass-through stand-ins: the base model's ``forward`` makes the position ids, one mask per layer
kind (``config.layer_types``: full, sliding, chunked, linear/Mamba), the rotary embeddings and any
scaling of the embeddings exactly as it does unpipelined, and passes them to this stage's layers;
the stage that holds the head runs the ``*ForCausalLM`` forward to its end (final norm, ``lm_head``,
the family's post-processing such as Gemma's logit soft-capping or Nemotron-H's float32 logits).
Concretely:

* the first stage takes the token ids; every other stage takes the hidden state the previous stage
  sent, and the model's forward is called with a zero ``inputs_embeds`` of that shape (it fixes the
  shapes and dtype the masks and rotary embeddings are made for) while the stage's first layer (or,
  on a head-only stage, the final norm) is handed the received hidden state instead;
* a stage that does not hold the head stops at the first layer after its own (or at the final norm)
  and returns the hidden state that module would have received;
* the last stage returns the logits as the model's forward returns them.

So whatever the family computes around its layers comes from transformers itself; what pipesmith
needs from the model is the ``*ForCausalLM`` layout: ``base_model.layers`` an ``nn.ModuleList``,
``get_input_embeddings()``, ``get_output_embeddings()`` and a forward that accepts
``inputs_embeds``. :func:`check_names` refuses a plan whose module names the model lacks before
anything runs, naming the closest names it has.

Tied parameters (``tie_word_embeddings``: the embedding and ``lm_head`` share one weight): when the
plan records the tie (``plan.json`` ``tied_parameters``), :func:`pipesmith.torch.pipeline.build_schedule`
sums the tied gradients over the ranks that hold them after every ``schedule.step``; a model whose
ties differ from the plan's is refused (:func:`check_ties`).

The loss: :func:`causal_lm_loss` is transformers' own causal-LM loss (labels shifted by one within a
sequence, ignore index -100, mean over the microbatch's counted tokens, computed in float32 as
transformers does whatever the model's dtype). :func:`batch_loss` divides by the whole batch's count
instead, which equals ``model(input_ids, labels=labels).loss`` exactly when microbatches hold
different numbers of ignored labels. MoE router auxiliary losses (``config.output_router_logits``)
are refused: they are not separable over stages.
"""
from __future__ import annotations

import difflib
from typing import Callable, Sequence

import torch
from torch import nn

from .pipeline import PipelineBuildError
from .plan import Plan

IGNORE_INDEX = -100  # transformers' ignore index for labels


class _Handoff(Exception):
    """Raised inside the model's forward where a stage ends; carries the hidden state it got."""

    def __init__(self, hidden: torch.Tensor):
        super().__init__("stage boundary")
        self.hidden = hidden


class _PassThrough(nn.Module):
    """Stands in for a layer of another stage: returns its hidden-state input unchanged. Attribute
    reads the model's forward makes (``attention_type``, ``block_type``, ``layer_idx``) go to the real
    layer."""

    def __init__(self, real: nn.Module):
        super().__init__()
        object.__setattr__(self, "_real", real)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(object.__getattribute__(self, "_real"), name)

    def forward(self, hidden_states, *args, **kwargs):
        return hidden_states


class _Stop(_PassThrough):
    """The module right after a stage's last one: ends the forward, handing out its input."""

    def forward(self, hidden_states, *args, **kwargs):
        raise _Handoff(hidden_states)


class _Inject(_PassThrough):
    """A stage's first module: runs the real one on the hidden state the stage received, in place of
    what the model's forward hands it (the forward ran on a zero stand-in up to here)."""

    def __init__(self, real: nn.Module, hidden: torch.Tensor):
        super().__init__(real)
        object.__setattr__(self, "_hidden", hidden)

    def forward(self, hidden_states, *args, **kwargs):
        return object.__getattribute__(self, "_real")(object.__getattribute__(self, "_hidden"), *args, **kwargs)


class Layout:
    """Where a ``*ForCausalLM`` keeps its parts, by the names ``named_modules()`` gives them."""

    def __init__(self, model: nn.Module):
        base = getattr(model, "base_model", None)
        if base is None or base is model:
            raise PipelineBuildError(f"{type(model).__name__} is not a transformers *ForCausalLM (no base model "
                                     "under it, `base_model_prefix`)")
        layers = getattr(base, "layers", None)
        if not isinstance(layers, nn.ModuleList):
            raise PipelineBuildError(f"{type(model).__name__}: pipesmith.torch.hf needs the decoder layers as an "
                                     f"nn.ModuleList `{model.base_model_prefix}.layers`")
        self.model, self.base, self.layers = model, base, layers
        names = {id(m): n for n, m in model.named_modules()}
        self.prefix = names[id(base)]
        self.embed = self._name(names, model.get_input_embeddings(), "the input embedding")
        self.head = self._name(names, model.get_output_embeddings(), "the output embedding (lm_head)")
        self.layer_names = [f"{self.prefix}.layers.{i}" for i in range(len(layers))]
        # The final norm(s): the base model's other children with parameters.
        self.norms = [f"{self.prefix}.{n}" for n, m in base.named_children()
                      if m is not layers and f"{self.prefix}.{n}" != self.embed
                      and any(True for _ in m.parameters())]
        self.parts = [self.embed, *self.layer_names, *self.norms, self.head]  # in forward order
        # The base model's children without parameters that every stage's forward uses (the rotary
        # embedding and its buffers): each stage registers them too, so that moving a stage to a
        # device moves them.
        self.shared = [f"{self.prefix}.{n}" for n, m in base.named_children()
                       if m is not layers and not any(True for _ in m.parameters())]

    @staticmethod
    def _name(names, module, what):
        if module is None or id(module) not in names:
            raise PipelineBuildError(f"the model has no {what} transformers can name")
        return names[id(module)]


def _closest(name: str, candidates: Sequence[str]) -> list[str]:
    return difflib.get_close_matches(name, candidates, n=3, cutoff=0.5)


def check_names(model: nn.Module, plan: Plan) -> None:
    """Refuses a plan naming modules ``model`` lacks: raises :class:`PipelineBuildError` listing each
    missing name with the closest names the model has (a transformers model: the names a plan may
    use, ``model.layers.N`` and the like; any other module: its module names). A stage without module
    names (a model YAML without ``module:``) is refused too."""
    try:
        candidates = Layout(model).parts
    except PipelineBuildError:
        candidates = [n for n, _ in model.named_modules() if n]
    have = set(n for n, _ in model.named_modules())
    missing, unnamed = [], []
    for st in plan.stages:
        if st.modules is None:
            unnamed.append(st.index)
            continue
        missing += [(st.index, n) for n in st.modules if n not in have]
    if unnamed:
        raise PipelineBuildError(f"{plan.path}: stage(s) {unnamed} name no modules (the model YAML has no "
                                 "`module:` per layer; `pipesmith import hf` writes them)")
    if missing:
        lines = []
        for s, n in missing[:8]:
            near = _closest(n, candidates)
            lines.append(f"stage {s}: '{n}'" + (f" (closest: {', '.join(near)})" if near else ""))
        more = f"; and {len(missing) - 8} more" if len(missing) > 8 else ""
        raise PipelineBuildError(f"{plan.path}: {len(missing)} module name(s) of the plan are not in the model "
                                 f"{type(model).__name__}: {'; '.join(lines)}{more}{_mtp_hint(model, missing)}")


def _mtp_hint(model: nn.Module, missing: list[tuple[int, str]]) -> str:
    """Why a plan of a config with multi-token-prediction modules names layers past the model's last:
    the checkpoint holds them as ``model.layers.N`` (N >= num_hidden_layers), transformers builds none."""
    config = getattr(model, "config", None)
    n = getattr(config, "num_hidden_layers", None)
    mtp = getattr(config, "num_nextn_predict_layers", 0) or getattr(config, "mtp_num_hidden_layers", 0) or 0
    if not n or not mtp:
        return ""
    past = [name for _, name in missing
            if name.startswith("model.layers.") and name[len("model.layers."):].isdigit()
            and int(name[len("model.layers."):]) >= n]
    if not past:
        return ""
    return (f". {', '.join(sorted(set(past)))}: the config's {mtp} multi-token-prediction (MTP) module(s), which "
            "the checkpoint holds as layers past the last decoder layer and transformers does not build; "
            "import a copy of the config with num_nextn_predict_layers: 0 (the MTP layers then leave the plan)")


def model_ties(model: nn.Module) -> list[tuple[str, ...]]:
    """Groups of parameter names that are one tensor in ``model`` (sorted, each group sorted)."""
    by_id: dict[int, list[str]] = {}
    for n, p in model.named_parameters(remove_duplicate=False):
        by_id.setdefault(id(p), []).append(n)
    return sorted(tuple(sorted(v)) for v in by_id.values() if len(v) > 1)


def check_ties(model: nn.Module, plan: Plan) -> None:
    """The model's tied parameters must be the plan's (``tied_parameters``), whatever ranks hold them:
    an unrecorded tie would train each side on its own part of the gradient."""
    mine = model_ties(model)
    planned = sorted(tuple(sorted(t.names)) for t in plan.tied_parameters)
    if mine != planned:
        raise PipelineBuildError(f"{plan.path}: the model ties {[list(t) for t in mine] or 'no parameters'}, the "
                                 f"plan records {[list(t) for t in planned] or 'no tie'} (plan.json "
                                 "'tied_parameters', from the model YAML's tied_embeddings): make the plan from "
                                 "a model YAML that matches the model's tie_word_embeddings")


def _stage_parts(layout: Layout, plan: Plan) -> list[list[str]]:
    """Each stage's names, checked: every part of the model in exactly one stage, in forward order."""
    order = {n: i for i, n in enumerate(layout.parts)}
    out, seen = [], []
    for st in plan.stages:
        problems = st.whole_module_problems()
        if problems:
            raise PipelineBuildError(f"stage {st.index} (rank {st.rank}) cannot be built from the model's modules: "
                                     f"{'; '.join(problems)}. Make the plan with `synth --cuts layers` and an "
                                     "unsharded head")
        names = list(st.modules)
        stray = [n for n in names if n not in order]
        if stray:
            raise PipelineBuildError(f"stage {st.index}: '{stray[0]}' is a module of the model but not one a stage "
                                     f"holds whole (the stages hold {layout.embed}, {layout.prefix}.layers.N, "
                                     f"{', '.join(layout.norms + [layout.head])})")
        seen += names
        out.append(names)
    if seen != layout.parts:
        want = [n for n in layout.parts if n not in seen]
        extra = sorted({n for n in seen if seen.count(n) > 1})
        detail = (f"missing {want[:4]}" if want else f"held twice {extra[:4]}" if extra else
                  "not in the model's forward order")
        raise PipelineBuildError(f"{plan.path}: the stages must hold the model's parts once each, in forward "
                                 f"order ({layout.embed}, {layout.prefix}.layers.0..{len(layout.layer_names) - 1}, "
                                 f"{', '.join(layout.norms + [layout.head])}): {detail}")
    for names in out:  # the final norm and the head go together: the model's forward runs them in one piece
        tail = [n for n in names if n in layout.norms or n == layout.head]
        if tail and tail != layout.norms + [layout.head]:
            raise PipelineBuildError(f"{plan.path}: {', '.join(layout.norms)} and {layout.head} must be on one stage")
    return out


def _check_config(model: nn.Module) -> None:
    cfg = model.config
    if getattr(cfg, "output_router_logits", False):
        raise PipelineBuildError(f"{type(model).__name__}: config.output_router_logits is true: the router's "
                                 "auxiliary loss averages over every MoE layer of the whole model, which no stage "
                                 "can compute alone; set config.output_router_logits = False")
    if getattr(model, "gradient_checkpointing", False) or getattr(model.base_model, "gradient_checkpointing", False):
        raise PipelineBuildError("the model has transformers' gradient checkpointing on: use the plan's recompute "
                                 "mode (make_stages applies it) and model.gradient_checkpointing_disable()")


class HFStage(nn.Module):
    """One stage of a transformers causal LM: the model's own modules named by the plan, registered
    under the model's names; ``forward`` runs the model's own forward through them (module docstring)."""

    def __init__(self, layout: Layout, names: Sequence[str], index: int):
        super().__init__()
        object.__setattr__(self, "_layout", layout)
        self.stage_index = index
        self.plan_modules = tuple(names)
        for n in [*names, *layout.shared]:
            node = self
            *path, leaf = n.split(".")
            for p in path:
                if p not in node._modules:
                    node.add_module(p, nn.Module())
                node = node._modules[p]
            node.add_module(leaf, layout.model.get_submodule(n))
        lay = [layout.layer_names.index(n) for n in names if n in layout.layer_names]
        self.first_layer = lay[0] if lay else None
        self.last_layer = lay[-1] if lay else None
        self.has_embed = layout.embed in names
        self.has_head = layout.head in names

    def extra_repr(self) -> str:
        return f"stage {self.stage_index}: {', '.join(self.plan_modules)}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lo = object.__getattribute__(self, "_layout")
        swaps = self._stand_ins(lo, x)  # (parent, attribute, module in its place for this call)
        kwargs = {"input_ids": x} if self.has_embed else {"inputs_embeds": torch.zeros_like(x)}
        saved = [(parent, attr, parent._modules[attr]) for parent, attr, _ in swaps]
        try:
            for parent, attr, m in swaps:
                parent._modules[attr] = m
            if self.has_head:
                return lo.model(**kwargs, use_cache=False).logits
            try:
                lo.base(**kwargs, use_cache=False)
            except _Handoff as h:
                return h.hidden
            raise AssertionError(f"stage {self.stage_index}: the model's forward ended without reaching the stage's end")
        finally:
            for parent, attr, m in reversed(saved):
                parent._modules[attr] = m

    def _stand_ins(self, lo: Layout, x: torch.Tensor) -> list[tuple[nn.Module, str, nn.Module]]:
        """What the model's forward runs in place of its own modules for this stage: the decoder
        layers list with the other stages' layers passed through, the stage's first module handed
        ``x`` (unless the stage starts at the embedding), and the module after the stage's last one
        ending the forward (unless the stage holds the head)."""
        real = list(lo.layers)
        layers: list[nn.Module] = [_PassThrough(m) for m in real]
        swaps: list[tuple[nn.Module, str, nn.Module]] = []
        a, b = self.first_layer, self.last_layer
        if a is not None:
            layers[a:b + 1] = real[a:b + 1]
            if not self.has_embed:
                layers[a] = _Inject(real[a], x)
        after = 0 if b is None else b + 1  # the first decoder layer after the stage
        if not self.has_head:
            if after < len(real):
                layers[after] = _Stop(real[after])
            else:  # the stage ends with the last decoder layer: stop at the final norm
                swaps.append((*_slot(lo.model, lo.norms[0]), _Stop(lo.model.get_submodule(lo.norms[0]))))
        elif a is None and not self.has_embed:  # the head alone: the final norm takes the received state
            first = (lo.norms or [lo.head])[0]
            swaps.append((*_slot(lo.model, first), _Inject(lo.model.get_submodule(first), x)))
        swaps.append((lo.base, "layers", nn.ModuleList(layers)))
        return swaps


def _slot(model: nn.Module, name: str) -> tuple[nn.Module, str]:
    """(parent module, attribute) of ``model``'s submodule ``name``."""
    parent, _, attr = name.rpartition(".")
    return (model.get_submodule(parent) if parent else model), attr


def stage_modules(model: nn.Module, plan: Plan, rank: int) -> list[nn.Module]:
    """The modules of ``rank``'s stages (ascending), built from a transformers ``*ForCausalLM`` by the
    plan's module names; each is an :class:`HFStage` holding the model's own parameters. Refuses,
    before anything runs, a plan whose names the model lacks (:func:`check_names`), whose stages are
    not whole modules in forward order, whose ties are not the model's (:func:`check_ties`), and a
    model whose config asks for what stages cannot compute (router auxiliary losses)."""
    if not 0 <= rank < plan.devices:
        raise PipelineBuildError(f"rank {rank}: the plan has ranks 0..{plan.devices - 1}")
    check_names(model, plan)
    layout = Layout(model)
    parts = _stage_parts(layout, plan)
    check_ties(model, plan)
    _check_config(model)
    return [HFStage(layout, parts[s], s) for s in plan.rank_to_stages[rank]]


def causal_lm_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The loss ``*ForCausalLM`` computes with ``labels=``: transformers' ``ForCausalLMLoss`` (labels
    shifted by one within each sequence, ignore index -100, mean over the counted tokens, in float32)."""
    from transformers.loss.loss_utils import ForCausalLMLoss
    return ForCausalLMLoss(logits, labels, vocab_size=logits.shape[-1], ignore_index=IGNORE_INDEX)


def batch_loss(labels: torch.Tensor, microbatches: int) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """A loss function for a schedule whose batch is ``labels`` (all microbatches): each microbatch's
    summed loss divided by the batch's counted tokens / ``microbatches``, so that the runtime's mean
    over microbatches is ``model(input_ids, labels=labels).loss`` also when microbatches hold
    different numbers of ignored labels (ignore index -100)."""
    from transformers.loss.loss_utils import ForCausalLMLoss
    counted = (labels[..., 1:] != IGNORE_INDEX).sum().item()
    if counted == 0:
        raise ValueError("labels: every label is the ignore index -100")
    per_mb = torch.tensor(counted / microbatches, dtype=torch.float64)

    def loss(logits, target):
        return ForCausalLMLoss(logits, target, vocab_size=logits.shape[-1], ignore_index=IGNORE_INDEX,
                               num_items_in_batch=per_mb)
    return loss


DTYPES = {"float64": torch.float64, "float32": torch.float32, "bfloat16": torch.bfloat16}


def _shrink(cfg: dict, layers: int | None, hidden: int | None, vocab: int | None) -> dict:
    """A config.json dict made smaller: ``layers`` decoder layers (per-layer lists cut to length),
    ``hidden`` hidden units (head size, attention heads (at most 4), FFN and expert widths scaled
    with it, Mamba heads and state small), ``vocab`` tokens (special token ids past it dropped);
    routed experts capped at 8."""
    c = dict(cfg)
    if layers is not None:
        old = int(c.get("num_hidden_layers") or 0)
        for k, v in list(c.items()):
            if isinstance(v, list) and old and len(v) == old:
                c[k] = v[:layers]
            if k == "hybrid_override_pattern" and isinstance(v, str):
                c[k] = v[:layers]
            if k == "mlp_only_layers" and isinstance(v, list):
                c[k] = [i for i in v if isinstance(i, int) and i < layers]
        c["num_hidden_layers"] = layers
    if hidden is not None:
        h0 = int(c.get("hidden_size") or hidden)
        r = hidden / h0
        heads = max(1, min(int(c.get("num_attention_heads") or 1), 4))
        kv0 = int(c.get("num_key_value_heads") or c.get("num_attention_heads") or 1)
        kv = max(1, min(heads, round(heads * kv0 / max(1, int(c.get("num_attention_heads") or 1)))))
        while heads % kv:
            kv -= 1
        c["hidden_size"] = hidden
        c["num_attention_heads"] = heads
        if "num_key_value_heads" in c:
            c["num_key_value_heads"] = kv
        hd = max(2, hidden // heads)
        hd += hd % 2
        for k in ("head_dim", "attention_head_dim"):
            if k in c:
                c[k] = hd
        for k, v in list(c.items()):
            if k.endswith("intermediate_size") and isinstance(v, int) and v > 0:
                c[k] = max(2, round(v * r))
        for k in ("num_local_experts", "num_experts", "n_routed_experts"):
            if isinstance(c.get(k), int) and c[k] > 8:
                top = int(c.get("num_experts_per_tok") or c.get("experts_per_token") or 1)
                for t in ("num_experts_per_tok", "experts_per_token"):
                    if t in c:
                        c[t] = max(1, min(8, round(top * 8 / c[k])))
                c[k] = 8
        if "mamba_num_heads" in c:
            c["mamba_num_heads"] = 4
            c["mamba_head_dim"] = max(2, hidden // 4)
            c["n_groups"] = 1
            c["ssm_state_size"] = min(int(c.get("ssm_state_size") or 8), 8)
        for k in ("n_group", "topk_group"):
            if k in c:
                c[k] = 1
        if "kv_lora_rank" in c:  # DeepSeek's latent attention
            for k in ("kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
                if c.get(k):
                    c[k] = max(2, round(c[k] * r)) + (max(2, round(c[k] * r)) % 2)
    if vocab is not None:
        c["vocab_size"] = vocab
        for k in ("pad_token_id", "bos_token_id", "eos_token_id"):
            v = c.get(k)
            if isinstance(v, int) and v >= vocab or isinstance(v, list) and any(x >= vocab for x in v):
                c[k] = None
    return c


def read_config(path: str, error: type[Exception] = PipelineBuildError) -> dict:
    """The ``config.json`` at ``path`` as a dict, read as transformers reads it (it decodes the
    ``{"__float__": "Infinity"}`` its writer saves). Raises ``error`` naming the file for one that
    cannot be read, is not JSON, or is not an object with a ``model_type``."""
    import json

    try:
        import transformers
    except ImportError as e:
        raise error(f"{path}: reading a transformers config needs the transformers package "
                    f"(python/requirements.txt; scripts/install-deps installs it): {e}") from None
    try:
        raw = transformers.PretrainedConfig._dict_from_json_file(path)
    except OSError as e:
        raise error(f"{path}: cannot read: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise error(f"{path}: not a JSON config: {e}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("model_type"), str):
        raise error(f"{path}: a config.json is an object with a 'model_type'")
    return raw


def model_from_config(path: str, layers: int | None = None, hidden: int | None = None, vocab: int | None = None,
                      dtype: torch.dtype = torch.float64, seed: int = 1234) -> nn.Module:
    """The ``*ForCausalLM`` transformers builds for the ``config.json`` at ``path``, with random weights
    (``seed``), optionally shrunk (:func:`_shrink`), in ``dtype``, with transformers' eager attention and
    experts (no fused or hub kernels: nothing is downloaded) and no KV cache. Raises
    :class:`PipelineBuildError` naming the file for a config transformers cannot build."""
    try:
        import transformers
    except ImportError as e:
        raise PipelineBuildError(f"{path}: building a transformers model needs the transformers package "
                                 f"(python/requirements.txt; scripts/install-deps installs it): {e}") from None
    raw = read_config(path)
    if isinstance(raw.get("text_config"), dict):
        raise PipelineBuildError(f"{path}: a multimodal config (text_config): --hf builds causal LMs; give the "
                                 "text model's own config")
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    if raw["model_type"] not in CONFIG_MAPPING:
        near = difflib.get_close_matches(raw["model_type"], list(CONFIG_MAPPING.keys()), n=3, cutoff=0.6)
        raise PipelineBuildError(f"{path}: transformers {transformers.__version__} has no model_type "
                                 f"'{raw['model_type']}'" + (f" (closest: {', '.join(near)})" if near else "")
                                 + ": it builds no model of that family")
    cfg = _shrink(raw, layers, hidden, vocab)
    cfg.pop("architectures", None)
    cfg.pop("torch_dtype", None)
    cfg.pop("dtype", None)
    cfg.pop("quantization_config", None)
    try:
        config = transformers.AutoConfig.for_model(cfg.pop("model_type"), **cfg)
        config._attn_implementation = "eager"
        config._experts_implementation = "eager"
        config.use_cache = False
        torch.manual_seed(seed)
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
    except (ValueError, KeyError, TypeError, AttributeError, RuntimeError) as e:
        raise PipelineBuildError(f"{path}: transformers {transformers.__version__} cannot build a causal LM from "
                                 f"it: {type(e).__name__}: {e}") from None
    model.train()
    return model
