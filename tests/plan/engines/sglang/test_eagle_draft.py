"""SGLang 0.5.23's token pool with a separate EAGLE / EAGLE3 / STANDALONE draft.

Read in SGLang 0.5.23's source (``plan/engines/sglang/draft_layers.py`` cites it):
``spec_aux_hidden_state.py _resolve_eagle_aux_hidden_state`` takes the draft config's
``num_nextn_predict_layers``, else ``max(num_hidden_layers, num_attention_layers)``;
``pool_configurator.py DefaultPoolConfigurator.__init__`` adds
``int(cell × draft layers / target layers)`` to the target's cell. No oracle case: the SGLang
oracle tool builds its configurator with an empty ``SpecAuxHiddenStateConfig`` (it does not
drive speculative settings), so the numbers below are worked by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.plan.engines.sglang.draft_layers import draft_num_layers
from oracle_cases import CONFIGS

GIB = 1 << 30
LLAMA = "meta-llama/Meta-Llama-3.1-8B"
DRAFT = CONFIGS / "sgl-project--SpecForge-llama3-8B-eagle3.json"
# Llama-3.1-8B on SGLang: 8 KV heads × (128 + 128) × 32 layers × 2 B = 131,072 B a token.
CELL = 131_072


def _plan(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code = main(["plan", "--json", *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_the_draft_layer_count_sglang_reads() -> None:
    assert draft_num_layers({"num_hidden_layers": 1}) == 1
    # A draft stating next-n layers is counted by them, whatever its backbone.
    assert draft_num_layers({"num_hidden_layers": 61, "num_nextn_predict_layers": 1}) == 1
    assert draft_num_layers({"text_config": {"num_hidden_layers": 2}}) == 2
    # layer_types do not count (ModelConfig.num_attention_layers is num_hidden_layers unless
    # the architecture repeats its layers: Longcat-Flash twice, Nanbeige num_loops times).
    assert draft_num_layers({"num_hidden_layers": 4,
                             "layer_types": ["linear_attention"] * 3 + ["full_attention"]}) == 4
    assert draft_num_layers({"architectures": ["LongcatFlashForCausalLM"],
                             "num_hidden_layers": 1}) == 2
    assert draft_num_layers({"architectures": ["NanbeigeForCausalLM"], "num_hidden_layers": 2,
                             "num_loops": 3}) == 6
    with pytest.raises(ValueError, match="num_hidden_layers"):
        draft_num_layers({"hidden_size": 4096})


def test_an_eagle3_draft_adds_its_layers_share_of_the_cell(
        capsys: pytest.CaptureFixture[str]) -> None:
    if not DRAFT.is_file():
        pytest.skip("the SpecForge EAGLE3 draft config is in ../shared/configs")
    # The draft has 1 layer: 131,072 + int(131,072 × 1 / 32) = 131,072 + 4,096 = 135,168 B;
    # 10 GiB / 135,168 = 79,437 tokens (page 1).
    data = _plan(capsys, LLAMA, "--engine", "sglang", "--gpu", "H200",
                 "--kv-cache-memory-bytes", str(10 * GIB), "--speculative-method", "eagle3",
                 "--num-speculative-tokens", "3", "--draft-config", str(DRAFT))
    assert data["bytes_per_token"] == CELL + 4_096 == 135_168
    assert data["kv_cache_tokens"] == 10 * GIB // 135_168 == 79_437
    assert any("counts the draft's 1 layer" in w for w in data["warnings"])


def test_an_unread_draft_plans_the_target_and_says_what_is_missing(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Before: refused ("the draft model's layer count and KV are not in this plan").
    data = _plan(capsys, LLAMA, "--engine", "sglang", "--gpu", "H200",
                 "--kv-cache-memory-bytes", str(10 * GIB), "--speculative-method", "eagle3",
                 "--num-speculative-tokens", "3")
    assert data["bytes_per_token"] == CELL
    assert any("draft's config was not read" in w and "--draft-config" in w
               for w in data["warnings"])


def test_a_pasted_line_reads_the_draft_directory(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # --speculative-draft-model-path DIR: the draft's config.json is read from it.
    (tmp_path / "config.json").write_text(json.dumps(
        {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama",
         "num_hidden_layers": 2, "hidden_size": 4096, "num_attention_heads": 32,
         "num_key_value_heads": 8, "vocab_size": 128256}))
    # 2 layers: 131,072 + int(131,072 × 2 / 32) = 139,264 B.
    data = _plan(capsys, "--engine", "sglang", "--gpu", "H200", "--kv-cache-memory-bytes",
                 str(10 * GIB), "--", "python", "-m", "sglang.launch_server",
                 "--model-path", LLAMA, "--speculative-algorithm", "EAGLE3",
                 "--speculative-draft-model-path", str(tmp_path),
                 "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
                 "--speculative-num-draft-tokens", "4")
    assert data["bytes_per_token"] == 139_264


def test_draft_config_is_still_refused_for_an_engine_that_does_not_read_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    # The native layout plans no engine's speculation: --draft-config stays a vLLM / SGLang
    # option (vllm_launch_options.vllm_launch refuses it elsewhere, as before).
    code = main(["plan", LLAMA, "--engine", "native", "--kv-cache-memory-bytes",
                 str(10 * GIB), "--draft-config", "/nonexistent.json"])
    _, err = capsys.readouterr()
    assert code == 2 and "--draft-config" in err


def test_a_hub_draft_that_cannot_be_read_offline_plans_the_target_with_a_note(
        capsys: pytest.CaptureFixture[str]) -> None:
    # The tests run offline: the Hub id is neither in the catalog nor in the HF cache.
    code = main(["plan", "--json", "--engine", "sglang", "--gpu", "H200",
                 "--kv-cache-memory-bytes", str(10 * GIB), "--", "sglang", "serve",
                 "--model-path", LLAMA, "--speculative-algorithm", "EAGLE3",
                 "--speculative-draft-model-path", "some-lab/not-a-cached-eagle3-draft",
                 "--speculative-num-steps", "3"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert data["bytes_per_token"] == CELL
    assert any("draft's config was not read" in w for w in data["warnings"])
    assert any("not-a-cached-eagle3-draft" in n and "--draft-config" in n
               for n in data["serve_line"]["notes"])
