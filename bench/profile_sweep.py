"""bench/profile-sweep's body: `pipesmith bound`, `synth` and `verify` on random per-layer profiles
(run bench/profile-sweep).

The profiles are drawn from a seed (the same seed, the same profiles and shapes on any machine), in the
regime of the published comparisons: per-layer F / I / W costs given directly, free links (latency 0, a
bandwidth no transfer notices), no memory cap (`--memory-limit-gb 0`). The kinds, dealt in turn so that a
short sweep covers each of them:

  llama     an embedding, 16-80 equal blocks and a head of about 4 blocks' cost (Llama-3-8B-like at 32);
  nemotron  Nemotron-H-8B-like: its 52 Mamba / attention / MLP layers in the published pattern, whole
            MLPs, an unsharded 131k-vocabulary head (configs/models/nemotron-h-like.yaml's costs);
  moe       dense and MoE blocks (first dense, then MoE, or interleaved), one head 5-30x a block;
  random    1-6 block types with random costs: zero W or zero I on some, no backward at all on some,
            fused-only types (split_backward: false), a measured fused backward below I + W or above
            it, a weight walk, a layer of no cost at all, attention + MLP sublayers joined into one
            layer (joins_next), one head 5-30x a block, fused-only or not;
  single    one layer;
  few       3-17 layers at P = 4, 8 or 16: fewer layers than devices (refused, in the same words by synth
            and bound), as many, or a few more;
  long      200-400 layers of 2-3 types and a head;
  scales    types of 1e-3 ms and of 1e3 ms mixed in one model, or (one in four) every op between 1e-8
            and 1e-6 ms.

Shapes: P in {1, 4, 8, 16} (--devices LIST: in LIST; the `few` kind draws a P above 1, the `single` kind
mostly the least P), M in {1, a count below P, P, 2P, 4P, 8P, one not a multiple of P}.

Per case (profile, P, M) the sweep runs `pipesmith bound --json`, `pipesmith synth --time-limit T -o
out.yaml` and `pipesmith verify out.yaml`, and counts as a failure (the kind in brackets):

  [exit]       an exit status other than 0, or other than synth and bound's refusal (exit 1, "fewer than
               the P devices") for a model of fewer layers than devices;
  [crash]      a command ended by a signal (an abort, a segmentation fault);
  [hang]       a command still running at 10 T + 30 s (its process group is killed);
  [bound]      a bound above the iteration: bound's global bound, or any bound the certificate writes
               (lower_bound_ms, bound_ms, bound_proven_ms, bound_before_z3_ms, global_lower_bound_ms),
               beyond the 4-decimal rounding of written figures (0.5e-4 ms) and 1e-9 relative;
  [mismatch]   synth's global bound (the certificate's) not bound's (1e-9 relative), or synth and bound
               not refusing the same model;
  [verify]     `pipesmith verify` not saying VALID (exit 0);
  [time]       synth's wall time above T + the slack (default 1 s: the backstop ends a step that cannot
               stop 0.85 s past the deadline, docs/synth.md, "The backstop"; the process's start included);
  [determinism] two runs of `synth --evaluations E --rlimit R` writing different bytes (on --determinism
               cases, spread over the sweep; with --evaluations every case is run so, twice).

With --memory-fraction F each scheduled case runs `synth` once more with `--memory-limit-gb` at F times
the largest per-device peak its uncapped schedule lists (the search then gives stages recomputation
where memory binds): it must exit 0 with a schedule that `verify` finds VALID, whose peak keeps the
limit and whose bounds lie at or below its iteration, or exit 2 with an error naming the memory (no plan
fits); the same [exit], [crash], [hang], [time], [bound] and [verify] failures count.

With --evaluations E (and --rlimit R) every synth is bounded by budgets instead of the clock: the table is
then the same on any machine, and the time check is left out (the clock ends nothing then).

Output: a Markdown table on stdout (profile, P, M, layers, iteration, bound, ratio, wall s, outcome) and a
summary line (cases, failures by kind, geometric mean and max of iteration / bound); progress on stderr.
Exit 0 when no case failed, 1 when one did (each failure's commands are printed on stderr, and the
models are kept in --keep DIR), 2 on bad usage.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # bench/: its shared helpers
from bench_proc import communicate_group, read_certificate  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = ["llama", "nemotron", "moe", "random", "single", "few", "long", "scales"]
FOUR_DECIMALS = 0.5e-4  # how far a figure written with 4 decimals may lie from the value it stands for
DEVICES = [1, 4, 8, 16]               # the P values shapes are drawn from, unless --devices names others
P_WEIGHTS = {1: 1, 4: 3, 8: 4, 16: 3}  # how often each P is drawn (a P not listed: 3)


# ----------------------------------------------------------------------------------------------- profiles
@dataclass
class LayerType:
    f: float                     # forward_ms
    i: float                     # backward_input_ms
    w: float                     # backward_weight_ms
    act: float = 100.0           # activation_mb
    b: float | None = None       # backward_ms (a measured fused backward), None = I + W
    split: bool = True           # split_backward
    walk: float = 0.0            # weight_walk_ms
    joins: bool = False          # joins_next: a sublayer, one model layer with the next

    def yaml(self, rng: random.Random) -> str:
        stash = round(self.act * rng.uniform(0.05, 0.5), 3)
        s = (f"{{forward_ms: {self.f:.6g}, backward_input_ms: {self.i:.6g}, backward_weight_ms: {self.w:.6g}, "
             f"activation_mb: {self.act:.6g}, wgrad_stash_mb: {stash:.6g}, output_mb: 8, params_m: 10")
        if self.b is not None:
            s += f", backward_ms: {self.b:.6g}"
        if not self.split:
            s += ", split_backward: false"
        if self.walk > 0:
            s += f", weight_walk_ms: {self.walk:.6g}"
        if self.joins:
            s += ", joins_next: true"
        return s + "}"


@dataclass
class Profile:
    name: str
    kind: str
    types: dict[str, LayerType]
    layers: str
    shapes: list[tuple[int, int]] = field(default_factory=list)

    def yaml(self, rng: random.Random) -> str:
        lines = ["# Drawn by bench/profile-sweep (free links, no memory cap; P and M come from the flags).",
                 "schema: 1", "model:", f"  name: {self.name}", "  layer_types:"]
        for sym, t in self.types.items():
            lines.append(f"    '{sym}': {t.yaml(rng)}")
        lines.append(f'  layers: "{self.layers}"')
        lines.append("cluster: {devices: 1, memory_gb: 0, link: {bandwidth_gb_per_s: 1e30, latency_us: 0}}")
        lines.append("pipeline: {microbatches: 1}")
        return "\n".join(lines) + "\n"


def jitter(rng: random.Random, x: float, rel: float = 0.1) -> float:
    return x * rng.uniform(1 - rel, 1 + rel)


def block(rng: random.Random, scale: float) -> LayerType:
    """A decoder block of about `scale` ms forward, I about F, W a bit less (a transformer's ratios)."""
    f = jitter(rng, scale, 0.2)
    return LayerType(f, jitter(rng, f * 1.05, 0.15), jitter(rng, f * 0.9, 0.2), act=rng.uniform(50, 900))


def embedding(rng: random.Random, scale: float) -> LayerType:
    return LayerType(jitter(rng, scale * 0.1, 0.5), 0.0, jitter(rng, scale * 0.2, 0.5), act=rng.uniform(10, 100))


def head(rng: random.Random, blk: LayerType, lo: float, hi: float) -> LayerType:
    k = rng.uniform(lo, hi)  # the head's cost in blocks
    return LayerType(blk.f * k, blk.i * k, blk.w * k * rng.uniform(0.8, 1.0), act=rng.uniform(1000, 5000))


def log_uniform(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def draw_random_type(rng: random.Random, scale: float) -> LayerType:
    t = block(rng, scale)
    r = rng.random()
    if r < 0.15:
        t.w = 0.0
    elif r < 0.3:
        t.i = 0.0
    elif r < 0.4:
        t.split = False
    elif r < 0.45:
        t.b = (t.i + t.w) * rng.uniform(0.6, 1.0)
    elif r < 0.5:
        t.b = (t.i + t.w) * rng.uniform(1.0, 1.5)  # a fused backward dearer than its halves
        t.split = rng.random() < 0.5
    elif r < 0.55:
        t.walk = t.w * rng.uniform(0.01, 0.1)
    elif r < 0.6:
        t.i = t.w = 0.0  # no backward (a frozen layer)
    elif r < 0.65:
        t.f = t.i = t.w = 0.0
    return t


def draw_profile(rng: random.Random, seed: int, idx: int) -> Profile:
    kind = KINDS[idx % len(KINDS)]
    name = f"s{seed}-{idx:03d}-{kind}"
    scale = log_uniform(rng, 0.5, 20.0)  # a block's forward ms
    types: dict[str, LayerType] = {}
    if kind == "llama":
        types = {"E": embedding(rng, scale), "D": block(rng, scale)}
        types["L"] = head(rng, types["D"], 3.5, 4.5)
        n = 32 if rng.random() < 0.5 else rng.randint(16, 80)
        layers = "E" + "D" * n + "L"
    elif kind == "nemotron":
        # Nemotron-H-8B's hybrid pattern: Mamba (M), attention (*), whole MLPs (-); its unsharded head.
        types = {"E": LayerType(jitter(rng, 0.04), 0.0, jitter(rng, 0.1), act=1),
                 "M": LayerType(jitter(rng, 3.74), jitter(rng, 3.85), jitter(rng, 3.63), act=875),
                 "*": LayerType(jitter(rng, 2.5), jitter(rng, 3.61), jitter(rng, 1.39), act=303),
                 "-": LayerType(jitter(rng, 5.84), jitter(rng, 5.84), jitter(rng, 5.84), act=973),
                 "L": LayerType(jitter(rng, 19.7), jitter(rng, 19.7), jitter(rng, 17.8), act=4832)}
        layers = "E" + "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-M-" + "L"
    elif kind == "moe":
        types = {"E": embedding(rng, scale), "D": block(rng, scale)}
        moe = block(rng, scale * rng.uniform(1.5, 3.0))
        moe.w *= rng.uniform(1.0, 2.0)
        types["X"] = moe
        types["L"] = head(rng, types["D"], 5, 30)
        n = rng.randint(8, 60)
        dense = rng.randint(1, 4)
        body = "D" * dense + "X" * (n - dense) if rng.random() < 0.5 else "DX" * (n // 2)
        layers = "E" + body + "L"
    elif kind in ("random", "long"):
        syms = "ABCDFGHJ"[: rng.randint(1, 6) if kind == "random" else rng.randint(2, 3)]
        for s in syms:
            types[s] = draw_random_type(rng, scale * log_uniform(rng, 0.3, 3.0))
        base = max(types.values(), key=lambda t: t.f + t.i + t.w)
        if base.f + base.i + base.w == 0:
            base = types[syms[0]] = block(rng, scale)
        types["L"] = head(rng, base, 5, 30)
        if rng.random() < 0.5:
            types["L"].split = False
        units = list(syms)
        if kind == "random" and rng.random() < 0.3:  # attention + MLP sublayers, joined into one layer
            types["Q"] = block(rng, scale)
            types["Q"].joins = True
            types["R"] = block(rng, scale * 1.5)
            units.append("QR")
        n = rng.randint(1, 60) if kind == "random" else rng.randint(200, 400)
        layers = "".join(rng.choice(units) for _ in range(n)) + "L"
    elif kind == "single":
        types = {"A": draw_random_type(rng, scale)}
        if types["A"].f + types["A"].i + types["A"].w == 0:
            types["A"] = block(rng, scale)
        layers = "A"
    elif kind == "few":
        types = {"E": embedding(rng, scale), "D": block(rng, scale)}
        types["L"] = head(rng, types["D"], 5, 30)
        layers = "E" + "D" * rng.choice([1, 2, 3, 5, 6, 7, 13, 14, 15]) + "L"  # 3-17 layers
    elif rng.random() < 0.25:  # scales, all tiny: every op far below a microsecond
        types = {"t": LayerType(1e-7, 2e-7, 1e-7, act=1),
                 "u": LayerType(*(round(rng.uniform(1, 9), 1) * 1e-8 for _ in range(3)), act=1)}
        layers = "".join(rng.choice("tu") for _ in range(rng.randint(1, 20)))
    else:  # scales: 1e-3 ms and 1e3 ms types in one model
        types = {"t": LayerType(1e-3, 1e-3 * rng.uniform(0.5, 2), 1e-3 * rng.uniform(0, 2), act=1),
                 "g": LayerType(1e3 * rng.uniform(0.5, 2), 1e3 * rng.uniform(0.5, 2), 1e3 * rng.uniform(0, 2)),
                 "m": block(rng, 1.0)}
        n = rng.randint(4, 40)
        layers = "".join(rng.choice("ttgm") for _ in range(n))
    return Profile(name, kind, types, layers)


def draw_shape(rng: random.Random, kind: str, n_layers: int, devices: list[int]) -> tuple[int, int]:
    """A (P, M) for a profile of this kind and layer count, P from `devices` (ascending, distinct)."""
    multi = [p for p in devices if p > 1] or devices
    if kind == "few":  # fewer layers than P, as many, or one or two more
        P = rng.choice(multi)
    elif kind == "single":  # mostly the fewest devices (P = 1 by default); else the fewest above 1 (refused)
        P = rng.choice([devices[0], devices[0], multi[0]])
    else:
        P = rng.choices(devices, weights=[P_WEIGHTS.get(p, 3) for p in devices])[0]
        if P > n_layers and rng.random() < 0.8:
            P = max((p for p in devices if p <= n_layers), default=P)
    m_kind = rng.choices(["one", "below", "P", "2P", "4P", "8P", "odd"], weights=[1, 1, 3, 2, 2, 1, 2])[0]
    M = {"one": 1, "below": max(1, P // 2 + (P > 2) * rng.randint(-1, 1)), "P": P, "2P": 2 * P, "4P": 4 * P,
         "8P": 8 * P, "odd": P + rng.randint(1, max(1, P - 1)) if P > 1 else rng.randint(2, 9)}[m_kind]
    return P, M


def draw_profiles(seed: int, n: int, shapes: int, devices: list[int]) -> list[Profile]:
    out = []
    for idx in range(n):
        rng = random.Random(f"{seed}:{idx}")
        p = draw_profile(rng, seed, idx)
        seen: set[tuple[int, int]] = set()
        for _ in range(shapes * 4):
            s = draw_shape(rng, p.kind, len(p.layers), devices)
            if s not in seen:
                seen.add(s)
                p.shapes.append(s)
            if len(p.shapes) == shapes:
                break
        out.append(p)
    return out


# ----------------------------------------------------------------------------------------------- running
@dataclass
class Proc:
    rc: int          # the exit status; -N: ended by signal N; 124: killed at the timeout
    out: str
    err: str
    wall_s: float


def run(cmd: list[str], timeout: float) -> Proc:
    """Runs cmd in its own process group; past timeout seconds the whole group is killed (rc 124)."""
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    except OSError as e:  # the CLI missing or not executable (being rebuilt): an exit failure, not a traceback
        return Proc(127, "", f"cannot run {cmd[0]}: {e}", time.monotonic() - t0)
    rc, out, err = communicate_group(p, timeout)
    return Proc(124 if rc is None else rc, out, err, time.monotonic() - t0)


@dataclass
class Case:
    profile: Profile
    P: int
    M: int
    iteration: float | None = None
    bound: float | None = None
    wall_s: float | None = None
    refused: bool = False
    capped: str = ""                                    # --memory-fraction's run: its iteration and limit
    failures: list[str] = field(default_factory=list)   # kinds
    details: list[str] = field(default_factory=list)    # what failed, with the commands

    @property
    def ident(self) -> str:
        return f"{self.profile.name} P={self.P} M={self.M}"

    def fail(self, kind: str, detail: str, cmd: list[str] | None = None) -> None:
        if kind not in self.failures:
            self.failures.append(kind)
        self.details.append(f"[{kind}] {detail}" + (f"\n    $ {' '.join(cmd)}" if cmd else ""))


def exit_check(case: Case, what: str, p: Proc, cmd: list[str], refusal: str) -> str:
    """'ok', 'refused' (the documented refusal of fewer layers than devices) or 'failed' (recorded)."""
    if p.rc == 0:
        return "ok"
    if p.rc == 1 and refusal and refusal in (p.out + p.err):
        return "refused"
    kind = "hang" if p.rc == 124 else "crash" if p.rc < 0 else "exit"
    case.fail(kind, f"{what}: exit {p.rc}: {(p.err or p.out).strip()[-400:]}", cmd)
    return "failed"


def run_case(case: Case, a: argparse.Namespace, exe: str, model: str, work: str, det: bool) -> None:
    P, M = case.P, case.M
    common = ["--devices", str(P), "--microbatches", str(M), "--memory-limit-gb", "0"]
    tol = lambda x: FOUR_DECIMALS + 1e-9 * abs(x)  # noqa: E731
    n_layers = len(case.profile.layers)
    refusal = f"fewer than the {P} devices" if n_layers < P else ""
    hang_s = 10 * a.time_limit + 30

    bcmd = [exe, "bound", model, *common, "--json"]
    bp = run(bcmd, hang_s)
    b_state = exit_check(case, "bound", bp, bcmd, refusal)
    if b_state == "ok":
        try:
            case.bound = float(json.loads(bp.out)["bound_ms"])
        except (ValueError, KeyError) as e:
            case.fail("exit", f"bound --json: unreadable output ({e}): {bp.out[:200]}", bcmd)

    out = os.path.join(work, f"{case.profile.name}-P{P}-M{M}.yaml")
    budget = ["--evaluations", str(a.evaluations), "--rlimit", str(a.rlimit)] if a.evaluations else []
    scmd = [exe, "synth", model, *common, "--time-limit", f"{a.time_limit:g}", *budget, "--threads", str(a.threads),
            "--search-threads", str(a.search_threads), "--quiet", "-o", out]
    sp = run(scmd, hang_s)
    case.wall_s = sp.wall_s
    s_state = exit_check(case, "synth", sp, scmd, refusal)
    if (b_state == "refused") != (s_state == "refused") and "failed" not in (b_state, s_state):
        case.fail("mismatch", f"bound {b_state}, synth {s_state} (the model has {n_layers} layers, P = {P})")
    case.refused = b_state == "refused" and s_state == "refused"
    if not a.evaluations and sp.rc != 124 and sp.wall_s > a.time_limit + a.slack:
        case.fail("time", f"synth took {sp.wall_s:.2f} s, over --time-limit {a.time_limit:g} + {a.slack:g} s", scmd)
    if s_state != "ok":
        return
    if not os.path.exists(out):
        case.fail("exit", "synth exited 0 and wrote no file", scmd)
        return

    makespan, bounds = read_certificate(out)
    if makespan is None:
        case.fail("verify", "the written schedule has no certificate makespan_ms", scmd)
        return
    case.iteration = makespan
    for key, value in sorted(bounds.items()):
        if value > makespan + tol(makespan):
            case.fail("bound", f"the certificate's {key} {value} ms is above its iteration {makespan} ms", scmd)
    if case.bound is not None:
        if case.bound > makespan + tol(makespan):
            case.fail("bound", f"bound's global bound {case.bound} ms is above synth's iteration {makespan} ms", bcmd)
        g = bounds.get("global_lower_bound_ms")
        if g is None or abs(g - case.bound) > 1e-9 * max(1.0, abs(g)):
            case.fail("mismatch", f"synth's global bound {g} ms is not bound's {case.bound} ms", scmd)

    vcmd = [exe, "verify", out]
    vp = run(vcmd, hang_s)
    if vp.rc == 124:
        case.fail("hang", "verify did not end", vcmd)
    elif vp.rc != 0 or not vp.out.startswith("VALID"):
        case.fail("verify", f"verify: exit {vp.rc}: {vp.out.strip()[:400]}", vcmd)

    if a.memory_fraction:
        run_capped(case, a, exe, model, work, out, budget, hang_s)

    if det:
        dbudget = budget or ["--evaluations", str(a.det_evaluations), "--rlimit", str(a.det_rlimit)]
        dtime = f"{a.time_limit:g}" if budget else "60"
        files = []
        for k in (1, 2):
            f = os.path.join(work, f"{case.profile.name}-P{P}-M{M}.det{k}.yaml")
            dcmd = [exe, "synth", model, *common, "--time-limit", dtime, *dbudget, "--threads", str(a.threads),
                    "--search-threads", str(a.search_threads), "--quiet", "-o", f]
            if budget and k == 1:
                shutil.copyfile(out, f)  # the main run was already bounded by the budget
            else:
                dp = run(dcmd, max(hang_s, 90))
                if exit_check(case, "synth (determinism)", dp, dcmd, "") != "ok":
                    return
            files.append(f)
        with open(files[0], "rb") as x, open(files[1], "rb") as y:
            if x.read() != y.read():
                case.fail("determinism", f"two runs wrote different files: diff {files[0]} {files[1]}", dcmd)


def peak_memory_gb(path: str) -> float | None:
    """The largest per-device peak the certificate's peak_memory_gb lists."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            key, _, val = line.strip().partition(":")
            if key == "peak_memory_gb":
                peaks = [float(x) for x in val.strip().strip("[]").split(",") if x.strip()]
                return max(peaks) if peaks else None
    return None


def run_capped(case: Case, a: argparse.Namespace, exe: str, model: str, work: str, uncapped: str,
               budget: list[str], hang_s: float) -> None:
    """synth again with --memory-limit-gb at --memory-fraction of the uncapped plan's peak (the search
    then runs with recomputation searched): exit 0 and a VALID schedule that keeps the limit, or exit 2
    and an error that names the memory (no plan fits)."""
    failed_before = len(case.details)
    peak = peak_memory_gb(uncapped)
    if not peak or peak <= 0:
        case.capped = "no peak"
        return
    cap = f"{a.memory_fraction * peak:.6g}"
    out = os.path.join(work, f"{case.profile.name}-P{case.P}-M{case.M}.capped.yaml")
    cmd = [exe, "synth", model, "--devices", str(case.P), "--microbatches", str(case.M), "--memory-limit-gb", cap,
           "--time-limit", f"{a.time_limit:g}", *budget, "--threads", str(a.threads),
           "--search-threads", str(a.search_threads), "--quiet", "-o", out]
    p = run(cmd, hang_s)
    if not a.evaluations and p.rc != 124 and p.wall_s > a.time_limit + a.slack:
        case.fail("time", f"capped synth took {p.wall_s:.2f} s, over --time-limit {a.time_limit:g} + {a.slack:g} s", cmd)
    if p.rc == 2 and "pipesmith: error:" in p.err and "GB" in p.err:
        case.capped = f"no fit at {cap} GB"
        return
    if exit_check(case, "capped synth", p, cmd, "") != "ok":
        return
    makespan, bounds = read_certificate(out)
    if makespan is None:
        case.fail("verify", "the capped schedule has no certificate makespan_ms", cmd)
        return
    for key, value in sorted(bounds.items()):
        if value > makespan + FOUR_DECIMALS + 1e-9 * abs(makespan):
            case.fail("bound", f"the capped certificate's {key} {value} ms is above its iteration {makespan} ms", cmd)
    got = peak_memory_gb(out)
    if got is None or got > float(cap) * (1 + 1e-9):
        case.fail("verify", f"the capped schedule's peak {got} GB is above the limit {cap} GB", cmd)
    vcmd = [exe, "verify", out]
    vp = run(vcmd, hang_s)
    if vp.rc != 0 or not vp.out.startswith("VALID"):
        case.fail("verify", f"verify (capped): exit {vp.rc}: {vp.out.strip()[:400]}", vcmd)
    case.capped = f"{fmt(makespan)} at {cap} GB" if len(case.details) == failed_before else "failed"


# ----------------------------------------------------------------------------------------------- report
def fmt(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "-"
    return f"{x:.{digits - 1}e}" if 0 < abs(x) < 0.01 else f"{x:.{digits}f}"


def parse_devices(text: str) -> list[int] | str:
    """--devices LIST as ascending distinct P values, or the message that refuses it."""
    out: set[int] = set()
    for item in text.split(","):
        item = item.strip()
        if not re.fullmatch(r"[+-]?[0-9]+", item):
            return f"--devices {text!r}: {item!r} is not a whole number of devices"
        if int(item) < 1:
            return f"--devices {text!r}: {item!r} devices: a pipeline needs at least 1"
        out.add(int(item))
    return sorted(out)


def main() -> int:
    ap = argparse.ArgumentParser(prog="bench/profile-sweep", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1, help="seed of the profiles and shapes (default 1)")
    ap.add_argument("--profiles", type=int, default=100, help="profiles to draw (default 100)")
    ap.add_argument("--shapes", type=int, default=2, help="(P, M) shapes per profile (default 2)")
    ap.add_argument("--time-limit", type=float, default=2.0, help="synth's --time-limit in s (default 2)")
    ap.add_argument("--slack", type=float, default=1.0, help="synth's allowed wall time past it, s (default 1)")
    ap.add_argument("--evaluations", type=int, default=0,
                    help="run every synth with --evaluations N --rlimit R (deterministic; no time check)")
    ap.add_argument("--rlimit", type=int, default=500000, help="Z3's budget with --evaluations (default 500000)")
    ap.add_argument("--determinism", type=int, default=5,
                    help="cases (spread over the sweep) whose synth runs twice on budgets (default 5; "
                         "with --evaluations: every case)")
    ap.add_argument("--det-evaluations", type=int, default=200, help="the determinism runs' --evaluations")
    ap.add_argument("--det-rlimit", type=int, default=500000, help="the determinism runs' --rlimit")
    ap.add_argument("--threads", type=int, default=1, help="synth --threads (default 1)")
    ap.add_argument("--search-threads", type=int, default=1, help="synth --search-threads (default 1)")
    ap.add_argument("--case", action="append", default=[],
                    help="run only the cases whose id (e.g. 's1-003-random P=8 M=16') contains this; repeatable")
    ap.add_argument("--keep", metavar="DIR", help="write the models and schedules here (kept) instead of a temp folder")
    ap.add_argument("--devices", metavar="LIST", default=",".join(map(str, DEVICES)),
                    help="the device counts P that shapes are drawn from, comma-separated (default 1,4,8,16)")
    ap.add_argument("--memory-fraction", type=float, default=0.0, metavar="F",
                    help="also run each scheduled case's synth with --memory-limit-gb at F times its plan's "
                         "peak memory (0 < F < 1; recomputation searched) and check that run (default: off)")
    a = ap.parse_args()
    if a.profiles < 1 or a.shapes < 1 or a.time_limit <= 0:
        ap.error("--profiles and --shapes must be >= 1 and --time-limit > 0")
    if a.memory_fraction and not 0 < a.memory_fraction < 1:
        ap.error(f"--memory-fraction {a.memory_fraction:g}: give a fraction above 0 and below 1")
    devices = parse_devices(a.devices)
    if isinstance(devices, str):
        ap.error(devices)

    exe = os.environ.get("PIPESMITH") or os.path.join(ROOT, "build", "cli", "pipesmith")
    if not os.access(exe, os.X_OK):
        print(f"bench/profile-sweep: no pipesmith CLI at {exe}", file=sys.stderr)
        return 2
    profiles = draw_profiles(a.seed, a.profiles, a.shapes, devices)
    cases = [Case(p, P, M) for p in profiles for (P, M) in p.shapes]
    if a.case:
        unmatched = [s for s in a.case if not any(s in c.ident for c in cases)]
        if unmatched:
            ap.error(f"--case {unmatched[0]!r} matches no case of seed {a.seed} "
                     f"({a.profiles} profiles, {a.shapes} shapes each)")
        cases = [c for c in cases if any(s in c.ident for s in a.case)]
    work = a.keep or tempfile.mkdtemp(prefix="profile-sweep-")
    os.makedirs(work, exist_ok=True)
    n = len(cases)
    det_every = max(1, n // a.determinism) if a.determinism > 0 else 0
    for p in profiles:
        with open(os.path.join(work, p.name + ".yaml"), "w", encoding="utf-8") as fh:
            fh.write(p.yaml(random.Random(f"{a.seed}:{p.name}:mem")))

    mode = (f"--evaluations {a.evaluations} --rlimit {a.rlimit}" if a.evaluations
            else f"--time-limit {a.time_limit:g} (slack {a.slack:g} s)")
    print(f"# bench/profile-sweep: seed {a.seed}, {len(profiles)} profiles, {n} cases (P in "
          f"{{{', '.join(map(str, devices))}}}); synth {mode}, "
          f"--threads {a.threads} --search-threads {a.search_threads}; free links, no memory cap"
          + (f"; each case again capped at {a.memory_fraction:g} x its plan's peak memory" if a.memory_fraction else "")
          + "\n")
    capped_col = " capped: ms at GB |" if a.memory_fraction else ""
    print(f"| profile | P | M | layers | iteration ms | bound ms | ratio | wall s | outcome |{capped_col}")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|" + ("---|" if a.memory_fraction else ""))
    for k, c in enumerate(cases):
        det = bool(a.evaluations) or (det_every > 0 and k % det_every == det_every // 2)
        print(f"bench/profile-sweep: [{k + 1}/{n}] {c.ident}", file=sys.stderr, flush=True)
        run_case(c, a, exe, os.path.join(work, c.profile.name + ".yaml"), work, det)
        ratio = c.iteration / c.bound if c.iteration is not None and c.bound else None
        outcome = ("FAIL " + ",".join(c.failures)) if c.failures else ("refused: layers < P" if c.refused else "ok")
        if det and not c.failures and not c.refused:
            outcome += ", deterministic"
        print(f"| {c.profile.name} | {c.P} | {c.M} | {len(c.profile.layers)} | {fmt(c.iteration)} | {fmt(c.bound)} | "
              f"{fmt(ratio, 4)} | {fmt(c.wall_s, 2)} | {outcome} |" + (f" {c.capped or '-'} |" if a.memory_fraction else ""),
              flush=True)
        for d in c.details:
            print(f"bench/profile-sweep: {c.ident}: {d}", file=sys.stderr, flush=True)

    by_kind: dict[str, int] = {}
    for c in cases:
        for f in c.failures:
            by_kind[f] = by_kind.get(f, 0) + 1
    ratios = [c.iteration / c.bound for c in cases if c.iteration is not None and c.bound and not c.failures]
    failed = sum(1 for c in cases if c.failures)
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(by_kind.items())) or "none"
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else None
    refused = sum(1 for c in cases if c.refused)
    print(f"\n{n} cases, {failed} failed (by kind: {kinds}), {refused} refused (layers < P); iteration / bound over "
          f"{len(ratios)} scheduled cases: geometric mean {fmt(geo, 4)}, max {fmt(max(ratios, default=None), 4)}")
    if a.memory_fraction:
        fit = sum(1 for c in cases if " GB" in c.capped and not c.capped.startswith("no fit"))
        nofit = sum(1 for c in cases if c.capped.startswith("no fit"))
        print(f"capped at {a.memory_fraction:g} x the plan's peak: {fit} scheduled within the limit, {nofit} refused "
              f"(exit 2: no plan fits)")
    if not a.keep:
        if failed:
            print(f"bench/profile-sweep: the models and schedules are kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
