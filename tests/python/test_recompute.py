"""Recomputing schedules in PyTorch: ``pipesmith baseline --recompute full|selective`` exported with
``pipesmith export --to pytorch`` and run under torchrun through pipesmith.torch, one split-backward
schedule (ZB-H1: I then W) and one fused (1F1B). The loss, every gradient and the parameters after
an SGD step equal the unpipelined run's, and the recomputation really happens: a recomputing
stage's layers (full) or attention cores (selective) run their forward twice per microbatch."""
import json
import os
import re

import pytest

from conftest import ROOT, cli, export, model_path, run_plans, torchrun

MODEL = "llama2-7b"
P, M = 2, 4


@pytest.fixture(scope="module")
def plans(tmp_path_factory) -> dict:
    """(schedule kind, mode) -> the export directory, for 1f1b and zb-h1 without, with full and
    with selective recomputation."""
    base = tmp_path_factory.mktemp("recompute")
    out = {}
    for kind in ("1f1b", "zb-h1"):
        for mode in ("none", "full", "selective"):
            sched = str(base / f"{kind}-{mode}.yaml")
            cli("baseline", model_path(MODEL), "--schedule", kind, "--devices", str(P), "--microbatches", str(M),
                "--recompute", mode, "-o", sched)
            d = str(base / f"{kind}-{mode}")
            summary = export(sched, d, model_path(MODEL)).stdout
            out[(kind, mode)] = (d, summary)
    return out


def test_the_export_marks_the_stages_and_drops_r(plans):
    for (kind, mode), (d, summary) in plans.items():
        with open(os.path.join(d, "plan.json"), encoding="utf-8") as f:
            plan = json.load(f)
        marks = [st.get("recompute") for st in plan["stages"]]
        assert marks == ([None] * P if mode == "none" else [mode] * P), (kind, mode, marks)
        for name in ("compute_only.csv", "compute_comms.csv"):
            with open(os.path.join(d, name), encoding="utf-8") as f:
                cells = [c for row in f.read().split() for c in row.split(",")]
            assert not [c for c in cells if re.search(r"(^|[(;])\s*\d+R\d+", c)], (kind, mode, name)
        assert ("pytorch comms" in summary) == (mode != "none"), summary


def test_recomputing_plans_are_gradient_exact(plans):
    run_plans(P, [(plans[(kind, mode)][0], model_path(MODEL))
                  for kind in ("1f1b", "zb-h1") for mode in ("full", "selective")])


def _counts(plans, keys) -> dict:
    args = [os.path.join(ROOT, "tests", "python", "recompute_counts.py")]
    for k in keys:
        args += ["--case", plans[k][0], model_path(MODEL)]
    rc, out = torchrun(P, args, timeout=300)
    assert rc == 0, out[-6000:]
    got = {}
    for line in out.splitlines():
        if line.startswith("COUNTS "):
            _, d, doc = line.split(" ", 2)
            got[d] = {int(s): c for s, c in json.loads(doc).items()}
    return {k: got[plans[k][0]] for k in keys}


def test_recomputation_happens(plans):
    keys = [("1f1b", "none"), ("1f1b", "full"), ("1f1b", "selective"), ("zb-h1", "full"), ("zb-h1", "selective")]
    c = _counts(plans, keys)
    for s in range(P):
        # Without recomputation: one forward per microbatch, of every layer and attention core.
        assert set(c[("1f1b", "none")][s]["layers"]) == {M}
        assert set(c[("1f1b", "none")][s]["cores"]) == {M}
        # Full: every layer's forward again in the backward (fused B).
        assert set(c[("1f1b", "full")][s]["layers"]) == {2 * M}
        # Selective: only the attention cores again.
        for kind in ("1f1b", "zb-h1"):
            assert set(c[(kind, "selective")][s]["layers"]) == {M}, kind
            assert set(c[(kind, "selective")][s]["cores"]) == {2 * M}, kind
    # Split backward with full recomputation: PyTorch's first stage has no I (its W is a whole
    # backward): once again. The last stage recomputes in I, then again in W once per parameter
    # group of each layer (a decoder layer has 9 parameters, the head 2): the price in
    # docs/pytorch.md, "Recomputation".
    assert set(c[("zb-h1", "full")][0]["layers"]) == {2 * M}
    last = c[("zb-h1", "full")][1]["layers"]
    assert set(last[:-1]) == {M + M + 9 * M} and last[-1] == M + M + 2 * M, last
