"""The profiled model YAML and the table `profile` prints: what :mod:`pipesmith.torch.profiler`
measured, written into the model's own document.

The YAML written is MODEL.yaml's document with each profiled layer type's nine numbers set (its
``kind`` and ``architecture`` are kept, so the reference model still builds from the file, and the
measured numbers override the analytic ones field by field), the layer list and module names as they
were, the cluster replaced by ``--cluster`` when given, and a header comment saying how it was
measured. :mod:`pipesmith.torch.profile` writes it whole or not at all (temporary file, fsync, rename).

The text is made by the core's one model-YAML writer (ir/model_write.h, through
``pipesmith._core.format_model_yaml``), so a profiled model has the layout of every model file pipesmith
writes. Without the extension (the measuring step on a machine with no pipesmith build:
``bench/gpu-layers measure``, ``python -m pipesmith.torch.profile`` from python/) PyYAML writes the same
document in its own layout; the readers take both alike (docs/library.md, "Python").
"""
from __future__ import annotations

import os
from typing import Callable

import yaml

from pipesmith.errors import Error

from .profiler import WALK_LAYERS, ProfileError, ProfileResult


def _num(v: float) -> float:
    return float(f"{v:.6g}")


def profiled_yaml(source_path: str, result: ProfileResult, cluster_path: str | None = None,
                  backward: str = "split") -> str:
    """The text of the profiled model YAML (see the module docstring)."""
    if result.source_yaml:  # a transformers model's profile: the YAML its import wrote
        doc = yaml.safe_load(result.source_yaml)
    else:
        try:
            with open(source_path, encoding="utf-8") as f:
                doc = yaml.safe_load(f)
        except (OSError, yaml.YAMLError) as e:
            raise ProfileError(f"{source_path}: cannot read: {e}") from None
    model = doc["model"]
    model["name"] = f"{model.get('name', result.model)}-profiled"
    for t in result.types:
        entry = model["layer_types"][t.symbol]
        for k, v in t.numbers(backward).items():
            entry[k] = _num(v)
    if cluster_path is not None:
        try:
            with open(cluster_path, encoding="utf-8") as f:
                cdoc = yaml.safe_load(f)
        except (OSError, yaml.YAMLError) as e:
            raise ProfileError(f"{cluster_path}: cannot read: {e}") from None
        if not isinstance(cdoc, dict) or not isinstance(cdoc.get("cluster"), dict):
            raise ProfileError(f"{cluster_path}: no 'cluster:' mapping (docs/inputs.md)")
        doc["cluster"] = cdoc["cluster"]
    o = result.options
    if result.built:
        head = ["# Profiled by `python -m pipesmith.torch.profile --hf` (pipesmith profile --backend torch --hf), "
                "layers as `pipesmith import hf` writes them",
                f"# on {result.where}: {result.built}, {o.seq} tokens x {o.rows} rows per microbatch, {o.dtype};"]
    else:
        head = [f"# Profiled by `python -m pipesmith.torch.profile {os.path.basename(source_path)}` "
                f"(pipesmith profile --backend torch)",
                f"# on {result.where}: the reference transformer at hidden {o.hidden}"
                f"{' (the architecture' + chr(39) + 's full width)' if o.full_width else ''}, {o.seq} tokens x "
                f"{o.rows} rows per microbatch, vocabulary {o.vocab}, {o.dtype};"]
    head += [
        f"# F, I (stage_backward_input), W (stage_backward_weight): medians over {o.repeats} repeats after "
        f"{o.warmup} warm-up, method '{o.method}', {o.concurrent} process(es) at once; memory from autograd's saved tensors (docs/pytorch.md, 'Profiling').",
        f"# weight_walk_ms: split W's extra per layer before it in a stage, from the W of the stage of up to "
        f"{WALK_LAYERS} layers from the type's first (method 'chain' only; docs/inputs.md).",
        "# type  layer  F ms  I ms  W ms  fused B ms = backward_ms (I + W for comparison)  weight_walk_ms"]
    for t in result.types:
        head.append(f"#   {t.symbol}  {t.layer}  {t.forward_ms:.4g}  {t.backward_input_ms:.4g}  "
                    f"{t.backward_weight_ms:.4g}  {t.backward_ms:.4g} ({t.backward_input_ms + t.backward_weight_ms:.4g})"
                    f"  {t.weight_walk_ms:.4g}")
    if backward == "fused":
        head.append("# --backward fused: I and W scaled so that I + W is the fused B above (schedules that run B only)")
    if result.sweep_ms:
        head.append(f"# sweep_ms: {result.sweep_ms:.6g} (one sweep of every layer's F + I + W: the load probe of bench/torch)")
    if result.unprofiled:
        head.append(f"# Not profiled (no layer uses them): {', '.join(result.unprofiled)}")
    return _format_model_yaml(doc, "\n".join(head) + "\n")


def _core_writer() -> Callable[[dict, str], str] | None:
    """``pipesmith._core.format_model_yaml``, or None where the extension is not built (or predates it)."""
    try:
        from pipesmith import _core
        return _core.format_model_yaml
    except (ImportError, AttributeError):
        return None


def _format_model_yaml(doc: dict, header: str) -> str:
    write = _core_writer()
    if write is None:  # the measuring step without a pipesmith build (docs/library.md, "Python")
        return header + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=110)
    try:
        return write(doc, header)
    except Error as e:  # a key no model file holds (model_yaml read the source, so this is rare)
        raise ProfileError(str(e)) from None


def format_table(result: ProfileResult) -> str:
    o = result.options
    lines = [f"profile of '{result.model}' on {result.where}: hidden {o.hidden}, {o.rows} x {o.seq} tokens per "
             f"microbatch, {o.dtype}, method {o.method}, {o.concurrent} process(es) at once, medians over {o.repeats} repeats",
             f"{'type':<4} {'name':<18} {'layer':>5} {'F_ms':>9} {'I_ms':>9} {'W_ms':>9} {'B_ms':>9} "
             f"{'walk_ms':>8} {'act_mb':>9} {'stash_mb':>9} {'out_mb':>8} {'params_m':>9}"]
    for t in result.types:
        lines.append(f"{t.symbol:<4} {t.name[:18]:<18} {t.layer:>5} {t.forward_ms:>9.3f} {t.backward_input_ms:>9.3f} "
                     f"{t.backward_weight_ms:>9.3f} {t.backward_ms:>9.3f} {t.weight_walk_ms:>8.3f} {t.activation_mb:>9.3f} "
                     f"{t.wgrad_stash_mb:>9.3f} {t.output_mb:>8.4f} {t.params_m:>9.4f}")
    if result.sweep_ms:
        lines.append(f"sweep of the model (F + I + W of every layer, one microbatch): {result.sweep_ms:.1f} ms")
    return "\n".join(lines) + "\n"
