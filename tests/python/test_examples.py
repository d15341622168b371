"""The documented Python example (python/examples/train_reference.py) runs as docs/pytorch.md says:
a ZB-V schedule on 2 ranks (the last stage on rank 0) trains, and the loss falls step by step."""
import os
import re

from conftest import ROOT, cli, export, model_path, torchrun


def test_train_reference_example_trains(tmp_path):
    model = model_path("llama2-7b")
    sched = str(tmp_path / "zbv.yaml")
    # ZB-V of Llama-2-7B on 2 x 80 GB ranks fits with tensor parallelism 2 beside the pipeline.
    cli("baseline", model, "--schedule", "zbv", "--devices", "2", "--microbatches", "4", "--gpus", "4",
        "--tensor-parallel", "2", "-o", sched)
    export(sched, str(tmp_path / "pt"), model)
    script = os.path.join(ROOT, "python", "examples", "train_reference.py")
    rc, out = torchrun(2, [script, str(tmp_path / "pt"), model, "--steps", "4"], timeout=300)
    losses = [float(x) for x in re.findall(r"^step \d+: loss ([0-9.]+)$", out, re.M)]
    assert rc == 0 and len(losses) == 4, out[-4000:]
    assert all(b < a for a, b in zip(losses, losses[1:])), losses
