"""Measure a point-to-point link with torch.distributed and write it as a pipesmith cluster YAML.

    python -m pipesmith.torch.link [-o CLUSTER.yaml] [--backend gloo|nccl] [--devices P]
        [--sizes-kb 1,4,...] [--repeats R] [--warmup K]

Two processes on this machine (``torch.multiprocessing``, a TCP store on localhost) ping-pong a
float32 tensor of each size: rank 0 sends it (``dist.send``), rank 1 receives it and sends it back.
One transfer is half a round trip; the time of a size is the median over the repeats. The link
model of docs/inputs.md, ``ms = latency_us / 1000 + MB / bandwidth_gb_per_s``, is fitted by least
squares weighted by 1 / time² (each size's relative error counts alike, so the small sizes fix the
latency and the large ones the bandwidth). The cluster YAML has the fitted ``link:``, ``devices``
(default 2) and a header comment with the measured sizes and the fit's worst relative error.
With ``--backend nccl`` each rank uses one GPU (``cuda:rank``) and ``torch.cuda.synchronize`` ends
each timing.

Exit 0; 2 on a bad flag (sizes: finite, in (0, 1 GiB], two different at least; ``--devices`` in
2..100,000, ``--repeats`` in 1..1000, ``--warmup`` in 0..1000) or an ``-o`` that cannot be written,
before anything is measured; 1 when the measurement or the fit fails.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import socket
import statistics
import sys
import time
from typing import Sequence

from .._tables import LIMITS
from ..errors import BadInputError

DEFAULT_SIZES_KB = (1, 4, 16, 64, 256, 1024, 4096, 16384)


class LinkError(BadInputError):
    """A measurement or fit that cannot be made; the message says why."""


@dataclasses.dataclass(frozen=True)
class LinkFit:
    latency_us: float
    bandwidth_gb_per_s: float
    worst_rel_error: float  # max over the points of |model - measured| / measured

    def predict_ms(self, nbytes: float) -> float:
        return self.latency_us / 1e3 + nbytes / 1e6 / self.bandwidth_gb_per_s


def fit_link(nbytes: Sequence[float], ms: Sequence[float]) -> LinkFit:
    """Fits ``ms = a + b * bytes`` (a >= 0, b > 0) weighted by 1 / ms²; returns latency (a in us)
    and bandwidth (1 / b in GB/s)."""
    if len(nbytes) != len(ms) or len(nbytes) < 2:
        raise LinkError(f"the fit needs at least two (bytes, ms) points, got {len(nbytes)} and {len(ms)}")
    if len(set(nbytes)) < 2:
        raise LinkError("the fit needs at least two different sizes")
    if any(t <= 0 for t in ms) or any(x < 0 for x in nbytes):
        raise LinkError("times must be > 0 and sizes >= 0")
    w = [1.0 / (t * t) for t in ms]
    sw = sum(w)
    mx = sum(wi * x for wi, x in zip(w, nbytes)) / sw
    my = sum(wi * t for wi, t in zip(w, ms)) / sw
    sxx = sum(wi * (x - mx) ** 2 for wi, x in zip(w, nbytes))
    sxy = sum(wi * (x - mx) * (t - my) for wi, x, t in zip(w, nbytes, ms))
    b = sxy / sxx
    a = my - b * mx
    if b <= 0:
        raise LinkError(f"the times do not grow with the size (slope {b:.3g} ms/byte): no bandwidth to fit")
    if a < 0:  # a latency below zero is noise: refit the slope through the origin
        a = 0.0
        b = sum(wi * x * t for wi, x, t in zip(w, nbytes, ms)) / sum(wi * x * x for wi, x in zip(w, nbytes))
    fit = LinkFit(latency_us=a * 1e3, bandwidth_gb_per_s=1.0 / (b * 1e6), worst_rel_error=0.0)
    worst = max(abs(fit.predict_ms(x) - t) / t for x, t in zip(nbytes, ms))
    return dataclasses.replace(fit, worst_rel_error=worst)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, port: int, backend: str, sizes: list[int], warmup: int, repeats: int, queue) -> None:
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    dev = torch.device(f"cuda:{rank}") if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(dev)
    sync = torch.cuda.synchronize if backend == "nccl" else (lambda: None)
    results = []
    for nbytes in sizes:
        buf = torch.zeros(max(1, nbytes // 4), dtype=torch.float32, device=dev)
        times = []
        for r in range(warmup + repeats):
            dist.barrier()
            sync()
            t0 = time.perf_counter()
            if rank == 0:
                dist.send(buf, 1)
                dist.recv(buf, 1)
            else:
                dist.recv(buf, 0)
                dist.send(buf, 0)
            sync()
            if r >= warmup:
                times.append((time.perf_counter() - t0) * 1e3 / 2)
        results.append((buf.numel() * 4, statistics.median(times)))
    if rank == 0:
        queue.put(results)
    dist.barrier()
    dist.destroy_process_group()


def measure(backend: str = "gloo", sizes_kb: Sequence[int] = DEFAULT_SIZES_KB, warmup: int = 3,
            repeats: int = 10) -> list[tuple[int, float]]:
    """(bytes, median one-way ms) for each size, between two local processes."""
    import torch.multiprocessing as mp
    if backend == "nccl":
        import torch
        if torch.cuda.device_count() < 2:
            raise LinkError(f"--backend nccl needs two GPUs, this machine has {torch.cuda.device_count()}")
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    port = _free_port()
    sizes = [int(k * 1024) for k in sizes_kb]
    mp.start_processes(_worker, args=(port, backend, sizes, warmup, repeats, queue), nprocs=2, join=True,
                       start_method="spawn")
    return queue.get()


def cluster_yaml(points: list[tuple[int, float]], fit: LinkFit, backend: str, devices: int) -> str:
    import torch
    head = [f"# Measured by `python -m pipesmith.torch.link` ({backend}, torch {torch.__version__}): two processes "
            "on this machine",
            "# ping-pong a float32 tensor; one-way time = half the round trip, median per size; "
            "ms = latency + MB / bandwidth",
            "# fitted weighted by 1/time^2 (docs/pytorch.md, 'Measured vs simulated').",
            "#   bytes        measured_ms  fitted_ms"]
    for nb, t in points:
        head.append(f"#   {nb:<12d} {t:<12.4f} {fit.predict_ms(nb):.4f}")
    head.append(f"# Worst relative error of the fit: {fit.worst_rel_error:.1%}")
    body = ("schema: 1\n"
            "cluster:\n"
            f"  name: {backend}-localhost\n"
            f"  devices: {devices}\n"
            f"  link: {{bandwidth_gb_per_s: {fit.bandwidth_gb_per_s:.6g}, latency_us: {fit.latency_us:.6g}}}\n")
    return "\n".join(head) + "\n" + body


MAX_DEVICES = LIMITS["devices"]  # ir/limits.h, through pipesmith._tables
MAX_SIZE_KB = 1 << 20   # 1 GiB a message


def parse_sizes_kb(text: str) -> list[float]:
    """``--sizes-kb``: at least two different finite sizes in (0, 1 GiB], comma-separated."""
    try:
        sizes = [float(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise LinkError(f"--sizes-kb: a comma-separated list of numbers, got '{text:.80}'") from None
    bad = [s for s in sizes if not (math.isfinite(s) and 0 < s <= MAX_SIZE_KB)]
    if bad or len(set(sizes)) < 2:
        raise LinkError(f"--sizes-kb: at least two different sizes, each a finite number of KiB in (0, {MAX_SIZE_KB}]"
                        + (f", got {bad[0]:g}" if bad else ""))
    return sizes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipesmith.torch.link", description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", default="-", help="cluster YAML to write (- = stdout, the default)")
    ap.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
    ap.add_argument("--devices", type=int, default=2, help="devices of the cluster written (default 2)")
    ap.add_argument("--sizes-kb", default=",".join(str(s) for s in DEFAULT_SIZES_KB),
                    help="message sizes in KiB, comma-separated")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args(argv)
    from .output_file import OutputPathError, check_output_paths, write_output_file
    try:  # the flags, and the output, before any measurement: exit 2 as argparse's own refusals
        sizes = parse_sizes_kb(args.sizes_kb)
        if not (2 <= args.devices <= MAX_DEVICES and 1 <= args.repeats <= 1000 and 0 <= args.warmup <= 1000):
            raise LinkError(f"--devices in 2..{MAX_DEVICES}, --repeats in 1..1000, --warmup in 0..1000; got "
                            f"{args.devices}, {args.repeats}, {args.warmup}")
        check_output_paths([(args.output, "-o")])
    except (LinkError, OutputPathError) as e:
        ap.error(str(e))
    try:
        points = measure(args.backend, sizes, args.warmup, args.repeats)
        fit = fit_link([p[0] for p in points], [p[1] for p in points])
        text = cluster_yaml(points, fit, args.backend, args.devices)
        if args.output == "-":
            sys.stdout.write(text)
        else:
            write_output_file(args.output, text, "-o")
            print(f"link ({args.backend}): latency {fit.latency_us:.1f} us, bandwidth "
                  f"{fit.bandwidth_gb_per_s:.3g} GB/s (worst fit error {fit.worst_rel_error:.0%}); wrote {args.output}")
        return 0
    except (LinkError, OutputPathError) as e:
        print(f"pipesmith link: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
