"""``--attention-backend ROCM_AITER_FA`` on an AMD Instinct GPU (vLLM 0.33 and 0.34,
``v1/attention/backends/rocm_aiter_fa.py`` ``AiterFlashAttentionBackend``, the same in both):
kernel blocks [16, 32], which ``AttentionBackend.supports_block_size`` accepts in any multiple
of 16, so ``--block-size auto`` is the release's default (``get_preferred_block_size``: 16 in
0.33, 64 in 0.34); head sizes 64, 128, 256 only; decoder attention only. The shuffle layout
(``VLLM_ROCM_SHUFFLE_KV_CACHE_LAYOUT=1``, ``customize_spec``) stores K and V as two head slots of
heads × head_size × dtype: the same bytes a page. The CPU oracle cannot build AITER's kernels:
these numbers are worked by hand.

Llama-3.1-8B: 32 layers × 2 × 8 KV heads × 128 × 2 B = 131,072 B a token. A 64-token block
(0.34) is 8 MiB: 8 GiB holds 1,024 blocks; a 16-token block (0.33) is 2 MiB: 4,096 blocks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main

LINE = ("VLLM_ROCM_USE_AITER=1", "VLLM_ROCM_SHUFFLE_KV_CACHE_LAYOUT=1", "vllm", "serve",
        "meta-llama/Meta-Llama-3.1-8B", "--attention-backend", "ROCM_AITER_FA",
        "--kv-cache-memory-bytes", "8G", "--max-model-len", "8192")


def run(capsys: pytest.CaptureFixture[str], release: str, gpu: str,
        *line: str) -> tuple[int, dict[str, Any], str]:
    code = main(["plan", "--engine", release, "--gpu", gpu, "--json", "--", *line])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else {}), err


@pytest.mark.parametrize(("release", "block", "blocks"), [
    ("vllm==0.34", 64, 1_024), ("vllm==0.33", 16, 4_096)])
def test_it_takes_the_release_default_block(capsys: pytest.CaptureFixture[str], release: str,
                                           block: int, blocks: int) -> None:
    # Before: "attention backend ROCM_AITER_FA on a ROCm GPU: its kernel block sizes are not
    # modelled".
    code, data, err = run(capsys, release, "MI300X", *LINE)
    assert code == 0, err
    assert (data["block_size"], data["num_blocks"]) == (block, blocks)


def test_a_multiple_of_16_is_taken_and_8_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, data, err = run(capsys, "vllm==0.34", "MI355X", *LINE, "--block-size", "48")
    assert code == 0, err
    assert data["block_size"] == 48  # 48 % 16 == 0 (supports_block_size)
    code, _, err = run(capsys, "vllm==0.34", "MI355X", *LINE, "--block-size", "8")
    assert code == 2 and "block_size not supported" in err


def test_a_head_size_it_has_no_kernel_for_is_refused(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    # A Llama-shaped config with head_dim 96 (3,072 / 32 heads): not in [64, 128, 256].
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
              "hidden_size": 3072, "num_attention_heads": 32, "num_key_value_heads": 8,
              "num_hidden_layers": 4, "intermediate_size": 8192, "vocab_size": 32000,
              "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}
    (tmp_path / "config.json").write_text(json.dumps(config))
    code, _, err = run(capsys, "vllm==0.34", "MI300X", "vllm", "serve", str(tmp_path),
                       "--attention-backend", "ROCM_AITER_FA", "--kv-cache-memory-bytes", "1G")
    assert code == 2
    assert ("Selected backend AttentionBackendEnum.ROCM_AITER_FA is not valid for this "
            "configuration. Reason: ['head_size not supported']") in err
