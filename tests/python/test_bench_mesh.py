"""bench/mesh: one small row run through the command a user runs, its table's shape, and the three
schedules behind it read back by the CLI; the flags' refusals; the verdict lines from given numbers."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

from conftest import ROOT, cli, pipesmith_binary

BENCH = os.path.join(ROOT, "bench", "mesh")


def _bench_module():
    spec = importlib.util.spec_from_file_location("mesh_bench", os.path.join(ROOT, "bench", "mesh_bench.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules["mesh_bench"] = mod
    spec.loader.exec_module(mod)
    return mod


mb = _bench_module()


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PIPESMITH=pipesmith_binary(), PIPESMITH_PYTHON=sys.executable)
    return subprocess.run([BENCH, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)


def test_one_row_table_and_its_schedules(tmp_path):
    keep = tmp_path / "keep"
    out = tmp_path / "table.md"
    p = _run("--models", "gpt-oss-120b", "--evaluations", "2", "--top", "3", "--keep", str(keep), "-o", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    text = p.stdout
    assert out.read_text() == text  # -o writes what was printed
    assert "iterations hold each stage's data-parallel step" in text
    lines = text.splitlines()
    header = next(i for i, l in enumerate(lines) if l.startswith("| model |"))
    cols = [c.strip() for c in lines[header].strip("|").split("|")]
    assert cols == ["model", "GPUs", "schedule", "mesh", "iteration ms", "tokens/s", "TFLOP/s per GPU", "measured",
                    "MFU", "peak GB per GPU", "notes"]
    body = [l for l in lines[header + 2:] if l.startswith("|")]
    assert len(body) == 3
    cells = [[c.strip() for c in l.strip("|").split("|")] for l in body]
    assert [c[2] for c in cells] == ["(a) interleaved 1F1B", "(b) pipesmith synth", "(c) pipesmith plan"]
    assert all(c[0] == "gpt-oss-120b (4k)" and c[1] == "64" for c in cells)
    assert cells[0][3] == cells[1][3] == "TP1 PP4 EP8 DP16"  # (a) and (b) on the published mesh
    # (c): plan, given the published mesh as a candidate, is never slower than (b) on it.
    assert float(cells[2][4]) <= float(cells[1][4])
    verdicts = [l for l in lines if l.startswith("- **gpt-oss-120b")]
    assert len(verdicts) == 1

    # Each printed figure is the CLI's own reading of a schedule file the bench wrote.
    files = {"(a) interleaved 1F1B": "a-interleaved-1f1b.yaml", "(b) pipesmith synth": "b-synth.yaml",
             "(c) pipesmith plan": "c-plan.yaml"}
    for c in cells:
        sched = keep / "gpt-oss-120b" / files[c[2]]
        assert c[4] != "refused", c
        j = json.loads(cli("verify", str(sched), "--json").stdout)
        assert j["valid"] is True
        assert float(c[4]) == round(j["makespan_ms"], 1)
        assert float(c[6]) == round(j["tflops_per_gpu"], 1)
        assert float(c[9]) == round(max(j["peak_memory_gb"]), 1) <= 80.0
    # Which command wrote each, on which mesh: (a) Megatron's interleaved 1F1B and (b) synth on the row's
    # 64 GPUs over 4 devices, (c) plan's mesh on the same 64 GPUs.
    heads = {k: (keep / "gpt-oss-120b" / f).read_text().split("\nstages:", 1)[0] for k, f in files.items()}
    assert "generator: pipesmith baseline interleaved-1f1b" in heads["(a) interleaved 1F1B"]
    assert "generator: pipesmith synth" in heads["(b) pipesmith synth"]
    for h in heads.values():
        assert "mesh: {gpus: 64, tokens_per_iteration: 2097152," in h
    assert "  devices: 4\n" in heads["(a) interleaved 1F1B"] and "  devices: 4\n" in heads["(b) pipesmith synth"]


def test_json_rows(tmp_path):
    p = _run("--models", "gpt-oss-120b", "--evaluations", "2", "--top", "3", "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads(p.stdout)
    assert doc["format"] == "pipesmith-bench-mesh/1"
    [row] = doc["rows"]
    assert row["key"] == "gpt-oss-120b" and row["gpus"] == 64 and row["global_batch"] == 512
    assert [r["label"] for r in row["results"]] == ["(a) interleaved 1F1B", "(b) pipesmith synth",
                                                    "(c) pipesmith plan"]
    assert all(r["ok"] and r["iteration_ms"] > 0 for r in row["results"])
    assert row["results"][2]["plan"]["enumerated"] > 0


def test_flags_are_checked():
    for args, needle in [(["--models", "nope"], "unknown row nope"), (["--evaluations", "0"], "--evaluations 0"),
                         (["--top", "0"], "--top 0"), (["--models", ","], "(none given)")]:
        p = _run(*args, timeout=60)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert needle in p.stderr, (args, p.stderr)


def _res(label, ms, mesh="TP1 PP4 EP8 DP16", ok=True, plan=None):
    return mb.Result(label, mesh, ok, iteration_ms=ms, plan=plan or {})


def test_verdicts_from_numbers():
    row = next(r for r in mb.ROWS if r.key == "gpt-oss-120b")
    ok = mb.verdict(row, [_res("(a)", 300), _res("(b)", 200), _res("(c)", 100, "TP1 PP2 EP8 DP32")])
    assert ok.startswith("(c) <= (b) <= (a) holds: 100 <= 200 <= 300 ms")
    assert "more data parallelism (DP32 against DP16)" in ok
    plan = {"attempted": 3, "enumerated": 101, "pruned": 40, "refused": 0, "no_schedule": 2,
            "own_mesh": "not synthesized (below the top by the estimate)", "own_rank_by_estimate": 20}
    slow = mb.verdict(row, [_res("(a)", 300), _res("(b)", 200), _res("(c)", 400, "TP2 PP32 DP1 SP", plan=plan)])
    assert "100.00 % slower than the published mesh" in slow and "ranked 20 by the estimate" in slow
    assert "2 of them got no schedule" in slow
    own = dict(plan, own_mesh="synthesized", own_iteration_ms=250.0)
    cand = mb.verdict(row, [_res("(a)", 300), _res("(b)", 200), _res("(c)", 240, "TP2 PP32 DP1 SP", plan=own)])
    assert "plan's own synthesis of the published mesh (its candidate) took 250 ms against synth's 200 ms" in cand
    behind = mb.verdict(row, [_res("(a)", 190), _res("(b)", 200), _res("(c)", 200)])
    assert "(b) is slower than (a) by 5.3 %" in behind
    same = mb.verdict(row, [_res("(a)", 300), _res("(b)", 200), _res("(c)", 200.04)])
    assert "0.02 % slower" in same and "the same mesh, synthesized inside plan" in same

    llama = next(r for r in mb.ROWS if r.key == "llama3-405b-8k-8192")
    a = mb.Result("(a)", "TP8 PP16 DP64 SP", True, iteration_ms=19000, tflops_per_gpu=272, note="V=2, recompute full")
    b = mb.Result("(b)", "TP8 PP16 DP64 SP", True, iteration_ms=13000, tflops_per_gpu=387)
    c = mb.Result("(c)", "TP8 PP16 DP64 SP", True, iteration_ms=13000)
    lv = mb.verdict(llama, [a, b, c])
    assert "(a) fits the GPU's memory only with full recomputation" in lv
    assert "387 against the 430 measured (-10.0 %), Megatron's interleaved 1F1B 272" in lv
    refused = mb.verdict(row, [_res("(a)", 0, ok=False), _res("(b)", 200), _res("(c)", 200)])
    assert refused == "(a) got no schedule (the row says why); (c) <= (b) holds: 200 <= 200 ms"
