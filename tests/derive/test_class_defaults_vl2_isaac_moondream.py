"""Breadth round 7: DeepSeek-VL2, Isaac and Moondream 3, vLLM config classes whose defaults
did not plan as round 6 made them.

DeepSeek-VL2 (``deepseek_vl_v2``) is served by vLLM with its own
DeepseekVLV2Config (transformers_utils/configs/deepseek_vl2.py), whose class-default
``to_dict()`` does not read back: the class builds its text config from ``language_config``
but writes it as ``text_config``. The planned file is the variant
``deepseek_vl_v2.language-config.json`` (scripts/class_default_configs.py VARIANTS + RENAMED:
the same defaults, the key renamed to the one the class reads). Expected numbers are worked by
hand from the file's values; the oracle's answers are tests/oracles/vllm-0.33/
vllm-0.33-breadth.jsonl.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from kvledger.cli.main import main
from kvledger.derive import derive_model
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.request import PlanRequest

DEFAULTS = Path(__file__).resolve().parents[1] / "data" / "class-default-configs"
GIB8 = 8 << 30  # 8,589,934,592 B


def _config(name: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((DEFAULTS / f"{name}.json").read_text())
    return config


def test_the_variant_is_the_class_defaults_with_one_key_renamed() -> None:
    plain, variant = _config("deepseek_vl_v2"), _config("deepseek_vl_v2.language-config")
    made = variant["_generated_by"]
    assert made["vllm_config_class"] == ("vllm 0.33.0 transformers_utils/configs/"
                                         "deepseek_vl2.py DeepseekVLV2Config")
    assert made["keys_renamed"] == {"text_config": "language_config"}
    assert variant["language_config"] == plain["text_config"]
    assert "text_config" not in variant and "language_config" not in plain


def test_deepseek_vl_v2_plans_its_mla_language_config_by_hand() -> None:
    facts = derive_model(str(DEFAULTS / "deepseek_vl_v2.language-config.json"))
    text = _config("deepseek_vl_v2.language-config")["language_config"]
    # DeepseekV2Config's defaults: 32 layers, MLA (kv_lora_rank 512 + qk_rope_head_dim 64),
    # 2,048 positions; one latent of (512 + 64) x 2 B = 1,152 B per token per layer,
    # x 32 layers = 36,864 B per token.
    assert (text["num_hidden_layers"], text["kv_lora_rank"], text["qk_rope_head_dim"]) == (
        32, 512, 64)
    assert len(facts.layers) == 32
    assert facts.max_position_embeddings == 2048
    plan = plan_vllm(facts, PlanRequest(engine="vllm", kv_cache_memory_bytes=GIB8,
                                        max_model_len=2048, block_size=16), GIB8)
    # 16 tokens x 36,864 B = 589,824 B a block; 8,589,934,592 // 589,824 = 14,563 blocks
    assert (plan.block_size, plan.bytes_per_block, plan.num_blocks) == (16, 589_824, 14_563)


ORACLE = DEFAULTS.parents[1] / "oracles" / "vllm-0.33" / "vllm-0.33-breadth.jsonl"


def test_the_plain_class_defaults_are_refused_for_their_missing_language_config() -> None:
    # vLLM 0.33 stops on them too: the text_config dict the file holds has no
    # num_attention_heads attribute (transformers_utils/config.py get_hf_text_config)
    stopped = [json.loads(line) for line in ORACLE.read_text().splitlines()
               if '"class-default-configs/deepseek_vl_v2.json"' in line]
    assert len(stopped) == 1
    assert "does not have `num_attention_heads` attribute" in stopped[0]["error"]
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["plan", str(DEFAULTS / "deepseek_vl_v2.json"), "--engine", "vllm",
                     "--kv-cache-memory-bytes", "8GiB"])
    assert code == 2 and out.getvalue() == ""
    assert len(err.getvalue().splitlines()) == 1
    assert "no 'language_config' object" in err.getvalue()


# -- Isaac ----------------------------------------------------------------------------------
# vLLM's IsaacConfig is a Qwen3Config whose text_config is a copy; isaac.py builds
# Qwen3ForCausalLM on the top-level keys, vLLM's length comes from text_config.


def test_isaac_plans_qwen3_with_text_configs_length_by_hand() -> None:
    config = _config("isaac")
    assert config["max_sequence_length"] == 16384  # the processor's, at the top level only
    assert "max_sequence_length" not in config["text_config"]
    facts = derive_model(str(DEFAULTS / "isaac.json"))
    # text_config's max_position_embeddings, not min(32,768, 16,384)
    assert facts.max_position_embeddings == 32768
    assert len(facts.layers) == 32
    plan = plan_vllm(facts, PlanRequest(engine="vllm", kv_cache_memory_bytes=24 << 30,
                                        max_model_len=32768, block_size=16), 24 << 30)
    # 32 KV heads x 128 x 2 (K, V) x 2 B = 16,384 B a layer a token, x 32 layers = 524,288 B;
    # a block of 16 tokens 8,388,608 B; 25,769,803,776 // 8,388,608 = 3,072 blocks
    assert (plan.block_size, plan.bytes_per_block, plan.num_blocks) == (16, 8_388_608, 3_072)


def _isaac_with(tmp_path: Path, where: str, key: str, value: object) -> Path:
    config = _config("isaac")
    (config if where == "top" else config["text_config"])[key] = value
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def test_isaac_copies_that_differ_are_refused_naming_the_key(tmp_path: Path) -> None:
    for where in ("top", "text"):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["plan", str(_isaac_with(tmp_path, where, "num_key_value_heads", 8)),
                         "--engine", "vllm", "--kv-cache-memory-bytes", "8GiB"])
        assert code == 2 and out.getvalue() == "", err.getvalue()
        assert len(err.getvalue().splitlines()) == 1
        assert "isaac num_key_value_heads is" in err.getvalue()
        assert ("8 at the top level" if where == "top" else "but 8 in text_config") in (
            err.getvalue())


def test_isaac_length_is_text_configs_alone(tmp_path: Path) -> None:
    # vLLM's length rule reads hf_text_config (get_hf_text_config): a text_config of 8,192
    # positions caps it whatever the top level says; not a key Qwen3's layers read
    assert derive_model(str(_isaac_with(tmp_path, "text", "max_position_embeddings",
                                        8192))).max_position_embeddings == 8192
    assert derive_model(str(_isaac_with(tmp_path, "top", "max_position_embeddings",
                                        8192))).max_position_embeddings == 32768


# -- Moondream 3 ----------------------------------------------------------------------------
# vLLM's Moondream3Config reads the decoder from config["text"] (Moondream's own names); the
# planned file is the variant moondream3.config-text (the same defaults as empty "text" and
# "vision" sections, the to_dict() copies of the built sub-configs left out: DROPPED). vLLM
# 0.33's oracle planned the variant exactly as below (vllm-0.33-breadth.jsonl, replayed in
# tests/plan/engines/vllm/test_oracles.py).


def test_the_moondream3_variant_drops_the_built_objects() -> None:
    variant = _config("moondream3.config-text")
    assert variant["_generated_by"]["keys_dropped"] == ["text_config", "vision_config"]
    assert variant["config"] == {"text": {}, "vision": {}}
    assert "text_config" in _config("moondream3")


def test_the_plain_moondream3_defaults_stop_vllm_and_are_refused() -> None:
    # vLLM 0.33 stops on the plain to_dict(): its text_config comes back a dict, which
    # Moondream3Config.__init__ then reads as an object (self.text_config.hidden_size)
    stopped = [json.loads(line) for line in ORACLE.read_text().splitlines()
               if '"class-default-configs/moondream3.json"' in line]
    assert len(stopped) == 1
    assert stopped[0]["error"] == "AttributeError: 'dict' object has no attribute 'hidden_size'"
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["plan", str(DEFAULTS / "moondream3.json"), "--engine", "vllm",
                     "--kv-cache-memory-bytes", "8GiB"])
    assert code == 2 and out.getvalue() == ""
    assert len(err.getvalue().splitlines()) == 1
    assert "has no 'text' object" in err.getvalue()


def test_moondream3_plans_moondream3_text_config_defaults_by_hand() -> None:
    facts = derive_model(str(DEFAULTS / "moondream3.config-text.json"))
    # Moondream3TextConfig's defaults: 24 layers, 32 K/V heads of dim 2,048 // 32 heads = 64;
    # 32 x 64 x 2 (K, V) x 2 B = 8,192 B a layer a token, x 24 = 196,608 B; max_context 4,096
    assert len(facts.layers) == 24
    assert facts.max_position_embeddings == 4096
    plan = plan_vllm(facts, PlanRequest(engine="vllm", kv_cache_memory_bytes=GIB8,
                                        max_model_len=4096, block_size=16), GIB8)
    # 16 x 196,608 = 3,145,728 B a block; 8,589,934,592 // 3,145,728 = 2,730 blocks
    assert (plan.block_size, plan.bytes_per_block, plan.num_blocks) == (16, 3_145_728, 2_730)


def test_moondream3_reads_moondream_names_and_its_max_context(tmp_path: Path) -> None:
    config = _config("moondream3.config-text")
    # a smaller decoder stated in Moondream's schema: 4 layers, 8 query / 2 K/V heads of
    # 1,024 // 8 = 128; 2 x 128 x 2 x 2 B = 1,024 B a layer a token, x 4 = 4,096 B
    config["config"]["text"] = {"dim": 1024, "n_layers": 4, "n_heads": 8, "n_kv_heads": 2,
                                "max_context": 8192, "prefix_attn": 730}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    facts = derive_model(str(path))
    assert facts.max_position_embeddings == 8192
    assert sum(layer.bytes_per_token() for layer in facts.layers) == 4096
