"""Meta's Llama-3.1-405B-Instruct-FP8 (``quant_method`` ``fbgemm_fp8``), as vLLM loads it.

- Weights (vLLM 0.34 ``fbgemm_fp8.py`` ``FBGEMMFp8LinearMethod.create_weights``): each linear
  weight in fp8 with one float32 scale per output row; a module named in
  ``modules_to_not_convert`` stays in the model dtype, matched exactly (``is_layer_skipped``).
  kvledger takes the scale at the hidden size: 8 + 32 / 16,384 = 8.001953125 bits a weight.
- Start-up (``ModelConfig._verify_quantization``): fbgemm_fp8 is deprecated and refused unless
  ``--allow-deprecated-quantization``; with it vLLM loads the checkpoint (a warning), and the KV
  cache is the oracle's (``tests/oracles/vllm-0.33/vllm-0.33-heldout.jsonl``, made with the
  quantization stripped: 2,080 blocks of 16, 33,280 tokens at 16 GiB and 32,768 tokens).
"""

from __future__ import annotations

import json

import pytest

from kvledger.cli.main import main
from kvledger.plan.weights import estimate_weights
from oracle_cases import CONFIGS

CONFIG = CONFIGS / "meta-llama--Meta-Llama-3.1-405B-Instruct-FP8.json"


@pytest.fixture
def config() -> dict[str, object]:
    if not CONFIG.is_file():
        pytest.skip("Llama-3.1-405B-Instruct-FP8's config is in ../shared/configs")
    loaded: dict[str, object] = json.loads(CONFIG.read_text())
    return loaded


def test_weights_by_hand(config: dict[str, object]) -> None:
    """hidden 16,384, intermediate 53,248, 126 layers, 128 query / 8 KV heads of 128, vocab
    128,256, untied. A layer: attention 2 x 16,384^2 + 2 x 16,384 x 1,024 = 570,425,344; MLP
    3 x 16,384 x 53,248 = 2,617,245,696. modules_to_not_convert keeps layer 0's attention and
    layers 0 and 125's MLPs. fp8: 125 x 570,425,344 + 124 x 2,617,245,696 = 395,841,634,304
    weights x 8.001953125 / 8 = 395,938,275,328 B. bf16: embed + lm_head 2 x 128,256 x 16,384 =
    4,202,692,608, norms 126 x 32,768 + 16,384 = 4,145,152, the kept 570,425,344 +
    5,234,491,392: 10,011,754,496 x 2 = 20,023,508,992 B. Total 415,961,784,320 B."""
    got = estimate_weights(config, "bfloat16")
    assert got.bytes == 415_961_784_320
    assert "fbgemm_fp8" in got.how and "modules_to_not_convert" in got.how


def test_refused_without_the_bypass_and_planned_with_it(
        config: dict[str, object], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", str(CONFIG), "--engine", "vllm==0.33", "--kv-cache-memory-bytes", "16GiB",
            "--max-model-len", "32768", "--json"]
    assert main(argv) == 2
    assert "--allow-deprecated-quantization" in capsys.readouterr().err
    assert main([*argv, "--allow-deprecated-quantization"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert (plan["num_blocks"], plan["kv_cache_tokens"], plan["block_size"]) == (2080, 33280, 16)


def test_a_pasted_line_with_the_bypass_plans(
        config: dict[str, object], capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--engine", "vllm==0.33", "--kv-cache-memory-bytes", "16GiB",
                 "--json", "--", "vllm", "serve", str(CONFIG), "--max-model-len", "32768",
                 "--allow-deprecated-quantization"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["num_blocks"] == 2080


def test_no_hidden_size_is_refused_not_guessed() -> None:
    # The scale share is 32 / in_features bits a weight; without hidden_size it is not sized
    # (before: taken as 4,096).
    from kvledger.plan.weights import WeightsError, quant_scheme

    with pytest.raises(WeightsError, match="without hidden_size"):
        quant_scheme({"quantization_config": {"quant_method": "fbgemm_fp8"},
                       "num_hidden_layers": 2}, None)
