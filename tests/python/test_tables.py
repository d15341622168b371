"""pipesmith._tables is what ``python -m pipesmith._gen_tables`` writes from the core, and the Python
side's model reader and range checks read the core's kinds and bounds through it."""
from __future__ import annotations

import glob
import os

import pytest

import pipesmith
from pipesmith import _gen_tables, _tables
from pipesmith.torch.model_yaml import ModelFileError, load_model

from conftest import MODELS


def _core_tables() -> dict:
    from pipesmith import _core  # the suite runs on a build's package: the extension is there
    return _core.tables()


def test_tables_file_is_what_the_core_generates():
    with open(_tables.__file__, encoding="utf-8") as f:
        text = f.read()
    assert text == _gen_tables.render(_core_tables()), \
        "python/pipesmith/_tables.py differs from the core's tables: run `python -m pipesmith._gen_tables`"


def test_model_reader_expands_kinds_as_the_core_does():
    kinds = _core_tables()["kinds"]
    seen = set()
    for path in sorted(glob.glob(os.path.join(MODELS, "*.yaml"))):
        for t in load_model(path).types.values():
            if not t.kind:
                continue
            want = [c for part in t.kind.split("+") for c in kinds[part.strip()]]
            assert list(t.components) == want, (path, t.symbol, t.kind)
            seen.update(part.strip() for part in t.kind.split("+"))
    assert {"embedding", "attention", "mlp", "moe", "head"} <= seen  # the shipped models exercise the table


def test_unknown_kind_lists_the_cores_kinds(tmp_path):
    bad = tmp_path / "m.yaml"
    bad.write_text("schema: 1\nmodel:\n  name: x\n  layer_types:\n    E: {name: e, kind: dense_blok}\n  layers: E\n")
    with pytest.raises(ModelFileError) as e:
        load_model(str(bad))
    assert f"(known: {', '.join(sorted(_core_tables()['kinds']))})" in str(e.value)


def test_api_bounds_are_the_cores():
    limits = _core_tables()["limits"]
    spec_path = os.path.join(MODELS, "llama2-7b.yaml")
    for key, flag in (("devices", "devices"), ("microbatches", "microbatches"), ("gpus", "gpus")):
        top = limits[key]
        with pytest.raises(pipesmith.BadInputError, match=rf"^{flag} must be an integer in \[1, {top:,}\]"):
            pipesmith.load_spec(spec_path, **{flag: top + 1})
    assert pipesmith.load_spec(spec_path, devices=4).devices == 4
