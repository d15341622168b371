#!/bin/sh
# ctest `torch_export` (label torch): synthesize and export schedules, then run both CSVs with
# PyTorch's own runtime through examples/pytorch/run_schedule.py (torchrun, gloo, CPU) and compare
# gradients with an unpipelined run. Exit 77 (ctest SKIP_RETURN_CODE) when PyTorch >= 2.6 is missing.
# Usage: run_export_example.sh PIPESMITH SOURCE_DIR
set -eu
PIPESMITH=$1
SRC=$2
if ! python3 -c 'import sys, torch; v = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]); sys.exit(0 if v >= (2, 6) else 1)' 2>/dev/null; then
  echo "skipped: needs python3 with PyTorch >= 2.6 (import torch failed or is older)"
  exit 77
fi
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
MODEL="$SRC/configs/models/llama2-7b.yaml"
# An irregular placement with uneven stage counts (5 stages on 3 ranks), split backward (I/W).
"$PIPESMITH" synth "$MODEL" --devices 3 --microbatches 6 --memory-limit-gb 0 --placement 0,1,2,0,2 \
  --evaluations 20 --time-limit 5 --quiet -o "$OUT/synth.yaml"
"$PIPESMITH" export "$OUT/synth.yaml" --to pytorch -o "$OUT/synth" --model "$MODEL"
# Published schedules: ZB-V (V placement, I/W split) and interleaved 1F1B (looped).
"$PIPESMITH" baseline "$MODEL" --schedule zbv --devices 2 --microbatches 4 --memory-limit-gb 0 -o "$OUT/zbv.yaml"
"$PIPESMITH" export "$OUT/zbv.yaml" --to pytorch -o "$OUT/zbv" --model "$MODEL"
"$PIPESMITH" baseline "$MODEL" --schedule interleaved-1f1b --devices 2 --microbatches 4 --memory-limit-gb 0 \
  -o "$OUT/i1f1b.yaml"
"$PIPESMITH" export "$OUT/i1f1b.yaml" --to pytorch -o "$OUT/i1f1b" --model "$MODEL"
for case in synth:3 zbv:2 i1f1b:2; do
  dir=${case%%:*}
  nproc=${case##*:}
  for format in compute_only compute_comms; do
    python3 -m torch.distributed.run --standalone --nproc-per-node "$nproc" \
      "$SRC/examples/pytorch/run_schedule.py" "$OUT/$dir" --format "$format"
  done
done
