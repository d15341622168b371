"""The checker against PyTorch's runtime: hand-written compute_comms schedules, each run by
``pipesmith verify`` (every semantics) and by ``torch.distributed.pipelining`` on gloo.

PyTorch 2.13's ``_PipelineScheduleRuntime`` posts every SEND and RECV without blocking and waits for
a receive only in the compute op that consumes it (sends are waited at the end of the step): the
checker's *posted* semantics. Valid cases include ones that deadlock under rendezvous, grouped or
buffered semantics (a RECV posted before the SEND its peer needs) and complete in PyTorch; deadlock
cases hold a SEND behind a compute op that waits, through the peers, for that SEND.

Each case names its layout (ranks, stage -> rank, microbatches) and the rows as written; the runner
adds one ``sREDUCE_GRAD`` per stage at the end of its rank's row, as PyTorch needs.

``python tests/python/deadlock_cases.py`` prints the agreement table of docs/pytorch.md.
"""
from __future__ import annotations

import concurrent.futures
import json
import os
import re
import sys

# layout: (ranks, stage -> rank, microbatches)
LAYOUTS = {
    "p2": (2, (0, 1), 2),
    "p3": (3, (0, 1, 2), 2),
    "p3loop": (3, (0, 1, 2, 0, 1, 2), 1),  # two stages per rank, looped: 3-rank cycles
}

# P = 2, M = 2: 1F1B as the runtime's lowering writes it.
_R0 = "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1"
_R1 = "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1"
# P = 3, M = 2.
_Q0 = "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1"
_Q1 = "1RECV_F0,1F0,1SEND_F0,1RECV_F1,1F1,1SEND_F1,1RECV_B0,1B0,1SEND_B0,1RECV_B1,1B1,1SEND_B1"
_Q2 = "2RECV_F0,2F0,2B0,2SEND_B0,2RECV_F1,2F1,2B1,2SEND_B1"
# P = 3, stages 0..5 on ranks 0,1,2,0,1,2, M = 1.
_L0 = "0F0,0SEND_F0,3RECV_F0,3F0,3SEND_F0,3RECV_B0,3B0,3SEND_B0,0RECV_B0,0B0"
_L1 = "1RECV_F0,1F0,1SEND_F0,4RECV_F0,4F0,4SEND_F0,4RECV_B0,4B0,4SEND_B0,1RECV_B0,1B0,1SEND_B0"
_L2 = "2RECV_F0,2F0,2SEND_F0,5RECV_F0,5F0,5B0,5SEND_B0,2RECV_B0,2B0,2SEND_B0"

# name: (layout, what it tests, rows)
VALID = {
    "p2-1f1b": ("p2", "1F1B, each RECV right before its consumer", [_R0, _R1]),
    "p2-gpipe": ("p2", "GPipe: all forwards, then all backwards",
                 ["0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0RECV_B1,0B0,0B1",
                  "1RECV_F0,1RECV_F1,1F0,1F1,1B0,1SEND_B0,1B1,1SEND_B1"]),
    "p2-recv-before-send": ("p2", "rank 0 posts RECV_B0 before SEND_F0 (the SEND its peer needs first)",
                            ["0F0,0RECV_B0,0SEND_F0,0F1,0SEND_F1,0B0,0RECV_B1,0B1", _R1]),
    "p2-all-recvs-first": ("p2", "rank 0 posts both RECV_Bs before any compute",
                           ["0RECV_B0,0RECV_B1,0F0,0SEND_F0,0F1,0SEND_F1,0B0,0B1", _R1]),
    "p2-recv-f-first": ("p2", "rank 1 posts both RECV_Fs first",
                        [_R0, "1RECV_F0,1RECV_F1,1F0,1B0,1SEND_B0,1F1,1B1,1SEND_B1"]),
    "p2-send-b-late": ("p2", "rank 1 sends B0 only after F1",
                       [_R0, "1RECV_F0,1F0,1B0,1RECV_F1,1F1,1SEND_B0,1B1,1SEND_B1"]),
    "p2-sends-at-end": ("p2", "rank 1 sends both input gradients at the end",
                        [_R0, "1RECV_F0,1F0,1B0,1RECV_F1,1F1,1B1,1SEND_B0,1SEND_B1"]),
    "p2-recv-b-before-f1": ("p2", "rank 0 posts RECV_B0 before F1",
                            ["0F0,0SEND_F0,0RECV_B0,0F1,0SEND_F1,0B0,0RECV_B1,0B1", _R1]),
    "p2-recvs-together": ("p2", "rank 0 posts RECV_B0 and RECV_B1 together",
                          ["0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0RECV_B1,0B0,0B1", _R1]),
    "p2-recv-f1-early": ("p2", "rank 1 posts RECV_F1 before B0",
                         [_R0, "1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1"]),
    "p2-crossed-posting": ("p2", "rank 0 posts its RECV_Bs before SEND_F1, rank 1 sends B0 after F1",
                           ["0F0,0SEND_F0,0RECV_B0,0RECV_B1,0F1,0SEND_F1,0B0,0B1",
                            "1RECV_F0,1F0,1B0,1RECV_F1,1F1,1SEND_B0,1B1,1SEND_B1"]),
    "p3-base": ("p3", "3 ranks, each RECV right before its consumer", [_Q0, _Q1, _Q2]),
    "p3-middle-recvs-first": ("p3", "rank 1 posts all four RECVs first",
                              [_Q0, "1RECV_F0,1RECV_F1,1RECV_B0,1RECV_B1,1F0,1SEND_F0,1F1,1SEND_F1,1B0,"
                                    "1SEND_B0,1B1,1SEND_B1", _Q2]),
    "p3-last-recvs-first": ("p3", "rank 2 posts both RECV_Fs first",
                            [_Q0, _Q1, "2RECV_F0,2RECV_F1,2F0,2B0,2SEND_B0,2F1,2B1,2SEND_B1"]),
    "p3-first-recvs-first": ("p3", "rank 0 posts both RECV_Bs before any compute",
                             ["0RECV_B0,0RECV_B1,0F0,0SEND_F0,0F1,0SEND_F1,0B0,0B1", _Q1, _Q2]),
    "p3-gpipe": ("p3", "GPipe on 3 ranks",
                 ["0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0RECV_B1,0B0,0B1", _Q1,
                  "2RECV_F0,2F0,2RECV_F1,2F1,2B0,2SEND_B0,2B1,2SEND_B1"]),
    "p3-middle-recv-b-early": ("p3", "rank 1 posts RECV_B0 before sending F0 on",
                               [_Q0, "1RECV_F0,1F0,1RECV_B0,1SEND_F0,1RECV_F1,1F1,1SEND_F1,1B0,1SEND_B0,"
                                     "1RECV_B1,1B1,1SEND_B1", _Q2]),
    "p3-zero-bubble": ("p3", "I and W split, weight gradients last",
                       ["0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0I0,0RECV_B1,0I1,0W0,0W1",
                        "1RECV_F0,1F0,1SEND_F0,1RECV_F1,1F1,1SEND_F1,1RECV_B0,1I0,1SEND_B0,1RECV_B1,1I1,1SEND_B1,"
                        "1W0,1W1",
                        "2RECV_F0,2F0,2I0,2SEND_B0,2RECV_F1,2F1,2I1,2SEND_B1,2W0,2W1"]),
    "p3-overlap-f-b": ("p3", "an OVERLAP_F_B cell (F1 with B0) on the last rank",
                       [_Q0, _Q1, "2RECV_F0,2F0,2RECV_F1,(2F1;2B0)OVERLAP_F_B,2SEND_B0,2B1,2SEND_B1"]),
    "p3loop-base": ("p3loop", "looped stages, each RECV right before its consumer", [_L0, _L1, _L2]),
    "p3loop-all-recvs-first": ("p3loop", "every rank posts all its RECVs first",
                               ["3RECV_F0,3RECV_B0,0RECV_B0,0F0,0SEND_F0,3F0,3SEND_F0,3B0,3SEND_B0,0B0",
                                "1RECV_F0,4RECV_F0,4RECV_B0,1RECV_B0,1F0,1SEND_F0,4F0,4SEND_F0,4B0,4SEND_B0,1B0,"
                                "1SEND_B0",
                                "2RECV_F0,5RECV_F0,2RECV_B0,2F0,2SEND_F0,5F0,5B0,5SEND_B0,2B0,2SEND_B0"]),
    "p3loop-recv-before-send": ("p3loop", "rank 2 posts RECV_F for stage 5 before sending stage 2's output",
                                [_L0, _L1, "2RECV_F0,2F0,5RECV_F0,2SEND_F0,5F0,5B0,5SEND_B0,2RECV_B0,2B0,2SEND_B0"]),
}

DEADLOCK = {
    "p2-b-before-send-f": ("p2", "rank 0 runs B0 before sending F0: 0 -> 1 -> 0",
                           ["0F0,0RECV_B0,0B0,0SEND_F0,0F1,0SEND_F1,0RECV_B1,0B1", _R1]),
    "p2-f1-held": ("p2", "rank 0 sends F1 after B0, rank 1 runs F1 before sending B0",
                   ["0F0,0SEND_F0,0F1,0RECV_B0,0B0,0SEND_F1,0RECV_B1,0B1",
                    "1RECV_F0,1F0,1RECV_F1,1F1,1B0,1SEND_B0,1B1,1SEND_B1"]),
    "p2-send-b-after-f1": ("p2", "rank 1 sends B0 after F1, rank 0 sends F1 after B0",
                           ["0F0,0SEND_F0,0RECV_B0,0B0,0F1,0SEND_F1,0RECV_B1,0B1",
                            "1RECV_F0,1F0,1B0,1RECV_F1,1F1,1SEND_B0,1B1,1SEND_B1"]),
    "p2-sends-at-end": ("p2", "rank 1 sends at the end, rank 0 sends F1 after B0",
                        ["0F0,0SEND_F0,0RECV_B0,0B0,0F1,0SEND_F1,0RECV_B1,0B1",
                         "1RECV_F0,1F0,1B0,1RECV_F1,1F1,1B1,1SEND_B0,1SEND_B1"]),
    "p2-f1-after-b1": ("p2", "rank 0 sends F1 only after B1",
                       ["0F0,0SEND_F0,0F1,0RECV_B0,0B0,0RECV_B1,0B1,0SEND_F1", _R1]),
    "p3-middle-holds-f": ("p3", "rank 1 sends F0 on after its B0: 1 -> 2 -> 1, rank 0 behind",
                          [_Q0, "1RECV_F0,1F0,1RECV_B0,1B0,1SEND_F0,1RECV_F1,1F1,1SEND_F1,1SEND_B0,1RECV_B1,1B1,"
                                "1SEND_B1", _Q2]),
    "p3-first-holds-f1": ("p3", "rank 0 sends F1 after B0, rank 1 sends B0 after F1",
                          ["0F0,0SEND_F0,0RECV_B0,0B0,0F1,0SEND_F1,0RECV_B1,0B1",
                           "1RECV_F0,1F0,1SEND_F0,1RECV_F1,1F1,1SEND_F1,1RECV_B0,1B0,1SEND_B0,1RECV_B1,1B1,1SEND_B1",
                           _Q2]),
    "p3-middle-and-last": ("p3", "rank 1 sends F1 after B0, rank 2 sends B0 after F1",
                           [_Q0, "1RECV_F0,1F0,1SEND_F0,1RECV_F1,1F1,1RECV_B0,1B0,1SEND_F1,1SEND_B0,1RECV_B1,1B1,"
                                 "1SEND_B1",
                            "2RECV_F0,2F0,2B0,2RECV_F1,2F1,2SEND_B0,2B1,2SEND_B1"]),
    "p3loop-forward-cycle": ("p3loop", "rank 0 sends stage 0's output after stage 3's F: 0 -> 2 -> 1 -> 0",
                             ["0F0,3RECV_F0,3F0,0SEND_F0,3SEND_F0,3RECV_B0,3B0,3SEND_B0,0RECV_B0,0B0", _L1, _L2]),
    "p3loop-backward-cycle": ("p3loop", "rank 0 sends stage 3's input gradient after stage 0's B: 0 -> 1 -> 2 -> 0",
                              ["0F0,0SEND_F0,3RECV_F0,3F0,3SEND_F0,3RECV_B0,3B0,0RECV_B0,0B0,3SEND_B0", _L1, _L2]),
    "p3loop-last-holds-f": ("p3loop", "rank 2 sends stage 2's output after stage 5's F: 2 -> 1 -> 0 -> 2",
                            [_L0, _L1, "2RECV_F0,2F0,5RECV_F0,5F0,2SEND_F0,5B0,5SEND_B0,2RECV_B0,2B0,2SEND_B0"]),
}

SEMANTICS = ("rendezvous", "grouped", "buffered", "posted")
TIMEOUT_S = 10  # per-step watchdog of a deadlock case's job


def with_reduce_grad(layout: str, rows: list[str]) -> str:
    """The rows as PyTorch runs them: each stage's REDUCE_GRAD at the end of its rank's row."""
    P, s2r, _ = LAYOUTS[layout]
    out = []
    for r, row in enumerate(rows):
        cells = row.split(",") + [f"{s}REDUCE_GRAD" for s in range(len(s2r)) if s2r[s] == r]
        out.append(",".join(cells))
    assert len(out) == P
    return "\n".join(out) + "\n"


def base_plan(cli, layout: str, out_dir: str, model: str) -> str:
    """A plan directory for ``layout`` (a GPipe compute-only CSV exported with ``model``)."""
    P, s2r, M = LAYOUTS[layout]
    rows = [[] for _ in range(P)]
    for s in range(len(s2r)):
        rows[s2r[s]] += [f"{s}F{m}" for m in range(M)]
    for s in reversed(range(len(s2r))):
        rows[s2r[s]] += [f"{s}B{m}" for m in range(M)]
    src = os.path.join(out_dir, f"{layout}-gpipe.csv")
    with open(src, "w") as f:
        f.write("".join(",".join(r) + "\n" for r in rows))
    d = os.path.join(out_dir, f"{layout}-plan")
    cli("export", src, "--to", "pytorch", "-o", d, "--model", model)
    return d


def case_dir(base: str, name: str, text: str, out_dir: str) -> str:
    """A copy of the base plan whose compute_comms.csv is the case."""
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    for f in ("plan.json", "compute_only.csv"):
        with open(os.path.join(base, f)) as src, open(os.path.join(d, f), "w") as dst:
            dst.write(src.read())
    with open(os.path.join(d, "compute_comms.csv"), "w") as f:
        f.write(text)
    return d


def checker(cli, path: str) -> dict:
    """Per semantics: (valid, the deadlock message or '')."""
    out = {}
    for sem in SEMANTICS:
        p = cli("verify", path, "--semantics", sem, "--json", check=False)
        rep = json.loads(p.stdout)
        dl = [v["message"] for v in rep["violations"] if v["rule"] == "deadlock"]
        others = [v["rule"] for v in rep["violations"] if v["rule"] != "deadlock"]
        out[sem] = (rep["valid"], dl[0] if dl else "", others)
    return out


def run_deadlock(torchrun, d: str, model: str, nproc: int) -> tuple[int, str]:
    return torchrun(nproc, ["-m", "pipesmith.torch.run", "--format", "compute_comms", "--timeout", str(TIMEOUT_S),
                            d, "--model", model], timeout=TIMEOUT_S + 120)


def run_all(cli, torchrun, out_dir: str, model: str, jobs: int = 3):
    """Checker verdicts and PyTorch outcomes of every case: {name: (kind, checker, pytorch)}."""
    bases = {lay: base_plan(cli, lay, out_dir, model) for lay in LAYOUTS}
    dirs, verdicts = {}, {}
    for kind, cases in (("valid", VALID), ("deadlock", DEADLOCK)):
        for name, (lay, _, rows) in cases.items():
            d = case_dir(bases[lay], f"{kind}-{name}", with_reduce_grad(lay, rows), out_dir)
            dirs[(kind, name)] = (d, lay)
            verdicts[(kind, name)] = checker(cli, os.path.join(d, "compute_comms.csv"))
    outcome = {}
    for P in sorted({LAYOUTS[lay][0] for lay in LAYOUTS}):
        group = [(k, d) for k, (d, lay) in dirs.items() if k[0] == "valid" and LAYOUTS[lay][0] == P]
        args = ["-m", "pipesmith.torch.run", "--format", "compute_comms", "--timeout", "60"]
        for _, d in group:
            args += ["--case", d, model]
        rc, out = torchrun(P, args, timeout=600)
        for k, d in group:
            ok = any(l.startswith(f"{d} compute_comms:") and " match the unpipelined run" in l
                     for l in out.splitlines())
            outcome[k] = ("completed, gradient-exact" if ok else "FAILED", rc, out)
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futs = {k: pool.submit(run_deadlock, torchrun, d, model, LAYOUTS[lay][0])
                for k, (d, lay) in dirs.items() if k[0] == "deadlock"}
        for k, f in futs.items():
            rc, out = f.result()
            P = LAYOUTS[dirs[k][1]][0]
            # Every rank's watchdog fired inside the schedule: each names an action it had started, so
            # the job hung in the pipeline's own steps, not in its setup.
            hung = rc != 0 and all(re.search(rf"^rank {r}: TIMEOUT in .*: last action started: time step \d+: ",
                                             out, re.M) for r in range(P))
            outcome[k] = ("hung (watchdog)" if hung else f"exit {rc}", rc, out)
    return verdicts, outcome


def table(verdicts, outcome) -> str:
    lines = ["| case | layout | " + " | ".join(SEMANTICS) + " | PyTorch 2.13 (gloo) |",
             "|---|---|" + "---|" * len(SEMANTICS) + "---|"]
    for kind, cases in (("valid", VALID), ("deadlock", DEADLOCK)):
        for name, (lay, what, _) in cases.items():
            v = verdicts[(kind, name)]
            cells = ["valid" if v[s][0] else ("deadlock" if v[s][1] else "invalid") for s in SEMANTICS]
            lines.append(f"| {kind}/{name}: {what} | {lay} | " + " | ".join(cells) +
                         f" | {outcome[(kind, name)][0]} |")
    n = len(VALID) + len(DEADLOCK)
    agree = []
    for s in SEMANTICS:
        k = sum(verdicts[("valid", c)][s][0] and outcome[("valid", c)][0].startswith("completed") for c in VALID)
        k += sum(bool(verdicts[("deadlock", c)][s][1]) and outcome[("deadlock", c)][0].startswith("hung")
                 for c in DEADLOCK)
        agree.append(f"{s} {k} of {n}")
    lines.append("")
    lines.append("Agreement with PyTorch: " + ", ".join(agree) + ".")
    return "\n".join(lines)


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    import tempfile

    from conftest import cli, model_path, torchrun
    with tempfile.TemporaryDirectory() as tmp:
        verdicts, outcome = run_all(cli, torchrun, tmp, model_path("llama2-7b"))
        print(table(verdicts, outcome))
    return 0


if __name__ == "__main__":
    sys.exit(main())
