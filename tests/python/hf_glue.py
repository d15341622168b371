"""Stage glue as a user writes it for a transformers model, for ``pipesmith.torch.run --hf ... --user-model``:
``FUNCTION(model, plan, rank)`` returns the rank's stage modules. The glue rebuilds around each
stage's decoder layers what the model's forward does (embedding, position ids, masks, rotary, final
norm, head) by hand.

* :func:`stages` gives every layer the mask of its kind (``config.layer_types``), as the model does;
* :func:`stages_full_mask` is the same glue with one bug: every layer gets the full causal mask, so a
  sliding-window layer attends past its window. Checked against itself unpipelined, the bug cannot
  show; checked against the model's own step, it does.
"""
from __future__ import annotations

import torch
from torch import nn
from transformers.masking_utils import create_causal_mask, create_sliding_window_causal_mask


class GlueStage(nn.Module):
    def __init__(self, model, names: list[str], full_mask_everywhere: bool):
        super().__init__()
        inner = model.model
        self.config = model.config
        self.embed = inner.embed_tokens if "model.embed_tokens" in names else None
        self.ids = [int(n.split(".")[-1]) for n in names if n.startswith("model.layers.")]
        self.layers = nn.ModuleList([inner.layers[i] for i in self.ids])
        self.norm = inner.norm if "model.norm" in names else None
        self.head = model.lm_head if "lm_head" in names else None
        self.rotary = inner.rotary_emb
        self.full_mask_everywhere = full_mask_everywhere

    def forward(self, x):
        h = self.embed(x) if self.embed is not None else x
        position_ids = torch.arange(h.shape[1]).unsqueeze(0)
        args = dict(config=self.config, inputs_embeds=h, attention_mask=None, cache=None, position_ids=position_ids)
        masks = {"full_attention": create_causal_mask(**args),
                 "sliding_attention": create_sliding_window_causal_mask(**args)}
        rotary = self.rotary(h, position_ids)
        for i, layer in zip(self.ids, self.layers):
            kind = "full_attention" if self.full_mask_everywhere else self.config.layer_types[i]
            h = layer(h, attention_mask=masks[kind], position_embeddings=rotary, position_ids=position_ids)
        if self.norm is not None:
            h = self.norm(h)
        return self.head(h) if self.head is not None else h


def _build(model, plan, rank, full_mask_everywhere):
    return [GlueStage(model, list(plan.stages[s].modules), full_mask_everywhere) for s in plan.rank_to_stages[rank]]


def stages(model, plan, rank):
    return _build(model, plan, rank, False)


def stages_full_mask(model, plan, rank):
    return _build(model, plan, rank, True)
