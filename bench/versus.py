"""bench/versus's body: two pipesmith CLIs (a build before a change and the build with it) on the same
cases, one after the other (run bench/versus).

Per case (model, P, M) it runs `OLD synth` then `NEW synth` with the same flags and reads each written
schedule's certified iteration (the certificate's makespan_ms). Under --time-limit the two runs share
the machine's state of the moment, so a case's ratio carries the clock's noise; --evaluations N (with
--rlimit R) bounds both by candidates instead, the same on any machine.

Output: a Markdown table on stdout (model, P, M, old ms, new ms, new / old, the tail of NEW's search
line: what it says about its wave and paced-front seeds) and a summary line (the geometric mean of
new / old, how many cases got shorter or longer by more than 0.05 %, the extremes); progress on stderr.
Exit 0 when every run wrote a schedule, 1 when one did not (its exit status is in the row), 2 on bad
usage.
"""
from __future__ import annotations

import argparse
import math
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/: its shared helpers
from bench_proc import read_certificate, run_group  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["deepseek-like", "gemma-like", "gpt-oss-like", "llama2-7b", "minimax-like", "nemotron-h-like"]
MOVED = 5e-4  # a ratio further than this from 1 counts as a change


def search_tail(out: str) -> str:
    """What the search line says about its wave and paced-front seeds ('' when nothing)."""
    said = re.findall(r"[0-9]+ (?:wave|paced-front) seeds, [a-z ]+", out)
    return "; ".join(s.strip() for s in said)


def int_list(text: str, flag: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"{flag} {text!r}: give whole numbers of at least 1, comma-separated")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(prog="bench/versus", description=__doc__.split("\n\n")[0])
    ap.add_argument("old", help="the pipesmith CLI before the change")
    ap.add_argument("new", help="the pipesmith CLI with it")
    ap.add_argument("--models", default=",".join(MODELS), help="shipped models (configs/models/NAME.yaml), comma-separated")
    ap.add_argument("--devices", default="8", help="pipeline sizes P, comma-separated (default 8)")
    ap.add_argument("--m-factors", default="1,2", help="M as multiples of P, comma-separated (default 1,2)")
    ap.add_argument("--cluster", help="cluster file (default: configs/clusters/8xh100-80gb.yaml for P <= 8, "
                                      "2x8-h100.yaml above)")
    ap.add_argument("--memory-limit-gb", type=float, help="synth --memory-limit-gb (0: unlimited; default: the cluster's)")
    ap.add_argument("--time-limit", type=float, default=20.0, help="synth --time-limit in s (default 20)")
    ap.add_argument("--evaluations", type=int, default=0, help="synth --evaluations N (deterministic; with --rlimit)")
    ap.add_argument("--rlimit", type=int, default=2000000, help="synth --rlimit with --evaluations (default 2000000)")
    ap.add_argument("--seed", type=int, default=0, help="synth --seed (default 0)")
    a = ap.parse_args()
    try:
        devices = int_list(a.devices, "--devices")
        factors = int_list(a.m_factors, "--m-factors")
    except argparse.ArgumentTypeError as e:
        ap.error(str(e))
    if a.time_limit <= 0 or a.evaluations < 0:
        ap.error("--time-limit must be above 0 and --evaluations at least 0")
    models = [m.strip() for m in a.models.split(",") if m.strip()]
    for m in models:
        if not os.path.exists(os.path.join(ROOT, "configs", "models", m + ".yaml")):
            ap.error(f"--models: no shipped model {m!r} (configs/models/{m}.yaml)")
    for name, exe in (("OLD", a.old), ("NEW", a.new)):
        if not os.access(exe, os.X_OK):
            ap.error(f"{name} {exe!r} is not an executable pipesmith CLI")
    if a.cluster and not os.path.exists(a.cluster):
        ap.error(f"--cluster {a.cluster!r}: no such file")
    # The runs start in the repository root: paths given relative to where the command was typed.
    old_exe, new_exe = os.path.abspath(a.old), os.path.abspath(a.new)
    cluster_file = os.path.abspath(a.cluster) if a.cluster else None

    mode = (f"--evaluations {a.evaluations} --rlimit {a.rlimit}" if a.evaluations
            else f"--time-limit {a.time_limit:g}")
    print(f"# bench/versus: OLD {a.old}, NEW {a.new}; synth {mode} --seed {a.seed}, the two in turn per case; "
          f"cluster {a.cluster or '8xh100-80gb (P <= 8) / 2x8-h100'}"
          + (f", --memory-limit-gb {a.memory_limit_gb:g}" if a.memory_limit_gb is not None else "") + "\n")
    print("| model | P | M | old ms | new ms | new / old | NEW's seeds |")
    print("|---|---:|---:|---:|---:|---:|---|")
    ratios: list[tuple[float, str]] = []
    failed = 0
    work = tempfile.mkdtemp(prefix="bench-versus-")
    cases = [(m, P, f * P) for P in devices for f in factors for m in models]
    for k, (m, P, M) in enumerate(cases):
        cluster = cluster_file or os.path.join(ROOT, "configs", "clusters",
                                            "8xh100-80gb.yaml" if P <= 8 else "2x8-h100.yaml")
        flags = ["--cluster", cluster, "--devices", str(P), "--microbatches", str(M), "--seed", str(a.seed),
                 "--time-limit", f"{a.time_limit:g}"]
        if a.evaluations:
            flags += ["--evaluations", str(a.evaluations), "--rlimit", str(a.rlimit)]
        if a.memory_limit_gb is not None:
            flags += ["--memory-limit-gb", f"{a.memory_limit_gb:g}"]
        got: dict[str, float | str] = {}
        tail = ""
        for name, exe in (("old", old_exe), ("new", new_exe)):
            print(f"bench/versus: [{k + 1}/{len(cases)}] {m} P={P} M={M} {name}", file=sys.stderr, flush=True)
            out = os.path.join(work, f"{name}.yaml")
            if os.path.exists(out):
                os.remove(out)
            t0 = time.monotonic()
            rc, text = run_group([exe, "synth", os.path.join(ROOT, "configs", "models", m + ".yaml"), *flags,
                                  "-o", out], ROOT, 10 * a.time_limit + 120 if not a.evaluations else 3600)
            ms = read_certificate(out)[0] if rc == 0 and os.path.exists(out) else None
            if ms is None:
                got[name] = f"exit {rc}"
                print(f"bench/versus: {m} P={P} M={M} {name}: exit {rc} after {time.monotonic() - t0:.1f} s:\n"
                      f"{text.strip()[-600:]}", file=sys.stderr, flush=True)
            else:
                got[name] = ms
            if name == "new":
                tail = search_tail(text)
        old, new = got["old"], got["new"]
        if isinstance(old, float) and isinstance(new, float):
            r = new / old
            ratios.append((r, f"{m} P={P} M={M}"))
            print(f"| {m} | {P} | {M} | {old:.3f} | {new:.3f} | {r:.4f} | {tail} |", flush=True)
        else:
            failed += 1
            cell = lambda x: f"{x:.3f}" if isinstance(x, float) else str(x)  # noqa: E731
            print(f"| {m} | {P} | {M} | {cell(old)} | {cell(new)} | - | {tail} |", flush=True)
    if ratios:
        geo = math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios))
        shorter = sum(1 for r, _ in ratios if r < 1 - MOVED)
        longer = sum(1 for r, _ in ratios if r > 1 + MOVED)
        lo, hi = min(ratios), max(ratios)
        print(f"\n{len(cases)} cases, {len(ratios)} compared: new / old geometric mean {geo:.4f}; {shorter} shorter, "
              f"{longer} longer by more than {100 * MOVED:g} %; best {lo[0]:.4f} ({lo[1]}), worst {hi[0]:.4f} ({hi[1]})"
              + (f"; {failed} without a schedule" if failed else ""))
    else:
        print(f"\n{len(cases)} cases, none compared; {failed} without a schedule")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
