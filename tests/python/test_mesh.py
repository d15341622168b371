"""The mesh through the Python API: pipesmith.load_spec's keyword arguments map the parallel: section
(one reader in the library), their errors are BadInputErrors, and a schedule synthesized under a mesh
reports its throughput and MFU in the report's JSON."""
from __future__ import annotations

import json
import os

import pytest

from conftest import model_path

import pipesmith
from pipesmith.errors import BadInputError


def _with_section(tmp_path, section: str) -> str:
    text = open(model_path("llama2-7b")).read() + section
    path = os.path.join(tmp_path, "llama2-7b-mesh.yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def test_keyword_arguments_are_the_parallel_section(tmp_path):
    section = _with_section(tmp_path, "parallel: {tensor: 4, data: 2, micro_batch: 2, global_batch: 64, "
                                      "sequence_parallel: true, optimizer: distributed}\n")
    a = pipesmith.load_spec(section)
    b = pipesmith.load_spec(model_path("llama2-7b"), tensor_parallel=4, data_parallel=2, micro_batch=2,
                            global_batch=64, sequence_parallel=True, optimizer="distributed")
    assert a.microbatches == b.microbatches == 16  # 64 / (2 x 2)
    ra = pipesmith.synthesize(a, evaluations=5)
    rb = pipesmith.synthesize(b, evaluations=5)
    ja, jb = json.loads(ra.report.json()), json.loads(rb.report.json())
    assert ja["valid"] and jb["valid"]
    assert ja["makespan_ms"] == jb["makespan_ms"]
    # 8 devices x 4 x 2 = 64 GPUs, 64 sequences of 4096 tokens an iteration
    assert ja["tokens_per_s"] == pytest.approx(64 * 4096 / (ja["makespan_ms"] / 1000))
    assert 0 < ja["mfu"] < 0.5
    assert ja["tflops_per_gpu"] == pytest.approx(ja["mfu"] * 989)
    # A keyword argument overrides the section.
    c = pipesmith.load_spec(section, global_batch=128)
    assert c.microbatches == 32


def test_the_data_parallel_step_is_in_the_schedule_and_the_report(tmp_path):
    """With data parallelism every stage gets a REDUCE_GRAD (and with FSDP an UNSHARD and a RESHARD) in
    the synthesized schedule; the report says how much of the step the pipeline does not hide."""
    for optimizer, ops in (("distributed", ("REDUCE_GRAD",)), ("fsdp", ("UNSHARD", "REDUCE_GRAD", "RESHARD"))):
        spec = pipesmith.load_spec(model_path("llama2-7b"), tensor_parallel=2, data_parallel=4, optimizer=optimizer)
        r = pipesmith.synthesize(spec, evaluations=5)
        assert r.report.valid
        actions = [a for prog in r.schedule.programs for a in prog]
        for op in ops:  # one per stage
            assert sorted(a for a in actions if a.endswith(op)) == sorted(f"{s}{op}" for s in range(r.schedule.num_stages))
        j = json.loads(r.report.json())
        assert r.report.exposed_data_parallel_ms == pytest.approx(j["exposed_data_parallel_ms"])
        assert 0 <= r.report.exposed_data_parallel_ms < r.report.makespan_ms


def test_cp_comm_type_all_gather_exposes_the_gathers():
    # Context parallelism's K/V exchange: the ring overlaps the attention core, the all-gather does not.
    iteration = {}
    for word in ("p2p", "all_gather"):
        spec = pipesmith.load_spec(model_path("llama2-7b"), context_parallel=2, tensor_parallel=2,
                                   optimizer="distributed", cp_comm_type=word)
        report = json.loads(pipesmith.synthesize(spec, evaluations=5).report.json())
        assert report["valid"]
        iteration[word] = report["makespan_ms"]
    assert iteration["all_gather"] > iteration["p2p"]


def test_no_mesh_no_throughput():
    spec = pipesmith.load_spec(model_path("llama2-7b"))
    r = pipesmith.synthesize(spec, evaluations=5)
    assert "mfu" not in json.loads(r.report.json())


@pytest.mark.parametrize("kwargs, words", [
    ({"tensor_parallel": 0}, "tensor_parallel must be an integer in [1, 1,048,576], got 0"),
    ({"tensor_parallel": 2.0}, "tensor_parallel must be an integer"),
    ({"optimizer": "zero3"}, "the optimizer override: unknown optimizer 'zero3'"),
    ({"optimizer": 3}, "optimizer must be 'replicated', 'distributed' or 'fsdp'"),
    ({"sequence_parallel": "yes"}, "sequence_parallel must be True or False"),
    ({"context_parallel": 2, "cp_comm_type": "a2a"},
     "the cp_comm_type override: 'a2a' (the all-to-all context parallelism) is not modelled"),
    ({"cp_comm_type": 2}, "cp_comm_type must be 'p2p' or 'all_gather'"),
    ({"tensor_parallel": 64}, "architecture.num_attention_heads (32) must be divisible by parallel.tensor (64)"),
    ({"gpus": 100}, "the gpus override (100) is not a multiple of pipeline devices (8)"),
    ({"data_parallel": 2, "global_batch": 3}, "the global_batch override (3) must be a multiple of micro_batch (1)"),
])
def test_refusals(kwargs, words):
    with pytest.raises(BadInputError) as e:
        pipesmith.load_spec(model_path("llama2-7b"), **kwargs)
    assert words in str(e.value)


def test_plan_ranks_meshes_and_returns_the_best_schedule():
    rows, best = pipesmith.plan(model_path("llama2-7b"), gpus=32, global_batch=32, top=2, evaluations=5,
                                fix={"tensor": 2})
    synthesized = [r for r in rows if r["synthesized"]]
    assert 1 <= len(synthesized) <= 2  # --top 2; a mesh whose bound is no better than the best is pruned
    assert [r["iteration_ms"] for r in synthesized] == sorted(r["iteration_ms"] for r in synthesized)
    for r in rows:
        assert r["tensor"] == 2 and r["cp_comm_type"] == "p2p"
        assert r["pipeline"] * r["data"] * r["context"] * r["tensor"] == 32
        if r["note"].startswith("pruned: lower bound"):
            assert r["bound_ms"] >= synthesized[0]["iteration_ms"]
    report = pipesmith.verify(best)
    assert report.valid
    assert json.loads(report.json())["makespan_ms"] == pytest.approx(synthesized[0]["iteration_ms"])
    again, _ = pipesmith.plan(model_path("llama2-7b"), gpus=32, global_batch=32, top=2, evaluations=5,
                              fix={"tensor": 2})
    assert again == rows


def test_plan_candidates_are_synthesized_and_ranked():
    # --top 1 synthesizes the estimate's first mesh; the candidate, pipeline 8 x tensor 4, is synthesized too.
    candidate = {"pipeline": 8, "tensor": 4, "optimizer": "distributed"}
    rows, best = pipesmith.plan(model_path("llama2-7b"), gpus=32, global_batch=32, top=1, evaluations=5,
                                fix={"tensor": 4}, candidates=[candidate])
    given = [r for r in rows if r["candidate"]]
    assert len(given) == 1
    g = given[0]
    assert (g["pipeline"], g["tensor"], g["data"], g["optimizer"]) == (8, 4, 1, "distributed")
    assert g["synthesized"]
    same = [r for r in rows if (r["pipeline"], r["tensor"], r["context"], r["micro_batch"], r["optimizer"])
            == (8, 4, 1, 1, "distributed")]
    assert same == [g]  # synthesized once, as the candidate
    assert rows[0]["synthesized"] and rows[0]["iteration_ms"] <= g["iteration_ms"]
    assert json.loads(pipesmith.verify(best).json())["makespan_ms"] == pytest.approx(rows[0]["iteration_ms"])


def test_plan_progress_reports_each_synthesis_and_raises_what_the_callback_raised():
    reports = []
    rows, _ = pipesmith.plan(model_path("llama2-7b"), gpus=32, global_batch=32, top=1, evaluations=3,
                             fix={"tensor": 4}, candidates=[{"pipeline": 8, "tensor": 4}], progress=reports.append)
    attempted = [r for r in rows if r["synthesized"] or r["note"].startswith("no schedule")]
    assert len(reports) == 2 * len(attempted)
    assert [r["done"] for r in reports] == [False, True] * len(attempted)
    first_start, first_end = reports[0], reports[1]
    assert first_start["index"] == 1 and first_start["candidate"] and first_start["best_ms"] == 0
    assert first_start["mesh"] == "PP 8 x DP 1 x CP 1 x TP 4 SP"
    assert first_end["synthesized"] and first_end["best_ms"] == first_end["iteration_ms"] > 0
    assert reports[-1]["best_ms"] == pytest.approx(rows[0]["iteration_ms"])

    def stop(report):
        raise KeyError("from the callback")
    with pytest.raises(KeyError, match="from the callback"):
        pipesmith.plan(model_path("llama2-7b"), gpus=32, global_batch=32, top=1, evaluations=3, fix={"tensor": 4},
                       progress=stop)
    with pytest.raises(BadInputError, match="progress must be callable"):
        pipesmith.plan(model_path("llama2-7b"), gpus=32, global_batch=32, progress=3)


@pytest.mark.parametrize("kwargs, words", [
    ({"fix": {"width": 2}}, "fix: unknown dimension 'width'"),
    ({"candidates": [{"tensor": 2}]}, "candidates[0]: the pipeline's devices are not given"),
    ({"candidates": [{"pipeline": 4, "tensor": 3}]}, "plan: candidate mesh 1 (pipeline=4,tensor=3): "),
    ({"candidates": {"pipeline": 4}}, "candidates must be a list of dicts"),
    ({"candidates": [{"pipeline": 4, "expert": "8"}]}, "candidates[0]['expert'] must be an integer"),
    ({"fix": {"tensor": 0}}, "fix['tensor'] must be an integer"),
    ({"fix": {"cp_comm_type": "ring"}}, "fix['cp_comm_type'] must be 'p2p' or 'all_gather'"),
    ({"gpus": 0}, "gpus must be an integer"),
])
def test_plan_refusals(kwargs, words):
    args = {"gpus": 32, "global_batch": 32, **kwargs}
    with pytest.raises(BadInputError) as e:
        pipesmith.plan(model_path("llama2-7b"), **args)
    assert words in str(e.value)


def test_plan_infeasible():
    with pytest.raises(pipesmith.errors.InfeasibleError):
        pipesmith.plan(model_path("llama2-7b"), gpus=8, global_batch=8, memory_limit_gb=1, top=1, evaluations=2)
