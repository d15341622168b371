"""A reference transformer built from a pipesmith model YAML, at a small width.

Every pipesmith layer of the model (a whole decoder layer, a sublayer of a ``joins_next`` group, a
piece of a split MLP, a vocabulary shard of the head) is one module, and the model is the chain of
them, so every cut a plan makes is a module boundary. The numbers come from the YAML's
``architecture:`` scaled down (:class:`Scale`): the hidden size becomes ``Scale.hidden``, head
counts are capped, FFN widths keep their ratio to the hidden size, the vocabulary and sequence become
small, windows keep their ratio to the sequence.

Components (one per analytic kind component, docs/inputs.md): embedding; RMSNorm; attention with
grouped KV heads, RoPE and an optional sliding window; gated (SwiGLU) or squared-ReLU MLP; MoE with a
softmax router, top-k routed experts and shared experts; a gated diagonal-recurrence stand-in for
Mamba; causal linear attention for linear-attention kinds; an MTP projection reading its extra
inputs; the LM head with cross-entropy, or a chain of vocabulary shards computing the loss with an
online log-sum-exp.

Between layers a tuple of tensors flows (the *carry*), whose layout :func:`boundary_layout` fixes
per boundary: the hidden state ``h``, and where later layers need them the labels, the partial sum of
a split MLP, the running log-sum-exp and target logit of a sharded head, the per-token loss of an
earlier head (``aux``), and skip inputs (``skip{k}``: layer k's output for a later layer's
``inputs:``). :class:`StageModule` chains layers ``first..last`` and speaks that layout, which is what
``torch.distributed.pipelining.PipelineStage`` sends between stages.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Iterable, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from .model_yaml import ModelFileError, ModelSpec

SUPPORTED = {"embedding", "attention", "linear_attention", "mlp", "moe", "mamba", "head",
             "mtp_projection"}


@dataclasses.dataclass(frozen=True)
class Scale:
    """How the architecture is shrunk."""

    hidden: int = 16         # hidden size of the reference
    max_heads: int = 4       # attention heads are capped at this
    vocab: int = 64          # vocabulary (rounded up to a multiple of every shard count)
    seq: int = 8             # tokens per sequence
    max_experts: int = 8     # routed experts are capped at this (top-k kept below it)
    routed: bool = False     # MoE: run each expert on its routed tokens only (unrouted experts get no
                             # gradient); False runs every expert on every token (zero-weighted)

    @staticmethod
    def full(arch: dict) -> "Scale":
        """The architecture's own width: hidden size, heads, vocabulary, sequence, experts, routed MoE."""
        need = {k: int(arch.get(k, 0) or 0) for k in ("hidden_size", "vocab_size", "seq_length")}
        missing = [k for k, v in need.items() if v <= 0]
        if missing or need["vocab_size"] < 2:
            raise ModelFileError(f"architecture.{', '.join(missing or ['vocab_size'])}: a full-width model needs "
                                 "hidden_size, vocab_size (>= 2) and seq_length > 0")
        return Scale(hidden=need["hidden_size"], max_heads=1 << 20, vocab=need["vocab_size"],
                     seq=need["seq_length"], max_experts=1 << 20, routed=True)


@dataclasses.dataclass(frozen=True)
class Dims:
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    moe_ffn: int
    experts: int
    top_k: int
    shared: int
    window: int
    vocab: int
    seq: int
    gated: bool
    state: int
    routed: bool
    causal: bool = True      # False: every token attends to every other (a vision encoder)


def _dims(arch: dict, scale: Scale, vocab: int) -> Dims:
    h = int(arch.get("hidden_size", 0) or 0)
    if h <= 0:
        raise ModelFileError("architecture.hidden_size is required to build the reference model")
    r = scale.hidden / h
    a = int(arch.get("num_attention_heads", 1) or 1)
    heads = max(1, min(a, scale.max_heads))
    kv0 = int(arch.get("num_kv_heads", a) or a)
    kv = max(1, min(heads, round(heads * kv0 / a)))
    while heads % kv:
        kv -= 1
    head_dim = max(2, scale.hidden // heads)
    if r == 1 and heads == a and int(arch.get("head_dim", 0) or 0) > 0:  # full width: its own head size
        head_dim = int(arch["head_dim"])
    head_dim += head_dim % 2  # RoPE rotates pairs
    ffn = max(2, round(int(arch.get("ffn_hidden_size", 4 * h) or 4 * h) * r))
    moe_ffn = max(2, round(int(arch.get("moe_ffn_hidden_size", arch.get("ffn_hidden_size", 4 * h))) * r))
    experts = int(arch.get("moe_num_experts", 0) or 0)
    top_k = int(arch.get("moe_top_k", 0) or 0)
    if experts > scale.max_experts:
        top_k = max(1, round(top_k * scale.max_experts / experts))
        experts = scale.max_experts
    s = int(arch.get("seq_length", scale.seq) or scale.seq)
    w = int(arch.get("attention_window", 0) or 0)
    window = 0 if w <= 0 or w >= s else max(2, round(scale.seq * w / s))
    return Dims(hidden=scale.hidden, heads=heads, kv_heads=kv, head_dim=head_dim, ffn=ffn,
                moe_ffn=moe_ffn, experts=experts, top_k=min(top_k, experts),
                shared=int(arch.get("moe_shared_experts", 0) or 0), window=window, vocab=vocab,
                seq=scale.seq, gated=bool(arch.get("gated_mlp", True)),
                state=max(2, min(8, int(arch.get("mamba_state_size", 4) or 4))), routed=scale.routed,
                causal=bool(arch.get("causal", True)))


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rope(x: torch.Tensor) -> torch.Tensor:
    """Rotary position embedding over the last dim of x [B, heads, T, d]."""
    t, d = x.shape[-2], x.shape[-1]
    ct = x.dtype if x.dtype in (torch.float32, torch.float64) else torch.float32  # bf16 positions are coarse
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=ct, device=x.device) / d))
    ang = (torch.arange(t, dtype=ct, device=x.device)[:, None] * inv[None, :]).to(x.dtype)
    cos, sin = ang.cos(), ang.sin()
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class AttentionCore(nn.Module):
    """The attention core, ``softmax(q k^T / sqrt(d), causal and window mask) v`` on q, k, v
    [B, heads, T, d]: no parameters, and the quadratic activations (the scores and their softmax).
    Selective recomputation recomputes exactly this (pipesmith.torch.pipeline wraps it). On CUDA it is
    PyTorch's fused ``scaled_dot_product_attention`` (flash attention without a window), as real
    models run it; on the CPU the explicit product above."""

    def __init__(self, head_dim: int, window: int, causal: bool = True):
        super().__init__()
        self.hd, self.window, self.causal = head_dim, window, causal

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        t = q.shape[-2]
        if q.is_cuda and not self.window:
            return F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        i = torch.arange(t, device=q.device)[:, None]
        j = torch.arange(t, device=q.device)[None, :]
        allowed = j <= i if self.causal else torch.ones(t, t, dtype=torch.bool, device=q.device)
        if self.window:
            allowed = allowed & (j > i - self.window)
        if q.is_cuda:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.hd)
        scores = scores.masked_fill(~allowed, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v


class Attention(nn.Module):
    """Softmax attention with grouped KV heads, RoPE and an optional sliding window; causal unless the
    type says ``causal: false`` (a vision encoder)."""

    def __init__(self, d: Dims):
        super().__init__()
        self.heads, self.kv, self.hd = d.heads, d.kv_heads, d.head_dim
        self.core = AttentionCore(d.head_dim, d.window, d.causal)
        self.wq = nn.Linear(d.hidden, d.heads * d.head_dim, bias=False)
        self.wk = nn.Linear(d.hidden, d.kv_heads * d.head_dim, bias=False)
        self.wv = nn.Linear(d.hidden, d.kv_heads * d.head_dim, bias=False)
        self.wo = nn.Linear(d.heads * d.head_dim, d.hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.heads, self.hd).transpose(1, 2)
        k = self.wk(x).view(b, t, self.kv, self.hd).transpose(1, 2)
        v = self.wv(x).view(b, t, self.kv, self.hd).transpose(1, 2)
        q, k = _rope(q), _rope(k)
        rep = self.heads // self.kv
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        o = self.core(q, k, v)
        return self.wo(o.transpose(1, 2).reshape(b, t, self.heads * self.hd))


class LinearAttention(nn.Module):
    """Causal linear attention (feature map elu + 1), the stand-in for lightning / linear kinds."""

    def __init__(self, d: Dims):
        super().__init__()
        self.heads, self.hd = d.heads, d.head_dim
        self.wqkv = nn.Linear(d.hidden, 3 * d.heads * d.head_dim, bias=False)
        self.wo = nn.Linear(d.heads * d.head_dim, d.hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = self.wqkv(x).view(b, t, 3, self.heads, self.hd).permute(2, 0, 3, 1, 4)
        q, k = F.elu(q) + 1, F.elu(k) + 1
        mask = torch.tril(torch.ones(t, t, dtype=x.dtype, device=x.device))
        a = (q @ k.transpose(-1, -2)) * mask
        o = (a @ v) / a.sum(-1, keepdim=True)
        return self.wo(o.transpose(1, 2).reshape(b, t, self.heads * self.hd))


class Mamba(nn.Module):
    """A small stand-in for a Mamba-2 mixer: causal depthwise conv, input-dependent diagonal decay
    recurrence, SiLU gate (same shapes of dataflow: in_proj -> conv -> scan -> gate -> out_proj)."""

    def __init__(self, d: Dims, kernel: int = 4):
        super().__init__()
        inner = 2 * d.hidden
        self.kernel = kernel
        self.in_proj = nn.Linear(d.hidden, 2 * inner, bias=False)
        self.conv = nn.Conv1d(inner, inner, kernel, groups=inner, padding=kernel - 1)
        self.dt = nn.Linear(inner, inner)
        self.out_proj = nn.Linear(inner, d.hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        u, z = self.in_proj(x).chunk(2, dim=-1)
        u = F.silu(self.conv(u.transpose(1, 2))[..., :t].transpose(1, 2))
        a = torch.sigmoid(self.dt(u))
        state = torch.zeros_like(u[:, 0])
        ys = []
        for i in range(t):
            state = a[:, i] * state + (1 - a[:, i]) * u[:, i]
            ys.append(state)
        y = torch.stack(ys, dim=1) * F.silu(z)
        return self.out_proj(y)


class MLP(nn.Module):
    def __init__(self, hidden: int, ffn: int, gated: bool):
        super().__init__()
        self.gated = gated
        self.w1 = nn.Linear(hidden, ffn, bias=False)
        self.w2 = nn.Linear(ffn, hidden, bias=False)
        self.w3 = nn.Linear(hidden, ffn, bias=False) if gated else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gated:
            return self.w2(F.silu(self.w1(x)) * self.w3(x))
        return self.w2(F.relu(self.w1(x)).square())


class MoE(nn.Module):
    """Softmax router, top-k routed experts (weights renormalized over the k), shared experts."""

    def __init__(self, d: Dims):
        super().__init__()
        if d.experts < 1 or d.top_k < 1:
            raise ModelFileError("a moe layer needs architecture.moe_num_experts and moe_top_k >= 1")
        self.top_k, self.routed = d.top_k, d.routed
        self.router = nn.Linear(d.hidden, d.experts, bias=False)
        self.experts = nn.ModuleList(MLP(d.hidden, d.moe_ffn, True) for _ in range(d.experts))
        self.shared = MLP(d.hidden, d.shared * d.moe_ffn, True) if d.shared > 0 else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        probs = torch.softmax(self.router(x), dim=-1)
        top, idx = probs.topk(self.top_k, dim=-1)
        top = top / top.sum(-1, keepdim=True)
        if self.routed:
            return self._routed(x, top, idx)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            weight = (top * (idx == e)).sum(-1, keepdim=True)
            out = out + weight * expert(x)  # every expert runs: unrouted ones get zero gradients
        if self.shared is not None:
            out = out + self.shared(x)
        return out

    def _routed(self, x, top, idx):
        """Each expert on the tokens routed to it (gathered, weighted, scattered back)."""
        flat = x.reshape(-1, x.shape[-1])
        w = top.reshape(-1, self.top_k)
        which = idx.reshape(-1, self.top_k)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            rows, slot = (which == e).nonzero(as_tuple=True)
            if rows.numel():
                out = out.index_add(0, rows, w[rows, slot, None] * expert(flat[rows]))
        if self.shared is not None:
            out = out + self.shared(flat)
        return out.view_as(x)


class Residual(nn.Module):
    """h + f(norm(h))."""

    def __init__(self, dim: int, f: nn.Module):
        super().__init__()
        self.norm = RMSNorm(dim)
        self.f = f

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return h + self.f(self.norm(h))


def boundary_layout(spec: ModelSpec) -> list[tuple[str, ...]]:
    """The carry's names after each layer (index b: what layer b hands to layer b + 1); entry -1
    (the model's input) is returned as the last element's companion by :func:`input_layout`."""
    roles = layer_roles(spec)
    n = len(spec.layers)
    needs_labels = any(r.head and (r.shards > 1 or not r.final or roles[-1].aux_before) for r in roles)
    pre = embedding_index(spec)
    out: list[tuple[str, ...]] = []
    for b in range(n):
        names = ["h"] if b >= pre else ["tokens", "h"]  # before the embedding: the tokens wait for it
        if needs_labels and any(roles[j].head for j in range(b + 1, n)):
            names.append("labels")
        if roles[b].piece_continues:
            names.append("partial")
        if roles[b].head and roles[b].shard + 1 < roles[b].shards:
            names += ["lse", "tgt"]
        if any(roles[j].head_done for j in range(0, b + 1)) and b + 1 < n:
            names.append("aux")
        for k in sorted({k for j in range(b + 1, n) for k in spec.layers[j].inputs if k <= b}):
            names.append(f"skip{k}")
        out.append(tuple(names))
    return out


def input_layout(spec: ModelSpec) -> tuple[str, ...]:
    """The model's inputs: the tokens, the image features ``h`` when layers come before the embedding
    (a vision encoder), and the labels when a layer before the last needs them."""
    layout = boundary_layout(spec)
    return ("tokens",) + (("h",) if embedding_index(spec) > 0 else ()) + (("labels",) if "labels" in layout[0] else ())


def embedding_index(spec: ModelSpec) -> int:
    """The first embedding layer (0 for a text model). The layers before it (a multimodal model's
    vision encoder, as ``pipesmith import hf`` writes Gemma 3) run on the image features, a model
    input of the hidden size; the embedding adds its token embeddings to their output, which is
    where the image features are merged into the sequence."""
    for i, layer in enumerate(spec.layers):
        if "embedding" in spec.types[layer.symbol].components:
            return i
    return 0


@dataclasses.dataclass(frozen=True)
class Role:
    head: bool              # this layer's type is a head
    shard: int              # shard index within a vocabulary-sharded head (0 when unsharded)
    shards: int             # K (1: unsharded)
    final: bool             # the model's last layer
    head_done: bool         # a head whose loss is complete after this layer, and is not the last
    piece_continues: bool   # a split MLP / MoE piece whose next layer continues the sum
    piece_after: bool       # this layer continues a sum begun before it
    aux_before: bool        # some earlier head left its loss in aux


def layer_roles(spec: ModelSpec) -> list[Role]:
    n = len(spec.layers)
    roles: list[Role] = []
    run_pos = 0
    aux = False
    for i, layer in enumerate(spec.layers):
        t = spec.types[layer.symbol]
        comps = t.components
        nxt = spec.type_of(i + 1) if i + 1 < n else None
        prev = spec.type_of(i - 1) if i > 0 else None
        run_pos = run_pos + 1 if prev is not None and prev.symbol == t.symbol else 0
        is_head = "head" in comps
        shards = t.vocab_shards if is_head and comps == ("head",) else 1
        shard = run_pos % shards if shards > 1 else 0
        pieceable = len(comps) == 1 and comps[0] in ("mlp", "moe")
        piece_cont = pieceable and t.joins_next and nxt is not None and nxt.components == comps
        piece_after = bool(roles) and roles[-1].piece_continues
        done = is_head and shard + 1 == shards and i + 1 < n
        roles.append(Role(head=is_head, shard=shard, shards=shards, final=i + 1 == n, head_done=done,
                          piece_continues=piece_cont, piece_after=piece_after, aux_before=aux))
        aux = aux or done
    return roles


class ReferenceLayer(nn.Module):
    """One pipesmith layer: reads the carry (a dict of named tensors), returns the next carry."""

    def __init__(self, spec: ModelSpec, index: int, d: Dims, role: Role, out_names: tuple[str, ...]):
        super().__init__()
        t = spec.type_of(index)
        if not t.components:
            raise ModelFileError(f"{spec.path}: layer {index} (type '{t.symbol}' {t.name}) has no "
                                 "kind: the reference model builds layers from their analytic kind")
        self.index, self.role, self.out_names = index, role, out_names
        self.components = tuple(c for c in t.components)
        self.extra_inputs = spec.layers[index].inputs
        self.vocab_lo = self.vocab_hi = 0
        parts = nn.ModuleDict()
        for c in self.components:
            if c == "embedding":
                parts[c] = nn.Embedding(d.vocab, d.hidden)
            elif c == "attention":
                parts[c] = Residual(d.hidden, Attention(d))
            elif c == "linear_attention":
                parts[c] = Residual(d.hidden, LinearAttention(d))
            elif c == "mamba":
                parts[c] = Residual(d.hidden, Mamba(d))
            elif c == "mlp":
                parts[c] = Residual(d.hidden, MLP(d.hidden, d.ffn, d.gated))
            elif c == "moe":
                parts[c] = Residual(d.hidden, MoE(d))
            elif c == "mtp_projection":
                k = 1 + len(self.extra_inputs)
                parts[c] = nn.ModuleDict({"norms": nn.ModuleList(RMSNorm(d.hidden) for _ in range(k)),
                                          "proj": nn.Linear(k * d.hidden, d.hidden, bias=False)})
            elif c == "head":
                per = d.vocab // role.shards
                self.vocab_lo, self.vocab_hi = role.shard * per, (role.shard + 1) * per
                parts[c] = nn.ModuleDict({"norm": RMSNorm(d.hidden),
                                          "output": nn.Linear(d.hidden, per, bias=False)})
        self.parts = parts

    def forward(self, carry: dict) -> dict:
        c = dict(carry)
        for name in self.components:
            part = self.parts[name]
            if name == "embedding":
                image = c.pop("h", None)  # a vision encoder's output, merged into the sequence
                c["h"] = part(c.pop("tokens")) if image is None else part(c.pop("tokens")) + image
            elif name == "mtp_projection":
                xs = [c["h"]] + [c[f"skip{k}"] for k in self.extra_inputs]
                normed = [n(x) for n, x in zip(part["norms"], xs)]
                c["h"] = part["proj"](torch.cat(normed, dim=-1))
            elif name == "head":
                self._head(part, c)
            elif name in ("mlp", "moe") and (self.role.piece_continues or self.role.piece_after):
                term = part.f(part.norm(c["h"]))
                partial = c.pop("partial", None)
                total = term if partial is None else partial + term
                if self.role.piece_continues:
                    c["partial"] = total
                else:
                    c["h"] = c["h"] + total
            else:
                c["h"] = part(c["h"])
        c[f"skip{self.index}"] = c["h"]
        return c

    def _head(self, part, c: dict) -> None:
        logits = part["output"](part["norm"](c["h"]))
        role = self.role
        if role.final and role.shards == 1 and "labels" not in c:
            c["logits"] = logits
            return
        labels = c["labels"]
        lse = torch.logsumexp(logits, dim=-1)
        inside = (labels >= self.vocab_lo) & (labels < self.vocab_hi)
        local = (labels - self.vocab_lo).clamp(0, self.vocab_hi - self.vocab_lo - 1)
        tgt = torch.where(inside, logits.gather(-1, local.unsqueeze(-1)).squeeze(-1),
                          torch.zeros_like(lse))
        if role.shard > 0:
            lse = torch.logaddexp(c.pop("lse"), lse)
            tgt = c.pop("tgt") + tgt
        if role.shard + 1 < role.shards:
            c["lse"], c["tgt"] = lse, tgt
            return
        nll = lse - tgt
        aux = c.pop("aux", None)
        total = nll if aux is None else aux + nll
        if role.final:
            c["nll"] = total
        else:
            c["aux"] = total


def loss_fn(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The reference model's loss on the last stage's output: cross-entropy of logits [B, T, V]
    against the target [B, T], or the mean of a per-token loss [B, T] computed inside the model (a
    sharded head, or heads whose losses add up)."""
    if output.dim() == 3:
        return F.cross_entropy(output.flatten(0, 1), target.flatten())
    return output.mean()


class StageModule(nn.Module):
    """Layers first..last of the reference chain, speaking the carry layout at both ends."""

    def __init__(self, layers: Sequence[ReferenceLayer], in_names: tuple[str, ...],
                 out_names: tuple[str, ...]):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.in_names, self.out_names = in_names, out_names

    def forward(self, *tensors: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        if len(tensors) != len(self.in_names):
            raise ValueError(f"stage expects {len(self.in_names)} inputs {self.in_names}, got {len(tensors)}")
        carry = dict(zip(self.in_names, tensors))
        for layer in self.layers:
            carry = layer(carry)
        outs = []
        for n in self.out_names:
            x = carry[n]
            # A tensor handed on unchanged is a fresh autograd node, never the received input.
            outs.append(x.clone() if any(x is t for t in tensors) else x)
        return outs[0] if len(outs) == 1 else tuple(outs)


def _vocab(spec: ModelSpec, scale: Scale) -> int:
    """The reference vocabulary: ``scale.vocab`` rounded up to a multiple of every head's shard count."""
    lcm = 1
    for k in (t.vocab_shards for t in spec.types.values() if "head" in t.components):
        lcm = lcm * k // math.gcd(lcm, k)
    return -(-scale.vocab // lcm) * lcm


class _Layout:
    """The chain's carry layout and layer roles (shared by the whole model and a few of its layers)."""

    def _plan(self, spec: ModelSpec, scale: Scale) -> None:
        self.spec, self.scale = spec, scale
        self.vocab = _vocab(spec, scale)
        self.roles = layer_roles(spec)
        self.layout = boundary_layout(spec)
        self.input_names = input_layout(spec)
        final = self.roles[-1]
        if not final.head:
            raise ModelFileError(f"{spec.path}: the last layer must be a head (its loss ends the step)")
        self.last_out = ("logits",) if final.shards == 1 and "labels" not in self.layout[0] else ("nll",)

    def _build_layer(self, i: int) -> "ReferenceLayer":
        spec = self.spec
        t = spec.type_of(i)
        bad = [c for c in t.components if c not in SUPPORTED]
        if bad:
            raise ModelFileError(f"{spec.path}: layer {i}: kind component(s) {bad} not built")
        d = _dims(t.architecture, self.scale, self.vocab)
        out = self.layout[i] if i + 1 < len(spec.layers) else self.last_out
        return ReferenceLayer(spec, i, d, self.roles[i], out)

    def layout_before(self, layer: int) -> tuple[str, ...]:
        return self.input_names if layer == 0 else self.layout[layer - 1]

    def batch(self, rows: int, seed: int = 99) -> tuple[torch.Tensor, torch.Tensor]:
        """Random tokens and labels [rows, seq] for a step."""
        g = torch.Generator().manual_seed(seed)
        tokens = torch.randint(0, self.vocab, (rows, self.scale.seq), generator=g)
        labels = torch.randint(0, self.vocab, (rows, self.scale.seq), generator=g)
        return tokens, labels

    def step_inputs(self, tokens: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The first stage's inputs for ``tokens`` (and ``labels``): with a vision encoder before the
        embedding also the image features, random [rows, seq, hidden] of a fixed seed."""
        out = [tokens]
        if "h" in self.input_names:
            g = torch.Generator().manual_seed(7)
            image = torch.randn(tuple(tokens.shape) + (self.scale.hidden,), generator=g, dtype=torch.float64)
            out.append(image.to(device=tokens.device, dtype=self.param_dtype))
        if "labels" in self.input_names:
            out.append(labels)
        return tuple(out)


class ReferenceLayers(_Layout, nn.Module):
    """Only some layers of the reference chain, each built on its own (``layer(i)``), with random
    inputs of the carry's shapes (``carry_before(i)``): a layer of a model too large for the machine
    can be timed alone at full width."""

    def __init__(self, spec: ModelSpec, indices: Iterable[int], scale: Scale = Scale(), seed: int = 1234,
                 dtype: torch.dtype = torch.float64, device: str | torch.device = "cpu") -> None:
        nn.Module.__init__(self)
        self._plan(spec, scale)
        self.param_dtype = dtype
        torch.manual_seed(seed)
        self.built = nn.ModuleDict()
        for i in sorted(set(indices)):
            with torch.device(device):  # a full-width layer is initialized where it runs
                self.built[str(i)] = self._build_layer(i).to(dtype)
        self.dtype = dtype

    def layer(self, i: int) -> "ReferenceLayer":
        return self.built[str(i)]

    def carry_before(self, i: int, rows: int, seed: int = 99, device: str | torch.device = "cpu") -> dict:
        """Random inputs of layer i: tokens and labels in the vocabulary, hidden-sized tensors for the
        hidden state, a split MLP's partial sum and skips, per-token tensors for the head's running
        log-sum-exp, target logit and earlier loss."""
        g = torch.Generator().manual_seed(seed + i)
        rows_seq = (rows, self.scale.seq)
        carry = {}
        for k in self.layout_before(i):
            if k in ("tokens", "labels"):
                v = torch.randint(0, self.vocab, rows_seq, generator=g)
            elif k in ("h", "partial") or k.startswith("skip"):
                v = torch.randn(rows_seq + (self.scale.hidden,), generator=g, dtype=torch.float32)
            else:  # lse, tgt, aux
                v = torch.randn(rows_seq, generator=g, dtype=torch.float32)
            carry[k] = (v.to(self.dtype) if v.is_floating_point() else v).to(device)
        return carry


class ReferenceTransformer(_Layout, nn.Module):
    """The whole chain; ``stage(first, last)`` builds a stage's module from the same parameters."""

    def __init__(self, spec: ModelSpec, scale: Scale = Scale(), seed: int = 1234,
                 dtype: torch.dtype = torch.float64):
        nn.Module.__init__(self)
        self._plan(spec, scale)
        self.param_dtype = dtype
        torch.manual_seed(seed)
        self.chain = nn.ModuleList(self._build_layer(i) for i in range(len(spec.layers)))
        self.to(dtype)

    def layer(self, i: int) -> "ReferenceLayer":
        return self.chain[i]

    def layout_after(self, layer: int) -> tuple[str, ...]:
        return self.chain[layer].out_names

    def stage(self, first: int, last: int) -> StageModule:
        if not 0 <= first <= last < len(self.chain):
            raise ValueError(f"layers [{first}, {last}] outside the model's 0..{len(self.chain) - 1}")
        return StageModule([self.chain[i] for i in range(first, last + 1)], self.layout_before(first),
                           self.layout_after(last))

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.stage(0, len(self.chain) - 1)(*inputs)
