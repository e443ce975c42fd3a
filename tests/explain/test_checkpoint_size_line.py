"""``explain`` reads vLLM's "Checkpoint size: X GiB" line as the checkpoint's total where it has
no checkpoint of its own, as a model directory's index would give it to ``plan``.

The line is ``model_loader/weight_utils.py safetensors_weights_iterator``'s (read in vLLM
0.28.0 and 0.34.0: ``"Filesystem type for checkpoints: %s. Checkpoint size: %.2f GiB. "``,
the summed size of the safetensors files, ``_get_checkpoints_size_bytes``). The log below is
written here for a made-up run of Llama-3.1-8B on vLLM 0.33 at TP 1 whose checkpoint is
20.00 GiB (a larger checkpoint than the config's bf16 weights, 14.96 GiB, so the two cannot
be confused).
"""

from __future__ import annotations

from kvledger.report.explain import explain_log

GIB = 1 << 30

CONFIG = (
    "(EngineCore pid=11) INFO 01-02 10:00:00 [core.py:97] Initializing a V1 LLM engine "
    "(v0.33.0) with config: model='meta-llama/Meta-Llama-3.1-8B', dtype=torch.bfloat16, "
    "max_seq_len=8192, tensor_parallel_size={tp}, pipeline_parallel_size=1, "
    "data_parallel_size=1, kv_cache_dtype=auto, enable_prefix_caching=True\n"
)
CHECKPOINT = (
    "(EngineCore pid=11) INFO 01-02 10:00:05 [weight_utils.py:859] Filesystem type for "
    "checkpoints: EXT4. Checkpoint size: 20.00 GiB. Available RAM: 210.20 GiB.\n"
)
LOADED = (
    "(EngineCore pid=11) INFO 01-02 10:00:20 [gpu_model_runner.py:4421] Model loading took "
    "20.01 GiB memory and 6.204113 seconds\n"
    "(EngineCore pid=11) INFO 01-02 10:00:41 [gpu_worker.py:773] Available KV cache memory: "
    "49.00 GiB\n"
)


def test_the_checkpoint_size_is_the_weights_total() -> None:
    e = explain_log(CONFIG.format(tp=1) + CHECKPOINT + LOADED)
    assert e.figures["checkpoint_gib"] == "20.00 GiB"
    check = e.check("weights_bytes")
    # 20.00 GiB printed: 19.995-20.005 GiB, the middle 20 × 2**30 B, counted as stored.
    assert check.derived == 20 * GIB
    assert "checkpoint size" in check.why


def test_without_the_line_the_weights_are_the_configs_estimate() -> None:
    check = explain_log(CONFIG.format(tp=1) + LOADED).check("weights_bytes")
    # Llama-3.1-8B: 8.03 B parameters × 2 B (bf16) = 14.96 GiB, nowhere near 20.
    assert check.derived is not None and abs(check.derived - 20 * GIB) > 4 * GIB


def test_the_total_is_shared_over_tensor_parallel_ranks() -> None:
    check = explain_log(CONFIG.format(tp=2) + CHECKPOINT + LOADED).check("weights_bytes")
    # A dense model at TP 2: ceil(20 GiB / 2) = 10 GiB per GPU (its share estimated).
    assert check.derived == 10 * GIB


def test_a_float32_config_served_in_16_bits_keeps_the_estimate() -> None:
    # A total has no split by dtype: a float32 checkpoint vLLM serves in bfloat16 would be
    # counted at twice its GPU size. A config stating float32 (Llama-3.1-8B's shape) keeps the
    # estimate: 8,030,261,248 parameters × 2 B (bfloat16 served) = 14.96 GiB, not 20.
    from kvledger.source.resolve import load_source

    config = dict(load_source("meta-llama/Meta-Llama-3.1-8B").config)
    config["torch_dtype"] = "float32"
    check = explain_log(CONFIG.format(tp=1) + CHECKPOINT + LOADED,
                        model=config).check("weights_bytes")
    assert check.derived == 8_030_261_248 * 2
    assert "checkpoint size" not in check.why
