"""Profile a model's layer types with PyTorch and write a model YAML with the measured numbers.

    python -m pipesmith.torch.profile MODEL.yaml | --hf CONFIG.json [--layers N]
        [-o OUT.yaml] [--cluster CLUSTER.yaml]
        [--hidden H] [--seq T] [--vocab V] [--rows-per-microbatch B] [--dtype float32|float64|bfloat16]
        [--threads N] [--device cpu|cuda] [--warmup K] [--repeats R] [--method chain|isolated|single]
        [--full-width]
        [--concurrent N] [--backward split|fused] [--also-fused PATH] [--user-model MODULE:FUNCTION]

(``pipesmith profile --backend torch MODEL.yaml ...`` runs this module.) With ``--hf CONFIG.json``
the model measured is the transformers model of that config, on its own layers
(:mod:`pipesmith.torch.hf_profile`), and the YAML written is the one ``pipesmith import hf`` writes
for it, with the measured numbers.

The measurement is :mod:`pipesmith.torch.profiler`'s (its docstring gives the method), the file
:mod:`pipesmith.torch.profile_yaml`'s. This module is the command: its flags, the checks of its
outputs and the writes; it also re-exports the names other modules take from it.
"""
from __future__ import annotations

import argparse
import sys

from .model_yaml import ModelFileError, load_model
from .output_file import OutputPathError, check_output_paths, write_output_file
from .profile_yaml import format_table, profiled_yaml
from .profiler import (DTYPES, METHODS, WALK_LAYERS, ProfileError, ProfileOptions, ProfileResult, TypeProfile,  # noqa: F401
                       _check_options, check_host_memory, host_memory_available, host_memory_estimate,
                       profile_model, resolve_width, sweep_ms)


def write_atomic(path: str, text: str, inputs: tuple[str, ...] = (), what: str = "-o") -> None:
    """Writes ``text`` to ``path`` whole or not at all, refusing an output that names one of
    ``inputs`` (:mod:`pipesmith.torch.output_file`, the rules of the command's writer)."""
    check_output_paths([(path, what)], inputs)
    write_output_file(path, text, what)


def options_parser(ap: argparse.ArgumentParser) -> None:
    """The profiling flags (shared with bench/torch)."""
    d = ProfileOptions()
    ap.add_argument("--hidden", type=int, help=f"hidden size of the reference model ({d.hidden}); with --hf: "
                                                "of the transformers model (default: the config's)")
    ap.add_argument("--seq", type=int, default=d.seq, help=f"tokens per sequence ({d.seq})")
    ap.add_argument("--vocab", type=int, help=f"vocabulary of the reference model ({d.vocab}); with --hf: of the "
                                               "transformers model (default: the config's)")
    ap.add_argument("--rows-per-microbatch", type=int, default=d.rows, help=f"sequences per microbatch ({d.rows})")
    ap.add_argument("--dtype", default=d.dtype, choices=DTYPES)
    ap.add_argument("--threads", type=int, default=d.threads, help="torch.set_num_threads on the CPU (1)")
    ap.add_argument("--device", default=d.device, choices=["cpu", "cuda"])
    ap.add_argument("--warmup", type=int, default=d.warmup, help=f"unmeasured repeats first ({d.warmup})")
    ap.add_argument("--repeats", type=int, default=d.repeats, help=f"measured repeats, median ({d.repeats})")
    ap.add_argument("--method", default=d.method, choices=METHODS,
                    help="chain (default): time every layer in sweeps of the whole model; isolated: time each "
                         "type's first layer alone, repeatedly; single: build only each type's first layer and "
                         "time it alone on random inputs (a model too large for the machine)")
    ap.add_argument("--full-width", action="store_true",
                    help="the architecture's own hidden size, heads, experts, vocabulary, sequence length and "
                         "micro_batch_size (replaces --hidden, --seq, --vocab, --rows-per-microbatch); MoE "
                         "routes each token to its top-k experts")
    ap.add_argument("--concurrent", type=int, default=d.concurrent,
                    help="processes running the same sweeps at once, the measured one included (default 1); "
                         "P ranks on one machine share it so")
    ap.add_argument("--user-model", metavar="MODULE:FUNCTION",
                    help="build the model with FUNCTION(spec, scale) instead of the reference transformer")


def options_from(args: argparse.Namespace) -> ProfileOptions:
    d = ProfileOptions()
    return ProfileOptions(hidden=d.hidden if args.hidden is None else args.hidden, seq=args.seq,
                          vocab=d.vocab if args.vocab is None else args.vocab, rows=args.rows_per_microbatch,
                          dtype=args.dtype, threads=args.threads, device=args.device, warmup=args.warmup,
                          repeats=args.repeats, method=args.method, concurrent=args.concurrent, user_model=args.user_model,
                          full_width=args.full_width)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipesmith.torch.profile",
                                 description="Measure each layer type's F, I, W time and memory with PyTorch; "
                                             "write a model YAML with the numbers")
    ap.add_argument("model", nargs="?", help="model YAML (docs/inputs.md); not with --hf")
    ap.add_argument("--hf", metavar="CONFIG.json",
                    help="profile the Hugging Face transformers model of this config.json on its own layers "
                         "(at the config's sizes, or shrunk by --layers, --hidden, --vocab) instead of a model "
                         "YAML's reference transformer")
    ap.add_argument("--layers", type=int, help="--hf: decoder layers kept (default: the config's)")
    ap.add_argument("-o", "--output", default="-", help="model YAML to write (- = stdout, the default; "
                                                        "otherwise a table is printed)")
    ap.add_argument("--cluster", help="cluster YAML to put into the output (replaces the model's cluster:)")
    ap.add_argument("--backward", default="split", choices=["split", "fused"],
                    help="split (default): I and W as measured; fused: I and W scaled so that I + W is the "
                         "measured fused B (PyTorch's B costs less than its I + W)")
    ap.add_argument("--also-fused", metavar="PATH",
                    help="also write the --backward fused YAML of the same measurement here")
    options_parser(ap)
    args = ap.parse_args(argv)
    if (args.model is None) == (args.hf is None):
        ap.error("give a model YAML or --hf CONFIG.json (one of them)")
    if args.layers is not None and args.hf is None:
        ap.error("--layers applies to --hf only")
    source = args.model or args.hf
    try:
        opts = options_from(args)
        _check_options(opts)
        spec = load_model(args.model) if args.model else None
        check_output_paths([(args.output, "-o"), (args.also_fused or "", "--also-fused")],
                           (source, args.cluster or ""))
        try:
            import torch  # noqa: F401
        except ImportError as e:
            raise ProfileError(f"PyTorch does not import ({e}): install it (python/requirements.txt)") from None
        if spec is None:
            from .hf_profile import profile_hf
            result = profile_hf(args.hf, opts, args.layers, args.hidden, args.vocab)
        else:
            result = profile_model(spec, opts, progress=None)
        text = profiled_yaml(args.model, result, args.cluster, args.backward)
        if args.output == "-":
            sys.stdout.write(text)
            return 0
        sys.stdout.write(format_table(result))
        write_atomic(args.output, text, (source, args.cluster or ""), "-o")
        print(f"wrote {args.output}")
        if args.also_fused:
            write_atomic(args.also_fused, profiled_yaml(args.model, result, args.cluster, "fused"),
                         (source, args.cluster or "", args.output), "--also-fused")
            print(f"wrote {args.also_fused}")
        return 0
    except (ProfileError, ModelFileError, OutputPathError) as e:
        print(f"pipesmith profile: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
