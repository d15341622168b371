"""bench/torch's body: measured PyTorch step times against pipesmith's simulation (run bench/torch).

For each model: profile its layer types with PyTorch (`pipesmith profile --backend torch`), measure
the gloo link (`python -m pipesmith.torch.link`, once), write each schedule with the CLI on the
profiled costs (fused B included, as `backward_ms`), the measured link and the measured per-action
overhead (`op_overhead_ms`, see measure_overhead) (`pipesmith synth`, and `pipesmith baseline` for 1F1B,
interleaved 1F1B, ZB-H1 and ZB-V), export it (`pipesmith export --to pytorch`), simulate it
(`pipesmith simulate`, rendezvous and posted semantics), and time it in PyTorch
(`torchrun -m pipesmith.torch.steptime`: P ranks, one thread each, 1 + N steps, median of the N);
and the unpipelined step (one process, every microbatch's F and backward in turn). Prints one
Markdown table per model with its verdict (see verdict) and a summary; progress goes to stderr.

With ``--hf CONFIG.json [--layers N]`` the model is the transformers model of that config instead of
the shipped ones: profiled on its own layers (`pipesmith profile --backend torch --hf`), the plans
made with whole decoder layers (`synth --cuts layers`), run with its stages
(:func:`pipesmith.torch.hf.stage_modules`, `steptime --hf`), the unpipelined step its own
``model(input_ids, labels=...)``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/: its shared helpers
from bench_proc import run_group  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

# model, hidden size: each picked so that its heaviest layer's F takes >= 5 ms on one CPU thread here
# (the table states the measured F) and the whole bench runs in a few minutes on 2 cores.
MODELS = {"llama2-7b": 256, "gemma-like": 320, "gpt-oss-like": 176}
SCHEDULES = [  # label, command, flags
    ("synth", "synth", []),
    ("1f1b", "baseline", ["--schedule", "1f1b"]),
    ("interleaved-1f1b", "baseline", ["--schedule", "interleaved-1f1b"]),
    ("zb-h1", "baseline", ["--schedule", "zb-h1"]),
    ("zbv", "baseline", ["--schedule", "zbv"]),
]


def log(msg: str) -> None:
    print(f"bench/torch: {msg}", file=sys.stderr, flush=True)


def sh(cmd: list[str], timeout: float = 900, env: dict | None = None, ok=(0,)) -> str:
    rc, out = run_group(cmd, ROOT, timeout, env)
    if rc == 124 and out.startswith("timed out after"):
        raise SystemExit(f"bench/torch: timed out after {timeout:.0f} s: {' '.join(cmd)}\n{out[-4000:]}")
    if rc not in ok:
        raise SystemExit(f"bench/torch: exit {rc}: {' '.join(cmd)}\n{out[-4000:]}")
    return out


def simulate(exe: str, schedule: str, semantics: str) -> tuple[float, list[float]]:
    """(makespan ms, busy ms per device) of ``pipesmith simulate``."""
    # The schedule's certificate names rendezvous; under another semantics simulate reports that one
    # mismatch, or also its makespan's (exit 3), and still prints the timing.
    out = sh([exe, "simulate", schedule, "--semantics", semantics], ok=(0, 3))
    if "INVALID" in out and not re.search(r"INVALID under \w+ semantics: (\d+) violations? \(certificate.mismatch x\1\)", out):
        raise SystemExit(f"bench/torch: `pipesmith simulate {schedule} --semantics {semantics}`:\n{out}")
    m = re.search(r"^makespan_ms\s+([0-9.eE+-]+)", out, re.M)
    if not m:
        raise SystemExit(f"bench/torch: no makespan_ms in `pipesmith simulate {schedule}`:\n{out}")
    busy = [float(b) for b in re.findall(r"^\d+\s+([0-9.eE+-]+)\s+[0-9.eE+-]+\s+[0-9.eE+-]+\s+\d+\s+\d+$", out, re.M)]
    return float(m.group(1)), busy


@dataclasses.dataclass
class Row:
    label: str
    stages: int
    sim_rendezvous_ms: float
    sim_posted_ms: float
    sim_busy_ms: list[float]
    measured_ms: float = 0.0
    ranks: list[dict] = dataclasses.field(default_factory=list)  # the median step, per rank
    sim_ops_ms: float = 0.0  # posted, on the costs of the ops PyTorch runs (fused B for B-only schedules)
    same_partition: bool = True
    load: float = 1.0  # the load probe's sweep around this schedule's steps / the same sweep during the profile
    first_step_ms: float = 0.0
    steps_ms: list[float] = dataclasses.field(default_factory=list)  # the timed steps, in order


def b_only(pt_dir: str) -> bool:
    """Whether the exported schedule runs only fused backwards (no I or W cell)."""
    with open(os.path.join(pt_dir, "compute_only.csv")) as f:
        cells = [c for line in f for c in line.strip().split(",") if c]
    return not any(re.fullmatch(r"\d+[IW]\d+", c) for c in cells)


def stage_layers(pt_dir: str) -> list:
    with open(os.path.join(pt_dir, "plan.json")) as f:
        return [(s["rank"], s["layers"]) for s in json.load(f)["stages"]]


def ranks(values: list[float]) -> list[int]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0] * len(values)
    for pos, i in enumerate(order):
        r[i] = pos + 1
    return r


def measure_overhead(exe: str, profiled: str, cluster: str, odir: str, P: int, M: int, shape: list[str], args,
                     env: dict, model_flags: list[str]) -> float:
    """The runtime's own time per compute action, ms, for the cluster's op_overhead_ms: interleaved 1F1B
    on the profiled costs, run through PyTorch's runtime (`pipesmith.torch.steptime`, 3 timed steps);
    per rank, its median step's rest (the step less its timed compute actions and its waits for
    receives) over its compute actions; the median over the ranks. Interleaved 1F1B has twice 1F1B's
    actions per rank, so the per-step costs inside the rest (the loss, REDUCE_GRAD, the last sends)
    weigh less; they still count, so this errs high."""
    os.makedirs(odir, exist_ok=True)
    sched = os.path.join(odir, "schedule.yaml")
    sh([exe, "baseline", profiled, "--cluster", cluster, "--devices", str(P), "--microbatches", str(M),
        "--schedule", "interleaved-1f1b", "-o", sched])
    pt = os.path.join(odir, "pt")
    sh([exe, "export", sched, "--to", "pytorch", "-o", pt, "--model", profiled, "--cluster", cluster])
    res = os.path.join(odir, "steptime.json")
    sh([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(P),
        "-m", "pipesmith.torch.steptime", "--case", pt, profiled, "--steps", "3", *shape, *model_flags,
        "--rows-per-microbatch", str(args.rows_per_microbatch), "--json", res], env=env)
    per_action = []
    for x in json.load(open(res))[0]["median_step_ranks"]:
        busy = x["F_ms"] + x["I_ms"] + x["B_ms"] + x["W_ms"]
        per_action.append(max(0.0, x["step_ms"] - busy - x["wait_ms"]) / max(1.0, x["actions"]))
    return statistics.median(per_action)


def main(argv=None) -> int:
    from pipesmith.torch.profile import ProfileOptions
    d = ProfileOptions()
    ap = argparse.ArgumentParser(
        prog="bench/torch",
        description="Profile each model with PyTorch, make the synthesized plan and four baselines on the "
                    "measured costs, run them in PyTorch (P ranks, gloo, one thread each) and print the "
                    "measured median step beside pipesmith's simulation: a Markdown table per model, the "
                    "verdict under it (within 10 %?, is the first-ranked the fastest?) and a summary; "
                    "progress on stderr (docs/pytorch.md, \"Measured vs simulated\").")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated shipped models (configs/models)")
    ap.add_argument("--hidden", type=int, default=0, help="hidden size for every model (default: per model)")
    ap.add_argument("--seq", type=int, default=d.seq)
    ap.add_argument("--vocab", type=int, default=d.vocab)
    ap.add_argument("--rows-per-microbatch", type=int, default=d.rows)
    ap.add_argument("--devices", type=int, default=2)
    ap.add_argument("--microbatches", type=int, default=4)
    ap.add_argument("--steps", type=int, default=5, help="timed steps per schedule, after one untimed (default 5)")
    ap.add_argument("--repeats", type=int, default=7, help="profile repeats per layer type (default 7)")
    ap.add_argument("--concurrent", type=int, default=0,
                    help="profile with this many processes sweeping at once (default: P, as the ranks run)")
    ap.add_argument("--evaluations", type=int, default=30, help="pipesmith synth --evaluations (default 30)")
    ap.add_argument("--hf", metavar="CONFIG.json",
                    help="bench the transformers model of this config.json instead of --models (profiled on its own "
                         "layers, run with its own stages; --hidden default 256)")
    ap.add_argument("--layers", type=int, help="--hf: decoder layers kept (default: the config's)")
    ap.add_argument("--keep", help="keep every file under this folder (default: a temporary one)")
    ap.add_argument("--json", help="also write the rows as JSON here")
    args = ap.parse_args(argv)
    # Every flag within what the commands it runs accept, and the outputs, before anything runs (exit 2).
    bad = [f"--{k.replace('_', '-')} {v}" for k, v, lo, hi in (
        ("hidden", args.hidden, 0, 65536), ("seq", args.seq, 1, 65536), ("vocab", args.vocab, 2, 1 << 20),
        ("rows_per_microbatch", args.rows_per_microbatch, 1, 65536), ("devices", args.devices, 2, 100_000),
        ("microbatches", args.microbatches, 1, 1_000_000), ("steps", args.steps, 1, 1000),
        ("repeats", args.repeats, 1, 1000), ("concurrent", args.concurrent, 0, 64),
        ("evaluations", args.evaluations, 1, 1_000_000_000)) if not lo <= v <= hi or (k == "hidden" and v == 1)]
    if args.hf:  # the commands run in the repository root
        args.hf = os.path.abspath(args.hf)
    if args.layers is not None and not (args.hf and 1 <= args.layers <= 100_000):
        bad.append(f"--layers {args.layers} (1..100000, with --hf only)")
    if args.hf:
        names = [os.path.basename(args.hf).removesuffix(".json")]
        unknown = [] if os.path.isfile(args.hf) else [f"no such config {args.hf}"]
    else:
        names = args.models.split(",")
        unknown = [f"no such shipped model: {m}" for m in names
                   if not os.path.isfile(os.path.join(ROOT, "configs", "models", f"{m}.yaml"))]
    if bad or unknown:
        ap.error("; ".join(([f"out of range: {', '.join(bad)}"] if bad else [])
                           + unknown))
    from pipesmith.errors import BadInputError
    from pipesmith.torch.output_file import check_output_paths
    try:
        check_output_paths([(args.json or "", "--json")])
    except BadInputError as e:
        ap.error(str(e))
    exe = os.environ.get("PIPESMITH") or os.path.join(os.environ.get("PIPESMITH_BUILD_DIR", os.path.join(ROOT, "build")),
                                                      "cli", "pipesmith")
    if not os.access(exe, os.X_OK):
        raise SystemExit(f"bench/torch: no pipesmith at {exe}: build it (make build) or set PIPESMITH")
    work = args.keep or tempfile.mkdtemp(prefix="bench-torch-")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = "1"
    env["PIPESMITH_PYTHON"] = sys.executable
    import torch
    from pipesmith.torch.reference import Scale
    from pipesmith.torch.profile import write_atomic
    from pipesmith.torch.steptime import hf_unpipelined_step_ms, unpipelined_step_ms
    P, M = args.devices, args.microbatches
    t_start = time.monotonic()

    log("measuring the gloo link (2 processes)")
    cluster = os.path.join(work, "gloo-link.yaml")
    sh([sys.executable, "-m", "pipesmith.torch.link", "-o", cluster, "--devices", str(P), "--repeats", "15"], env=env)
    link_text = open(cluster).read()
    link = re.search(r"link: \{bandwidth_gb_per_s: ([0-9.e+-]+), latency_us: ([0-9.e+-]+)\}", link_text)
    print(f"Link (gloo, localhost, measured): latency {float(link.group(2)):.1f} us, "
          f"bandwidth {float(link.group(1)):.3g} GB/s\n")
    all_rows = {}
    sim_cluster = ""  # the link plus the measured op_overhead_ms: what schedules are made and simulated on
    overhead_ms = 0.0
    for name in names:
        hidden = args.hidden or MODELS.get(name, d.hidden)
        model = os.path.join(ROOT, "configs", "models", f"{name}.yaml")
        # The model measured and run: a shipped model's reference transformer, or the transformers model.
        model_flags = ["--hf", args.hf] + (["--layers", str(args.layers)] if args.layers else []) if args.hf else []
        mdir = os.path.join(work, name)
        os.makedirs(mdir, exist_ok=True)
        profiled = os.path.join(mdir, "profiled.yaml")
        fused = os.path.join(mdir, "profiled-fused.yaml")
        shape = ["--hidden", str(hidden), "--seq", str(args.seq), "--vocab", str(args.vocab)]
        log(f"{name}: profiling (hidden {hidden})")
        table = sh([exe, "profile", "--backend", "torch", *(model_flags or [model]), "--cluster", cluster,
                    "-o", profiled, *shape, "--rows", str(args.rows_per_microbatch), "--threads", "1", "--repeats", str(args.repeats),
                    "--warmup", "2", "--concurrent", str(args.concurrent or P), "--also-fused", fused], env=env)
        lines = table.splitlines()  # the command's progress line, the title, the header, a row per type
        header = next(k for k, line in enumerate(lines) if line.startswith("type "))
        f_ms = [float(line.split()[3]) for line in lines[header + 1:] if len(line.split()) >= 11
                and not line.startswith("sweep")]
        probe_profile = float(re.search(r"^sweep of the model .*: ([0-9.]+) ms", table, re.M).group(1))
        if not sim_cluster:
            log(f"{name}: measuring the per-action overhead (interleaved 1F1B in PyTorch)")
            overhead_ms = measure_overhead(exe, profiled, cluster, os.path.join(mdir, "overhead"), P, M, shape, args, env,
                                           model_flags)
            sim_cluster = os.path.join(work, "gloo-link-overhead.yaml")
            write_atomic(sim_cluster, link_text + f"  op_overhead_ms: {overhead_ms:.4g}\n")
            print(f"Per-action overhead (PyTorch's runtime, measured on {name}): {overhead_ms:.3f} ms "
                  "(op_overhead_ms of the cluster the schedules are made and simulated on)\n")
        rows: list[Row] = []
        cases = []
        for label, cmd, flags in SCHEDULES:
            sdir = os.path.join(mdir, label)
            os.makedirs(sdir, exist_ok=True)
            sched = os.path.join(sdir, "schedule.yaml")
            log(f"{name}: {label}: pipesmith {cmd}")
            extra = ["--evaluations", str(args.evaluations), "--quiet", "--seed", "0"] if cmd == "synth" else []
            if cmd == "synth" and args.hf:  # transformers stages hold whole modules
                extra += ["--cuts", "layers"]
            sh([exe, cmd, profiled, "--cluster", sim_cluster, "--devices", str(P), "--microbatches", str(M), *flags,
                *extra, "-o", sched])
            out = sh([exe, "export", sched, "--to", "pytorch", "-o", os.path.join(sdir, "pt"), "--model", profiled,
                      "--cluster", sim_cluster])
            stages = int(re.search(r"S = (\d+) stages", out).group(1))
            rv, _ = simulate(exe, sched, "rendezvous")
            po, busy = simulate(exe, sched, "posted")
            row = Row(label, stages, rv, po, busy)
            if b_only(os.path.join(sdir, "pt")):
                # PyTorch runs each B as one fused backward, cheaper than its I + W: the same schedule
                # made on the fused-B costs (the same partition, else the row says so).
                fsched = os.path.join(sdir, "schedule-fused.yaml")
                sh([exe, cmd, fused, "--cluster", sim_cluster, "--devices", str(P), "--microbatches", str(M), *flags,
                    *extra, "-o", fsched])
                sh([exe, "export", fsched, "--to", "pytorch", "-o", os.path.join(sdir, "pt-fused"), "--model", fused,
                    "--cluster", sim_cluster])
                row.sim_ops_ms, row.sim_busy_ms = simulate(exe, fsched, "posted")
                row.same_partition = stage_layers(os.path.join(sdir, "pt")) == stage_layers(os.path.join(sdir, "pt-fused"))
            else:
                row.sim_ops_ms = po
            rows.append(row)
            cases += ["--case", os.path.join(sdir, "pt"), profiled]
        log(f"{name}: timing {len(rows)} schedules in PyTorch (P = {P}, {args.steps} steps each)")
        res_json = os.path.join(mdir, "steptime.json")
        sh([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(P),
            "-m", "pipesmith.torch.steptime", *cases, "--steps", str(args.steps), *shape, *model_flags,
            "--rows-per-microbatch", str(args.rows_per_microbatch), "--json", res_json], env=env)
        for row, r in zip(rows, json.load(open(res_json))):
            row.measured_ms = r["median_ms"]
            row.first_step_ms = r["first_step_ms"]
            row.steps_ms = list(r["steps_ms"])
            row.ranks = r["median_step_ranks"]
            row.load = r["probe_ms"] / probe_profile
        log(f"{name}: timing the unpipelined step")
        scale = Scale(hidden=hidden, seq=args.seq, vocab=args.vocab)
        if args.hf:
            unpiped, _ = hf_unpipelined_step_ms(args.hf, {"layers": args.layers, "hidden": hidden, "vocab": args.vocab},
                                                torch.float32, M, args.rows_per_microbatch, args.seq, args.steps)
        else:
            unpiped, _ = unpipelined_step_ms(profiled, scale, torch.float32, M, args.rows_per_microbatch, args.steps)
        all_rows[name] = (hidden, max(f_ms) if f_ms else 0.0, unpiped, rows)
        print_table(name, hidden, max(f_ms) if f_ms else 0.0, unpiped, rows, P, M, args, overhead_ms)
    print("### Summary\n")
    for name, (_, _, _, rows) in all_rows.items():
        print(f"* {name}: " + "; ".join(verdict(rows)))
    print()
    if args.json:
        write_atomic(args.json, json.dumps({k: {"hidden": v[0], "max_layer_f_ms": v[1], "unpipelined_ms": v[2],
                                                "rows": [dataclasses.asdict(r) for r in v[3]]}
                                            for k, v in all_rows.items()}, indent=1) + "\n")
    print(f"Bench: {time.monotonic() - t_start:.0f} s; files in {work}")
    return 0


def iqr(steps: list[float]) -> float:
    """The interquartile range of a schedule's timed steps (0 for fewer than two)."""
    if len(steps) < 2:
        return 0.0
    q = statistics.quantiles(steps, n=4, method="inclusive")
    return q[2] - q[0]


def verdict(rows: list[Row], tolerance: float = 0.10) -> list[str]:
    """The bench's two questions for one model, answered from its rows: is every schedule's measured
    median within ``tolerance`` of its simulation (posted), and is the schedule the simulation ranks
    first the fastest measured, or behind it by less than the noise, taken as the larger interquartile
    range of the two schedules' timed steps. Between them, the load probe: a drift of the machine's
    speed between the profile and the steps would move every ratio, and the line says when the probe
    suggests one."""
    ratios = [(r.label, r.measured_ms / r.sim_posted_ms) for r in rows]
    misses = [(n, x) for n, x in ratios if abs(x - 1) > tolerance]
    line = (f"{len(rows) - len(misses)} of {len(rows)} schedules within {100 * tolerance:.0f} % of their simulation "
            f"(measured/simulated {min(x for _, x in ratios):.3f}-{max(x for _, x in ratios):.3f})")
    if misses:
        line += "; outside: " + ", ".join(f"{n} {x:.3f}" for n, x in misses)
    out = [line]
    loads = sorted(r.load for r in rows)
    median_load = statistics.median(loads)
    line = (f"load probe (the model's sweep around the steps / in the profile), median over the schedules "
            f"{median_load:.3f} ({loads[0]:.3f}-{loads[-1]:.3f})")
    if abs(median_load - 1) > tolerance:
        line += (f": more than {100 * tolerance:.0f} % from 1, so the machine's speed may have drifted between "
                 "the profile and the steps, which moves every ratio alike (the probe is a few seconds' sample "
                 "itself: docs/pytorch.md, \"Load drift\")")
    out.append(line)
    first = min(rows, key=lambda r: r.sim_posted_ms)
    fastest = min(rows, key=lambda r: r.measured_ms)
    if first is fastest:
        out.append(f"ranked first by the simulation: {first.label}, the fastest measured")
        return out
    gap = first.measured_ms - fastest.measured_ms
    noise = max(iqr(first.steps_ms), iqr(fastest.steps_ms))
    within = gap <= noise
    out.append(f"ranked first by the simulation: {first.label}, {100 * gap / fastest.measured_ms:.1f} % behind the "
               f"fastest measured, {fastest.label} ({gap:.1f} ms between the medians; the larger interquartile "
               f"range of their steps {noise:.1f} ms): {'within' if within else 'outside'} the noise")
    return out


def print_table(name, hidden, max_f, unpiped, rows: list[Row], P, M, args, overhead_ms: float) -> None:
    sim = [r.sim_posted_ms for r in rows]
    meas = [r.measured_ms for r in rows]
    norm = [r.measured_ms / r.load for r in rows]
    ops = [r.sim_ops_ms for r in rows]
    rs, rm, rn, ro = ranks(sim), ranks(meas), ranks(norm), ranks(ops)
    print(f"### {name}: hidden {hidden}, {args.rows_per_microbatch} x {args.seq} tokens per microbatch, float32, "
          f"P = {P}, M = {M}; heaviest layer F {max_f:.1f} ms (profiled with {args.concurrent or P} processes at once)")
    print()
    print("| schedule | stages | simulated (rendezvous) | simulated (posted) | measured (median) | steps min-max | "
          "first step | measured/simulated | load | measured/(simulated x load) | simulated, B fused | "
          "measured/(that x load) | rank sim | rank sim B fused | rank measured | rank measured/load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r, a, b, c, e in zip(rows, rs, rm, rn, ro):
        fused = f"{r.sim_ops_ms:.1f} ms" + ("" if r.same_partition else " (other partition)") \
            if r.sim_ops_ms != r.sim_posted_ms else "(split)"
        print(f"| {r.label} | {r.stages} | {r.sim_rendezvous_ms:.1f} ms | {r.sim_posted_ms:.1f} ms | "
              f"{r.measured_ms:.1f} ms | {min(r.steps_ms):.0f}-{max(r.steps_ms):.0f} | {r.first_step_ms:.0f} ms | "
              f"{r.measured_ms / r.sim_posted_ms:.3f} | {r.load:.3f} | {r.measured_ms / (r.sim_posted_ms * r.load):.3f} | "
              f"{fused} | {r.measured_ms / (r.sim_ops_ms * r.load):.3f} | {a} | {e} | {b} | {c} |")
    print(f"| unpipelined (1 process) | 1 | | | {unpiped:.1f} ms | | | | | | | | | | | |")
    print()
    for line in verdict(rows):
        print(f"* {line}")
    print()
    print("Where the time goes in the median step, per rank: simulated busy (the profiled F/I/W/B of its ops, "
          "B the fused backward_ms, without the op_overhead_ms the simulation adds to each), "
          "measured busy (PyTorch's compute actions, timed inside the runtime), waiting for receives, and the "
          "rest (the runtime's work between actions: posting, bookkeeping).")
    print()
    print("| schedule | rank | compute actions | simulated busy | measured busy | measured/simulated busy | wait | rest |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        for k, x in enumerate(r.ranks):
            busy = x["F_ms"] + x["I_ms"] + x["B_ms"] + x["W_ms"]
            sb = r.sim_busy_ms[k] - overhead_ms * x["actions"] if k < len(r.sim_busy_ms) else float("nan")
            print(f"| {r.label} | {k} | {x['actions']:.0f} | {sb:.1f} ms | {busy:.1f} ms | {busy / sb:.3f} | "
                  f"{x['wait_ms']:.1f} ms | {x['step_ms'] - busy - x['wait_ms']:.1f} ms |")
    print(flush=True)


if __name__ == "__main__":
    sys.exit(main())
