"""A small decoder-only LM laid out as torchtitan's models are, standing in for a user's model.

``tok_embeddings``, ``layers`` (an ``nn.ModuleDict`` of decoder layers keyed "0", "1", ...), ``norm``
and ``lm_head`` (torchtitan 0.3's names); ``forward(tokens)`` skips the parts that are None, so a copy with the other stages'
modules removed is a stage's module — what :func:`pipesmith.torch.pipeline.split_by_modules` and
torchtitan's own splitter build. It is built from a pipesmith model YAML whose layers are an
embedding, whole decoder layers (kind ``dense_block`` / ``attention+mlp``, or an attention layer
joined to its MLP) and one head, with the YAML's ``module:`` names giving the decoder layers' keys.
"""
from __future__ import annotations

import torch
from torch import nn

from .model_yaml import ModelFileError, ModelSpec
from .reference import MLP, Attention, Dims, Residual, RMSNorm, Scale, _dims


class DecoderLayer(nn.Module):
    def __init__(self, d: Dims) -> None:
        super().__init__()
        self.attention = Residual(d.hidden, Attention(d))
        self.feed_forward = Residual(d.hidden, MLP(d.hidden, d.ffn, d.gated))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.feed_forward(self.attention(h))


class TitanLayoutLM(nn.Module):
    def __init__(self, spec: ModelSpec, scale: Scale = Scale(), seed: int = 1234,
                 dtype: torch.dtype = torch.float64):
        super().__init__()
        d = _dims(spec.architecture, scale, scale.vocab)
        names = [spec.layers[i].modules for i in range(len(spec.layers))]
        if names[0] != ("tok_embeddings",) or names[-1] != ("norm", "lm_head"):
            raise ModelFileError(f"{spec.path}: the torchtitan layout needs the first layer named "
                                 "tok_embeddings and the last [norm, lm_head] (`module:`)")
        keys = []
        for i in range(1, len(spec.layers) - 1):
            comps = spec.type_of(i).components
            if len(names[i]) != 1 or not names[i][0].startswith("layers."):
                raise ModelFileError(f"{spec.path}: layer {i} is named {list(names[i])}, expected layers.N")
            key = names[i][0][len("layers."):]
            if comps == ("attention", "mlp") or (keys and keys[-1] == key and comps == ("mlp",)):
                if not keys or keys[-1] != key:
                    keys.append(key)
            elif comps == ("attention",) and spec.type_of(i).joins_next:
                keys.append(key)
            else:
                raise ModelFileError(f"{spec.path}: layer {i} ({'+'.join(comps)}) is not part of a dense "
                                     "decoder layer; the torchtitan-layout model builds only those")
        torch.manual_seed(seed)
        self.tok_embeddings = nn.Embedding(d.vocab, d.hidden)
        self.layers = nn.ModuleDict({k: DecoderLayer(d) for k in keys})
        self.norm = RMSNorm(d.hidden)
        self.lm_head = nn.Linear(d.hidden, d.vocab, bias=False)
        self.vocab, self.seq = d.vocab, d.seq
        self.to(dtype)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.tok_embeddings(tokens) if self.tok_embeddings is not None else tokens
        for layer in self.layers.values():
            h = layer(h)
        h = self.norm(h) if self.norm is not None else h
        return self.lm_head(h) if self.lm_head is not None else h


def build(spec: ModelSpec, scale: Scale = Scale()) -> TitanLayoutLM:
    """The entry ``python -m pipesmith.torch.run --user-model pipesmith.torch.titan_layout:build`` calls."""
    return TitanLayoutLM(spec, scale)
