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


_LOAD_SPEC_KEYWORDS = (("devices", "spec.devices"), ("microbatches", "spec.microbatches"), ("gpus", "mesh.gpus"),
                       ("tensor_parallel", "mesh.tensor"), ("context_parallel", "mesh.context"),
                       ("expert_parallel", "mesh.expert"), ("expert_tensor_parallel", "mesh.expert_tensor"),
                       ("data_parallel", "mesh.data"), ("micro_batch", "mesh.micro_batch"),
                       ("global_batch", "mesh.global_batch"))


def test_load_spec_checks_its_overrides_with_the_options_table():
    options = _core_tables()["options"]
    spec_path = os.path.join(MODELS, "llama2-7b.yaml")
    for keyword, key in _LOAD_SPEC_KEYWORDS:
        lo, hi = options[key]
        for v in (lo - 1, hi + 1):
            with pytest.raises(pipesmith.BadInputError,
                               match=rf"^{keyword} must be an integer in \[{lo:,}, {hi:,}\], got {v:,}$"):
                pipesmith.load_spec(spec_path, **{keyword: v})
    assert pipesmith.load_spec(spec_path, microbatches=options["spec.microbatches"][0]).microbatches == 1


def test_plan_dimensions_and_rlimit_take_the_options_table():
    options = _core_tables()["options"]
    model = os.path.join(MODELS, "llama2-7b.yaml")
    for dim, key in (("pipeline", "plan.devices"), ("tensor", "mesh.tensor"), ("expert_tensor", "mesh.expert_tensor"),
                     ("micro_batch", "mesh.micro_batch")):
        hi = options[key][1]
        with pytest.raises(pipesmith.BadInputError, match=rf"^fix\['{dim}'\] must be an integer in \[1, {hi:,}\]"):
            pipesmith.plan(model, gpus=8, global_batch=8, fix={dim: hi + 1})
    for keyword, key in (("gpus", "mesh.gpus"), ("global_batch", "mesh.global_batch")):
        hi = options[key][1]
        kw = {"gpus": 8, "global_batch": 8, keyword: hi + 1}
        with pytest.raises(pipesmith.BadInputError, match=rf"^{keyword} must be an integer in \[1, {hi:,}\]"):
            pipesmith.plan(model, **kw)
    lo, hi = options["synth.rlimit"]
    assert lo == 0  # 0: Z3's share of the time limit
    with pytest.raises(pipesmith.BadInputError, match=rf"^rlimit must be an integer in \[0, {hi:,}\], got {hi + 1:,}$"):
        pipesmith.synthesize(pipesmith.load_spec(model, devices=2, microbatches=2), rlimit=hi + 1)


def test_torch_profile_sizes_are_the_options_tables():
    from pipesmith.torch.profile import ProfileError, ProfileOptions, profile_model
    options = _core_tables()["options"]
    spec = load_model(os.path.join(MODELS, "llama2-7b.yaml"))
    for name in ("hidden", "seq", "vocab", "rows", "threads", "concurrent", "warmup", "repeats"):
        lo, hi = options[f"profile.{name}"]
        for v in (lo - 1, hi + 1):
            with pytest.raises(ProfileError, match=rf"^{name} must be an integer in \[{lo}, {hi}\], got {v}$"):
                profile_model(spec, ProfileOptions(**{name: v}))
    with pytest.raises(ProfileError, match=r"^threads must be an integer in \[1, 1024\], got 2\.0; repeats must be"):
        profile_model(spec, ProfileOptions(threads=2.0, repeats=0))
