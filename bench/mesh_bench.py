"""bench/mesh's body: the pipeline inside published meshes (run bench/mesh; docs/mesh.md, "bench/mesh").

For each row (a model on a published or framework-default mesh) the bench imports the model from its
config.json in bench/data/hf (`pipesmith import hf`, at the row's sequence length) and runs, on the cluster
in bench/data/clusters:

  (a) `pipesmith baseline --schedule interleaved-1f1b` under the mesh flags: Megatron's interleaved 1F1B
      with V stages per device (the recipe's virtual pipeline size, else 2), Megatron's balanced partition,
      and the least recomputation (none, selective, full) with which it fits the GPU's memory;
  (b) `pipesmith synth --evaluations N --time-limit 5` under the same mesh flags: pipesmith's partition,
      placement, order and recomputation on the same mesh (deterministic: a budget of candidates, the
      time limit sizing only Z3's resource limit);
  (c) `pipesmith plan --gpus G --global-batch B --evaluations N --top K --candidate MESH -o`: the best
      mesh plan finds for the same GPUs and global batch, with the row's own mesh given as a candidate
      (synthesized with the same options as every mesh plan enumerates, and ranked with them), so that
      plan's pick is never slower than the published mesh as plan schedules it.

Each schedule file is then read back by `pipesmith verify --json`, whose simulated iteration, tokens/s,
TFLOP/s per GPU, MFU and peak memory the table prints, so every figure comes from a certified schedule.
The iteration holds each stage's data-parallel gradient reduction (a REDUCE_GRAD op of the schedule,
docs/mesh.md, "The data-parallel step"): the gradients' reduction, the optimizer's update and, with the
distributed optimizer, the gathering of the updated parameters; the output says so.

The rows and where their meshes come from:

- Llama-3.1-405B, three rows: the Llama 3 report (Dubey et al. 2024, arXiv 2407.21783, Table 4):
  8,192 H100s TP 8, PP 16, DP 64 at 8k sequences and 16M tokens a step (430 TFLOP/s per GPU measured);
  16,384 H100s TP 8, PP 16, DP 128, the same batch (400); 16,384 H100s TP 8, CP 16, PP 16 at 128k
  sequences, 16M tokens a step (380; DP = 16,384 / (8 x 16 x 16) = 8 and 128 sequences of 128k).
  Sequence parallelism and the distributed optimizer as Megatron-style training runs them. The 128k
  row's context parallelism all-gathers K and V before each attention, its latency exposed, as the
  report's section 3.3.2 describes it (cp_comm_type all_gather; docs/mesh.md).
- DeepSeek-V3: the DeepSeek-V3 report (arXiv 2412.19437, section 3.2): 2,048 H800s, PP 16, EP 64 (over
  8 nodes), TP 1, ZeRO-1 (distributed optimizer); 4k sequences and the batch of 3,072 sequences the
  training starts with (section 4.2: 3,072 rising to 15,360 over the first 469B tokens; at 15,360, M = 120
  a pipeline, plan's syntheses alone take the bench past 10 minutes on 2 cores). DeepSeek ran its own
  DualPipe order; (a) is Megatron's interleaved 1F1B on that mesh.
- Kimi-K2: the Kimi K2 report (arXiv 2507.20534, "Training Infrastructure"): each model
  instance on H800s with 16-way pipeline parallelism (with virtual stages), 16-way expert
  parallelism and ZeRO-1 data parallelism; 4k sequences. The report's batch (67M tokens) and GPU count
  are not the bench's: it takes DeepSeek-V3's 2,048 H800s (DP 128) and 2,048 sequences (M = 16 a
  pipeline), so that plan's syntheses stay within the bench's time.
- Qwen3-235B-A22B: Megatron-Bridge's default pre-training recipe (NVIDIA-NeMo/Megatron-Bridge,
  src/megatron/bridge/recipes/qwen/qwen3_235b_a22b.py, pretrain_config): 16 nodes x 8 GPUs, TP 4, PP 16,
  CP 2, EP 8, ETP 1, sequence parallel, distributed optimizer, global batch 32, micro-batch 1, 4k.
- gpt-oss-120b: Megatron-Bridge's default (recipes/gpt_oss/gpt_oss.py, gpt_oss_120b_pretrain_config):
  TP 1, PP 4, EP 8, distributed optimizer, global batch 512, micro-batch 1, 4k sequences. The recipe
  names no GPU count: the bench takes 64 H100s (8 nodes, DP 16; EP 8 needs DP >= 8 at TP 1).
- Nemotron-H-56B: Megatron-Bridge's default (recipes/nemotronh, nemotronh_56b_pretrain_config) is TP 8,
  PP 1 on one node: no pipeline. The bench keeps TP 8 with sequence parallelism and the distributed
  optimizer and adds PP 4 on 512 H100s (DP 16), 8k sequences, global batch 768 — its own choice, so
  that the row has a pipeline to schedule.
- Mixtral-8x22B: NeMo 2.0's default pre-training recipe (NVIDIA/NeMo,
  nemo/collections/llm/recipes/mixtral_8x22b.py, trainer and pretrain_recipe): 16 nodes x 8 GPUs, TP 2,
  PP 4, virtual pipeline 14, CP 2, EP 8 (ETP = TP, Megatron's default), sequence parallel, distributed
  Adam, global batch 512, micro-batch 1, 4k sequences.

Model configs: bench/data/hf (bench/data/README.md names each file's source). Clusters: bench/data/clusters.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/: its shared helpers
from bench_proc import run_group  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "bench", "data")


@dataclasses.dataclass(frozen=True)
class Mesh:
    key: str            # row id (--models)
    model: str          # shown name
    config: str         # bench/data/hf/<config>
    cluster: str        # bench/data/clusters/<cluster>.yaml
    gpus: int
    pp: int
    tp: int = 1
    cp: int = 1
    ep: int = 1
    etp: int = 1
    sp: bool = False
    optimizer: str = "distributed"
    cp_comm: str = "p2p"  # how context parallelism moves K and V (parallel.cp_comm_type)
    global_batch: int = 1
    micro_batch: int = 1
    seq: int = 4096
    vpp: int = 2        # Megatron's virtual stages per device for (a)
    measured_tflops: float | None = None  # published TFLOP/s per GPU
    source: str = ""

    def mesh_flags(self) -> list[str]:
        f = ["--gpus", str(self.gpus), "--devices", str(self.pp), "--tensor-parallel", str(self.tp),
             "--context-parallel", str(self.cp), "--expert-parallel", str(self.ep),
             "--expert-tensor-parallel", str(self.etp), "--optimizer", self.optimizer,
             "--global-batch", str(self.global_batch), "--micro-batch", str(self.micro_batch)]
        f += ["--cp-comm-type", self.cp_comm] if self.cp > 1 else []
        return f + (["--sequence-parallel"] if self.sp else [])

    def candidate(self) -> str:
        """The mesh as `plan --candidate` takes it."""
        return (f"pipeline={self.pp},tensor={self.tp},context={self.cp},expert={self.ep},expert_tensor={self.etp},"
                f"micro_batch={self.micro_batch},optimizer={self.optimizer},"
                f"sequence_parallel={'true' if self.sp else 'false'}" +
                (f",cp_comm_type={self.cp_comm}" if self.cp > 1 else ""))

    def describe(self) -> str:
        dp = self.gpus // (self.pp * self.tp * self.cp)
        cp = f"CP{self.cp}" + (" (all_gather)" if self.cp_comm == "all_gather" else "")
        parts = [f"TP{self.tp}"] + ([cp] if self.cp > 1 else []) + [f"PP{self.pp}"]
        parts += ([f"EP{self.ep}"] if self.ep > 1 else []) + ([f"ETP{self.etp}"] if self.etp > 1 else [])
        parts += [f"DP{dp}"]
        return " ".join(parts) + (" SP" if self.sp else "")


ROWS = [
    Mesh("llama3-405b-8k-8192", "Llama-3.1-405B", "llama-3.1-405b.json", "h100", 8192, 16, tp=8, sp=True,
         global_batch=2048, seq=8192, measured_tflops=430, source="Llama 3 report, Table 4"),
    Mesh("llama3-405b-8k-16384", "Llama-3.1-405B", "llama-3.1-405b.json", "h100", 16384, 16, tp=8, sp=True,
         global_batch=2048, seq=8192, measured_tflops=400, source="Llama 3 report, Table 4"),
    Mesh("llama3-405b-128k-16384", "Llama-3.1-405B", "llama-3.1-405b.json", "h100", 16384, 16, tp=8, cp=16,
         sp=True, global_batch=128, seq=131072, cp_comm="all_gather", measured_tflops=380,
         source="Llama 3 report, Table 4; its context parallelism all-gathers K and V, exposed (section 3.3.2)"),
    Mesh("deepseek-v3", "DeepSeek-V3", "deepseek-v3.json", "h800", 2048, 16, ep=64, global_batch=3072,
         seq=4096, source="DeepSeek-V3 report, sections 3.2 and 4.2"),
    Mesh("kimi-k2", "Kimi-K2", "kimi-k2.json", "h800", 2048, 16, ep=16, global_batch=2048, seq=4096,
         source="Kimi K2 report, Training Infrastructure (PP 16, EP 16, ZeRO-1 on H800s); 2,048 GPUs and 2,048 sequences: "
                "the bench's choice"),
    Mesh("qwen3-235b-a22b", "Qwen3-235B-A22B", "qwen3-235b-a22b.json", "h100", 128, 16, tp=4, cp=2, ep=8,
         sp=True, global_batch=32, seq=4096, source="Megatron-Bridge qwen3_235b_a22b pretrain_config"),
    Mesh("gpt-oss-120b", "gpt-oss-120b", "gpt-oss-120b.json", "h100", 64, 4, ep=8, global_batch=512,
         seq=4096, source="Megatron-Bridge gpt_oss_120b_pretrain_config (64 GPUs: the bench's choice)"),
    Mesh("nemotron-h-56b", "Nemotron-H-56B", "nemotron-h-56b-base-8k.json", "h100", 512, 4, tp=8, sp=True,
         global_batch=768, seq=8192,
         source="Megatron-Bridge nemotronh_56b_pretrain_config TP 8; PP 4, 512 GPUs, batch 768: the bench's choice"),
    Mesh("mixtral-8x22b", "Mixtral-8x22B", "mixtral-8x22b-v0.1.json", "h100", 128, 4, tp=2, cp=2, ep=8, etp=2,
         sp=True, global_batch=512, seq=4096, vpp=14, source="NeMo 2.0 mixtral_8x22b recipe"),
]
# (b) and each of plan's syntheses run with the same options: --evaluations N and this time limit, from
# which Z3's share (a resource limit, so deterministic) derives.
TIME_LIMIT_S = 5
NOTE_DP = ("iterations hold each stage's data-parallel step (REDUCE_GRAD ops: the gradient reduction, the optimizer's "
           "update and the distributed optimizer's gathering of the updated weights; exposed ms per row in --json)")


def log(msg: str) -> None:
    print(f"bench/mesh: {msg}", file=sys.stderr, flush=True)


def run(cmd: list[str], timeout: float = 900) -> tuple[int, str]:
    return run_group(cmd, ROOT, timeout)


def refusal(out: str) -> str:
    """The first error line of a CLI's output, for the table."""
    for line in out.splitlines():
        if "error" in line.lower() or line.startswith("no schedule"):
            return line.replace("pipesmith: error: ", "").strip()
    lines = [l for l in out.splitlines() if l.strip()]
    return lines[-1].strip() if lines else "(no output)"


@dataclasses.dataclass
class Result:
    label: str           # (a), (b), (c)
    mesh: str
    ok: bool
    schedule: str = ""
    iteration_ms: float = 0.0
    tokens_per_s: float = 0.0
    tflops_per_gpu: float = 0.0
    mfu: float = 0.0
    peak_gb: float = 0.0
    exposed_dp_ms: float = 0.0  # the data-parallel reduction's time past the pipeline's end
    note: str = ""
    plan: dict = dataclasses.field(default_factory=dict)  # (c): how plan treated the row's own mesh


def verified(exe: str, label: str, mesh: str, sched: str, note: str) -> Result:
    rc, out = run([exe, "verify", sched, "--json"])
    if rc != 0:
        return Result(label, mesh, False, sched, note=f"verify exit {rc}: {refusal(out)}")
    j = json.loads(out)
    return Result(label, mesh, True, sched, j["makespan_ms"], j.get("tokens_per_s", 0.0),
                  j.get("tflops_per_gpu", 0.0), j.get("mfu", 0.0), max(j["peak_memory_gb"]),
                  j.get("exposed_data_parallel_ms", 0.0), note)


def bench_row(exe: str, row: Mesh, work: str, evaluations: int, top: int) -> list[Result]:
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, "model.yaml")
    cluster = os.path.join(DATA, "clusters", row.cluster + ".yaml")
    rc, out = run([exe, "import", "hf", os.path.join(DATA, "hf", row.config), "--seq-length", str(row.seq),
                   "-o", model])
    if rc != 0:
        raise SystemExit(f"bench/mesh: `pipesmith import hf {row.config}` exit {rc}:\n{out}")
    common = [model, "--cluster", cluster] + row.mesh_flags()
    results = []

    # (a) Megatron's interleaved 1F1B, the least recomputation that fits.
    sched_a = os.path.join(work, "a-interleaved-1f1b.yaml")
    refusals = []
    for rec in ("none", "selective", "full"):
        rc, out = run([exe, "baseline"] + common + ["--schedule", "interleaved-1f1b", "--stages-per-device",
                                                     str(row.vpp), "--recompute", rec, "-o", sched_a])
        if rc == 0:
            results.append(verified(exe, "(a) interleaved 1F1B", row.describe(), sched_a,
                                    f"V={row.vpp}, recompute {rec}"))
            break
        refusals.append(f"recompute {rec}: {refusal(out)}")
        if rc != 2:  # a refused mesh: recomputation will not change it
            break
    if not results:
        results.append(Result("(a) interleaved 1F1B", row.describe(), False, note="; ".join(refusals)))

    # (b) pipesmith's schedule on the same mesh.
    sched_b = os.path.join(work, "b-synth.yaml")
    rc, out = run([exe, "synth"] + common + ["--evaluations", str(evaluations), "--time-limit", str(TIME_LIMIT_S),
                                             "--quiet", "-o", sched_b])
    if rc == 0:
        results.append(verified(exe, "(b) pipesmith synth", row.describe(), sched_b, ""))
    else:
        results.append(Result("(b) pipesmith synth", row.describe(), False, note=f"exit {rc}: {refusal(out)}"))

    # (c) plan's best mesh for the same GPUs and global batch, the row's own mesh a candidate.
    sched_c = os.path.join(work, "c-plan.yaml")
    rc, out = run([exe, "plan", model, "--cluster", cluster, "--gpus", str(row.gpus), "--global-batch",
                   str(row.global_batch), "--evaluations", str(evaluations), "--time-limit", str(TIME_LIMIT_S),
                   "--top", str(top), "--json", "--quiet",
                   "--candidate", row.candidate(), "-o", sched_c], timeout=1800)
    if rc in (0, 2) and "{" in out:
        plan_info = plan_summary(json.loads(out[out.index("{"):]), row)
    else:
        plan_info = {}
    if rc == 0:
        best = next(r for r in json.loads(out[out.index("{"):])["rows"] if r["synthesized"])
        dims = [f"TP{best['tensor']}"] + ([f"CP{best['context']}"] if best["context"] > 1 else [])
        dims += [f"PP{best['pipeline']}"] + ([f"EP{best['expert']}"] if best["expert"] > 1 else [])
        dims += [f"ETP{best['expert_tensor']}"] if best["expert_tensor"] > 1 else []
        dims += [f"DP{best['data']}"]
        mesh = " ".join(dims) + (" SP" if best["sequence_parallel"] else "")
        note = f"{best['stages']} stages, {best['optimizer']} optimizer"
        note += f", micro-batch {best['micro_batch']}" if best["micro_batch"] > 1 else ""
        note += ", the published mesh (plan's candidate)" if best["candidate"] else ""
        results.append(verified(exe, "(c) pipesmith plan", mesh, sched_c, note))
    else:
        results.append(Result("(c) pipesmith plan", "-", False, note=f"exit {rc}: {refusal(out)}"))
    results[-1].plan = plan_info
    return results


def plan_summary(doc: dict, row: Mesh) -> dict:
    """Where plan's enumeration put the row's own mesh, and how its synthesized meshes fared."""
    dp = row.gpus // (row.pp * row.tp * row.cp)
    ranked = sorted((r for r in doc["rows"] if not r["note"].startswith(("pruned", "refused"))),
                    key=lambda r: r["estimate_ms"])
    own = [r for r in doc["rows"] if r.get("candidate")] or \
        [r for r in doc["rows"] if (r["pipeline"], r["tensor"], r["context"], r["expert"], r["data"])
         == (row.pp, row.tp, row.cp, row.ep, dp)]
    info = {"enumerated": doc["enumerated"], "refused": doc["refused"], "pruned": doc["pruned"],
            "pruned_by_bound": doc.get("pruned_by_bound", 0),
            "attempted": sum(1 for r in doc["rows"] if r["synthesized"] or r["note"].startswith("no schedule")),
            "no_schedule": sum(1 for r in doc["rows"] if r["note"].startswith("no schedule"))}
    if own:
        o = own[0]
        info["own_mesh"] = ("synthesized" if o["synthesized"] else o["note"].split(":")[0] or "not synthesized")
        if o in ranked:
            info["own_rank_by_estimate"] = ranked.index(o) + 1
        if "iteration_ms" in o and o["synthesized"]:
            info["own_iteration_ms"] = o["iteration_ms"]
    else:
        info["own_mesh"] = "not enumerated"
    return info


def verdict(row: Mesh, res: list[Result]) -> str:
    a, b, c = res
    parts = []
    failed = [r.label.split()[0] for r in res if not r.ok]
    if failed:
        parts.append(f"{', '.join(failed)} got no schedule (the row says why)")
    if not (b.ok and c.ok):
        return "; ".join(parts)
    if a.ok and c.iteration_ms <= b.iteration_ms * (1 + 1e-9) and b.iteration_ms <= a.iteration_ms * (1 + 1e-9):
        parts.append(f"(c) <= (b) <= (a) holds: {c.iteration_ms:.0f} <= {b.iteration_ms:.0f} <= "
                     f"{a.iteration_ms:.0f} ms")
    elif not a.ok and c.iteration_ms <= b.iteration_ms * (1 + 1e-9):
        parts.append(f"(c) <= (b) holds: {c.iteration_ms:.0f} <= {b.iteration_ms:.0f} ms")
    if a.ok and b.iteration_ms > a.iteration_ms * (1 + 1e-9):
        parts.append(f"(b) is slower than (a) by {100 * (b.iteration_ms / a.iteration_ms - 1):.1f} %: the search's "
                     f"{b.note or 'budget'} did not reach Megatron's interleaved order on this mesh")
    if c.iteration_ms > b.iteration_ms * (1 + 1e-9):
        why = (f"plan's best ({c.mesh}) is {100 * (c.iteration_ms / b.iteration_ms - 1):.2f} % slower than the "
               f"published mesh with pipesmith's schedule")
        p = c.plan
        if "own_iteration_ms" in p and p["own_iteration_ms"] > b.iteration_ms * (1 + 1e-9):
            why += (f": plan's own synthesis of the published mesh (its candidate) took {p['own_iteration_ms']:.0f} ms "
                    f"against synth's {b.iteration_ms:.0f} ms on the same options")
        elif c.mesh == b.mesh:
            why += (": the same mesh, synthesized inside plan (its own candidate budget over the mesh's "
                    "partitions and placements) to a slightly different schedule than synth's")
        elif p:
            why += (f": plan synthesized the {p['attempted']} meshes its work estimate ranks first (of "
                    f"{p['enumerated']} enumerated, {p['pruned']} pruned, {p['refused']} refused), "
                    f"{p['no_schedule']} of them got no schedule at the memory limit, and the published mesh was ")
            if "own_rank_by_estimate" in p and p["own_mesh"] != "synthesized":
                why += f"ranked {p['own_rank_by_estimate']} by the estimate ({p['own_mesh']})"
            else:
                why += p["own_mesh"]
        parts.append(why)
    elif c.mesh != b.mesh and c.iteration_ms < b.iteration_ms:
        dp_b = row.gpus // (row.pp * row.tp * row.cp)
        dp_c = int(c.mesh.split("DP")[1].split()[0])
        if dp_c > dp_b:
            parts.append(f"plan's mesh has more data parallelism (DP{dp_c} against DP{dp_b}) and is "
                         f"{100 * (1 - c.iteration_ms / b.iteration_ms):.1f} % shorter with its data-parallel step "
                         f"in the iteration ({c.exposed_dp_ms:.0f} ms exposed against {b.exposed_dp_ms:.0f})")
    if a.ok and (a.note.endswith("recompute full") or a.note.endswith("recompute selective")):
        parts.append(f"(a) fits the GPU's memory only with {a.note.split('recompute ')[1]} recomputation on "
                     f"every stage, where (b)'s search recomputes only where memory binds")
    if row.measured_tflops and a.ok:
        parts.append(f"simulated TFLOP/s per GPU with pipesmith's schedule {b.tflops_per_gpu:.0f} against the "
                     f"{row.measured_tflops:.0f} measured ({100 * (b.tflops_per_gpu / row.measured_tflops - 1):+.1f} %), "
                     f"Megatron's interleaved 1F1B {a.tflops_per_gpu:.0f}")
    return "; ".join(parts)


def table(rows: list[tuple[Mesh, list[Result]]]) -> str:
    out = [f"Note: {NOTE_DP}.", "",
           "| model | GPUs | schedule | mesh | iteration ms | tokens/s | TFLOP/s per GPU | measured | MFU | "
           "peak GB per GPU | notes |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row, res in rows:
        for r in res:
            meas = f"{row.measured_tflops:.0f}" if row.measured_tflops else "-"
            if r.ok:
                out.append(f"| {row.model} ({row.seq // 1024}k) | {row.gpus} | {r.label} | {r.mesh} | "
                           f"{r.iteration_ms:.1f} | {r.tokens_per_s:.0f} | {r.tflops_per_gpu:.1f} | {meas} | "
                           f"{100 * r.mfu:.1f}% | {r.peak_gb:.1f} | {r.note} |")
            else:
                out.append(f"| {row.model} ({row.seq // 1024}k) | {row.gpus} | {r.label} | {r.mesh} | "
                           f"refused | - | - | {meas} | - | - | {r.note.replace('|', '/')} |")
    out.append("")
    for row, res in rows:
        out.append(f"- **{row.model}, {row.gpus} GPUs, {row.seq // 1024}k** ({row.source}): {verdict(row, res)}")
    return "\n".join(out) + "\n"


def as_json(rows: list[tuple[Mesh, list[Result]]], evaluations: int, top: int) -> str:
    doc = {"format": "pipesmith-bench-mesh/1", "evaluations": evaluations, "top": top, "note": NOTE_DP,
           "rows": [{"key": row.key, "model": row.model, "gpus": row.gpus, "seq_length": row.seq,
                     "global_batch": row.global_batch, "source": row.source,
                     "measured_tflops_per_gpu": row.measured_tflops, "verdict": verdict(row, res),
                     "results": [dataclasses.asdict(r) for r in res]} for row, res in rows]}
    return json.dumps(doc, indent=2) + "\n"


def write_atomic(path: str, text: str) -> None:
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".bench-mesh.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def main() -> int:
    ap = argparse.ArgumentParser(prog="bench/mesh", description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="all",
                    help="comma-separated row ids (default all): " + ", ".join(r.key for r in ROWS))
    ap.add_argument("--evaluations", type=int, default=20,
                    help="candidates per synthesis, for (b) and each of plan's meshes (default 20)")
    ap.add_argument("--top", type=int, default=3, help="meshes plan synthesizes (default 3)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON instead of the table")
    ap.add_argument("-o", "--output", help="also write what is printed to this file (atomically)")
    ap.add_argument("--keep", help="keep the models and schedule files under this directory")
    args = ap.parse_args()
    if not 1 <= args.evaluations <= 1_000_000:
        ap.error(f"--evaluations {args.evaluations}: must be in 1 .. 1000000")
    if not 1 <= args.top <= 1000:
        ap.error(f"--top {args.top}: must be in 1 .. 1000")
    keys = [r.key for r in ROWS]
    wanted = keys if args.models == "all" else [k.strip() for k in args.models.split(",") if k.strip()]
    unknown = [k for k in wanted if k not in keys]
    if unknown or not wanted:
        ap.error(f"--models: unknown row {', '.join(unknown) or '(none given)'}; rows: {', '.join(keys)}")
    exe = os.path.abspath(os.environ.get("PIPESMITH", os.path.join(ROOT, "build", "cli", "pipesmith")))
    if not os.access(exe, os.X_OK):
        print(f"bench/mesh: no pipesmith CLI at {exe} (set PIPESMITH or PIPESMITH_BUILD_DIR)", file=sys.stderr)
        return 1
    work = args.keep or tempfile.mkdtemp(prefix="bench-mesh.")
    rows = []
    t0 = time.monotonic()
    try:
        for row in (r for r in ROWS if r.key in wanted):
            log(f"{row.key}: {row.describe()} on {row.gpus} GPUs ...")
            res = bench_row(exe, row, os.path.join(work, row.key), args.evaluations, args.top)
            log(f"{row.key}: " + ", ".join(f"{r.label.split()[0]} {r.iteration_ms:.0f} ms" if r.ok else
                                           f"{r.label.split()[0]} refused" for r in res)
                + f" ({time.monotonic() - t0:.0f} s so far)")
            rows.append((row, res))
    finally:
        if not args.keep:
            subprocess.run(["rm", "-rf", work], check=False)
    text = as_json(rows, args.evaluations, args.top) if args.json else table(rows)
    sys.stdout.write(text)
    if args.output:
        write_atomic(args.output, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
