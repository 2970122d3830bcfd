#!/usr/bin/env bash
# Plain vs fast continuation scoring on one GPU, with a 7B-shaped LLaVA (one prepared run, < 10 min).
#
# What it does: builds a model with llava-1.5-7b's shapes (CLIP ViT-L/14 at 336 px -> 576 image
# tokens, a 32-layer 4096-wide Llama, 32k vocabulary) with RANDOM weights, directly on the GPU in
# bfloat16 (nothing is downloaded, nothing is written to disk), generates benchmark-shaped items
# (1-5 core + 1-5 spurious attributes, class names of 1-4 tokens, one image each) and scores the
# same requests with the plain and the fast scorer through the adapter's `score`. It prints, per
# workload (CGLA conditions; the four option letters of logprob mode): items/s of both scorers,
# their ratio, peak GPU memory, tokens processed against the unique-token minimum, the largest
# difference between the two scorers' log-probabilities (bf16: expect ~1e-2, not float32's 1e-5),
# and the scoring time extrapolated to all 2,400 items of MM-SpuBench.
#
# Requirements: one CUDA GPU with >= 24 GB (7B in bf16 is ~14 GB; H100/H200/A100 all fit), the
# `eval` extra installed (`pip install -e ".[eval]"`), no network. CI never runs this script.
# Expected wall time on an H100/H200: ~1 min to build, a few minutes of scoring (the encode step
# runs on the CPU and is part of both timings).
#
# Usage:
#   bash bench/gpu_score_speed.sh                 # the prepared GPU run
#   bash bench/gpu_score_speed.sh --items 32      # extra arguments go to bench/score_speed.py
#   bash bench/gpu_score_speed.sh --tiny          # the same code path on a tiny model, on the CPU
#                                                 # (checks the script without a GPU, ~1 min)
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--tiny" ]]; then
    shift
    exec python bench/score_speed.py --profile tiny --device cpu --dtype float32 --items 3 \
        --items-per-call 3 --extrapolate 2400 "$@"
fi

python - <<'PY'
import sys
import torch
if not torch.cuda.is_available():
    sys.exit("gpu_score_speed.sh: no CUDA device visible; run with --tiny to check the script on a CPU")
print(f"GPU: {torch.cuda.get_device_name(0)}, torch {torch.__version__}", flush=True)
PY

# 570 s: the whole run stays under ten minutes even if the GPU is slower than expected.
exec timeout 570 python bench/score_speed.py --profile llava-7b --device cuda --dtype bfloat16 \
    --items 64 --items-per-call 8 --batch-size 8 --threads 8 --extrapolate 2400 "$@"
