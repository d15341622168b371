"""bench/gap-anatomy's body: what the gap at M = P grows with (run bench/gap-anatomy; docs/synth.md,
"What the gap at M ≈ P grows with").

One chain of decoder blocks at P = M (16 by default), free links and no memory cap, as the 72 shapes are
run, changed one thing at a time from blocks whose forward, input gradient and weight gradient are equal
to a model like the shipped ones: each case is a model YAML written to a temporary folder, then
`pipesmith synth` (its iteration, its plan's proven bound) and `pipesmith bound --json` (the global bound
and the term that gives it). The costs are per microbatch, in ms, those `pipesmith import hf
--sublayers --vocab-shards 4` derives for Qwen3-30B-A3B (one 4k-token sequence, bf16, an H100 at 50 %
of its dense peak), rounded:

  T1  a block with F = I = W = 1
  T   a decoder block (attention + MoE): F 1.941, I 2.219, W 1.572
  A   its attention sublayer: F 0.591, I 0.869, W 0.313
  X   its MoE sublayer: F 1.350, I 1.350, W 1.259
  H   the whole head, one layer: F 6.268, I 6.268, W 5.156
  L   one of K vocabulary shards of the head (--shards, default 4): H's costs / K

A Markdown table on stdout, progress on stderr; exit 1 when a run fails.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_proc import read_certificate, run_group  # noqa: E402

TYPES = {
    "T1": (1.0, 1.0, 1.0),
    "T": (1.941, 2.219, 1.572),
    "A": (0.591, 0.869, 0.313),
    "X": (1.350, 1.350, 1.259),
    "H": (6.268, 6.268, 5.156),
}
# The symbol each type has in the model YAML's layer string (one character each).
SYMBOL = {"T1": "U", "T": "T", "A": "A", "X": "X", "L": "L", "H": "H"}

# (name, the layers as (type, count) runs for `b` blocks and K head shards)
CASES = [
    ("equal F, I, W", lambda b, k: [("T1", b)]),
    ("decoder blocks", lambda b, k: [("T", b)]),
    ("decoder blocks + {k} head shards", lambda b, k: [("T", b), ("L", k)]),
    ("attention / MoE sublayers", lambda b, k: [("A", 1), ("X", 1)] * b),
    ("sublayers + one head layer", lambda b, k: [("A", 1), ("X", 1)] * b + [("H", 1)]),
    ("sublayers + {k} head shards", lambda b, k: [("A", 1), ("X", 1)] * b + [("L", k)]),
]


def model_yaml(name: str, runs: list[tuple[str, int]], devices: int, microbatches: int, shards: int) -> str:
    used = sorted({t for t, _ in runs})
    lines = ["schema: 1", "model:", f"  name: {name}", "  layer_types:"]
    for t in used:
        f, i, w = TYPES[t] if t != "L" else tuple(round(v / shards, 6) for v in TYPES["H"])
        lines.append(f"    {SYMBOL[t]}: {{forward_ms: {f}, backward_input_ms: {i}, backward_weight_ms: {w}, "
                     "activation_mb: 1, wgrad_stash_mb: 0, output_mb: 0, params_m: 0}")
    lines.append('  layers: "' + "".join(SYMBOL[t] * n for t, n in runs) + '"')
    lines.append(f"cluster: {{devices: {devices}, memory_gb: 0, link: {{bandwidth_gb_per_s: 1e30, latency_us: 0}}}}")
    lines.append(f"pipeline: {{microbatches: {microbatches}, bytes_per_param: 1}}")
    return "\n".join(lines) + "\n"


def field(text: str, label: str) -> float | None:
    m = re.search(rf"^  {label}\s+([0-9.]+) ms", text, re.M)
    return float(m.group(1)) if m else None


def main() -> int:
    ap = argparse.ArgumentParser(
        prog="bench/gap-anatomy",
        description="What the gap at M = P grows with: one chain of blocks at P = M, changed one thing at a "
        "time (docs/synth.md, \"What the gap at M ≈ P grows with\"); a Markdown table on stdout.")
    ap.add_argument("--devices", type=int, default=16, help="P, and M = P (default 16)")
    ap.add_argument("--blocks", type=int, default=48, help="decoder blocks in the chain (default 48)")
    ap.add_argument("--time-limit", type=float, default=20, help="seconds per synth run (default 20)")
    ap.add_argument("--evaluations", type=int, default=0,
                    help="bound the search by N candidates instead of the clock (the same table on any machine)")
    ap.add_argument("--shards", type=int, default=4, help="vocabulary shards of the head in cases 3 and 6 (default 4)")
    ap.add_argument("--cases", default="", help="comma-separated case numbers (1-based; default all)")
    args = ap.parse_args()
    if args.devices < 2 or args.blocks < 1 or args.time_limit <= 0 or args.evaluations < 0 or args.shards < 1:
        ap.error("--devices must be at least 2, --blocks and --shards at least 1, --time-limit positive")
    picked = list(range(len(CASES)))
    if args.cases:
        try:
            picked = [int(c) - 1 for c in args.cases.split(",")]
        except ValueError:
            ap.error(f"--cases: not a list of numbers: {args.cases!r}")
        if any(c < 0 or c >= len(CASES) for c in picked):
            ap.error(f"--cases: numbers run from 1 to {len(CASES)}")
    exe = os.environ.get("PIPESMITH", "pipesmith")
    if os.path.dirname(exe):
        exe = os.path.abspath(exe)  # the runs' working folder is a temporary one
    P = M = args.devices
    print(f"P = M = {P}, {args.blocks} blocks, free links, no memory cap, "
          + (f"{args.evaluations} candidates" if args.evaluations else f"{args.time_limit:g} s") + " per synth run\n")
    print("| # | case | layers | ours ms | plan bound ms | global bound ms | binding term | ours / global bound "
          "| ours / plan bound |")
    print("|---:|---|---:|---:|---:|---:|---|---:|---:|")
    failed = 0
    with tempfile.TemporaryDirectory(prefix="pipesmith-gap-") as tmp:
        for c in picked:
            name, make = CASES[c]
            name = name.format(k=args.shards)
            runs = make(args.blocks, args.shards)
            layers = sum(n for _, n in runs)
            path = os.path.join(tmp, f"case{c + 1}.yaml")
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(model_yaml(f"case{c + 1}", runs, P, M, args.shards))
            print(f"gap-anatomy: case {c + 1} ({name}), {layers} layers", file=sys.stderr, flush=True)
            schedule = os.path.join(tmp, f"case{c + 1}.schedule.yaml")
            synth = [exe, "synth", path, "--time-limit", f"{args.time_limit:g}", "-o", schedule, "--quiet"]
            if args.evaluations:
                synth += ["--evaluations", str(args.evaluations)]
            rc, out = run_group(synth, tmp, timeout=args.time_limit * 3 + 60)
            rb, bout = run_group([exe, "bound", path, "--json"], tmp, timeout=120)
            # The iteration as the certificate holds it (not rounded); the plan's bound as synth states it.
            ours = read_certificate(schedule)[0] if rc == 0 and os.path.exists(schedule) else None
            plan = field(out, "lower bound")
            try:
                bound = json.loads(bout) if rb == 0 else None
            except json.JSONDecodeError:
                bound = None
            if rc != 0 or ours is None or plan is None or bound is None:
                failed += 1
                print(f"| {c + 1} | {name} | {layers} | failed (synth exit {rc}, bound exit {rb}) | - | - | - | - | - |")
                print(out[-2000:], bout[-2000:], file=sys.stderr)
                continue
            g = bound["bound_ms"]
            print(f"| {c + 1} | {name} | {layers} | {ours:.3f} | {plan:.3f} | {g:.3f} | {bound['binding']} "
                  f"| {ours / g:.4f} | {ours / plan:.4f} |", flush=True)
            if not math.isfinite(g) or g > ours * (1 + 1e-9):
                failed += 1
                print(f"gap-anatomy: case {c + 1}: the global bound {g} is above the iteration {ours}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
