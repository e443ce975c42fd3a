"""Breadth round 6: model types vLLM loads with a config class of its OWN
(vllm/transformers_utils/config.py ``_CONFIG_REGISTRY``; the classes in
``transformers_utils/configs/*.py``). Every config here is a CLASS-DEFAULT config made from
vLLM's class (tests/data/class-default-configs/, written by ``scripts/class_default_configs.py
--python <0.33 oracle venv> --vllm 0.33 --transformers 5.20``), not a real checkpoint file.
Expected numbers are worked by hand from the values in the file (arithmetic in comments).
The types kvledger refuses are refused with plan/engines/vllm/releases/model_type_verdicts.py's
reason.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from cli_refusals import refusal_line
from kvledger.cli.main import main
from kvledger.derive import Role, derive_model
from kvledger.derive.model_types import MODEL_TYPES
from kvledger.plan.engines.vllm import plan_vllm
from kvledger.plan.request import PlanRequest

DEFAULTS = Path(__file__).resolve().parents[1] / "data" / "class-default-configs"
GIB16 = 16 << 30  # 17,179,869,184 B
PLANNED = ("bagel", "kimi_vl", "openvla", "step3_text.moe-layers-string",
           "step3_vl.text-architectures", "step3p5.router-bias")
REFUSED_NEW = ("alpamayo2_super", "dory", "flint", "step5", "step5_vl")
# what vLLM 0.33's oracle said on the class defaults (tests/oracles/vllm-0.33/
# vllm-0.33-breadth.jsonl), in kvledger's refusal
ORACLE_STOPS = {
    "ultravox": "AttributeError: 'UltravoxConfig' object has no attribute 'vocab_size'",
    "funaudiochat": "TypeError: int() argument must be a string, a bytes-like object or a "
                    "real number, not 'NoneType'",
    "ovis": "ValidationError: 1 validation error for ModelConfig hidden_size",
}


def _config(name: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((DEFAULTS / f"{name}.json").read_text())
    return config


@pytest.mark.parametrize("name", (*PLANNED, *REFUSED_NEW, *ORACLE_STOPS, "midashenglm",
                                  "step3_text", "step3_vl", "step3_vl.moe-layers-string",
                                  "step3p5"))
def test_the_files_are_vllm_0_33_class_defaults(name: str) -> None:
    made = _config(name)["_generated_by"]
    assert made["vllm_config_class"].startswith("vllm 0.33.0 ")
    assert made["vllm_config_class"].endswith(" " + made["config_class"])
    assert made["transformers_version"].startswith("5.20.")
    assert made["set_beyond_the_class"] == ["architectures", "dtype"]
    assert _config(name)["model_type"] in MODEL_TYPES


def _blocks(name: str, length: int) -> tuple[int, int, int]:
    plan = plan_vllm(derive_model(_config(name)),
                     PlanRequest(engine="vllm==0.33", kv_cache_memory_bytes=GIB16,
                                 max_model_len=length, block_size=16), GIB16)
    return plan.block_size, plan.bytes_per_block, plan.num_blocks


def _refusal(name: str, engine: str) -> str:
    return refusal_line(str(DEFAULTS / f"{name}.json"), engine)


def test_step3_text_class_defaults_stop_vllm_on_moe_layers_enum() -> None:
    # vLLM's Step3TextConfig defaults moe_layers_enum to a tuple (a list in the file), and
    # step3_text.py calls moe_layers_enum.strip(): vLLM 0.33's oracle stopped with this error
    # (tests/oracles/vllm-0.33/vllm-0.33-breadth.jsonl); 0.32's source reads the same.
    assert isinstance(_config("step3_text")["moe_layers_enum"], list)
    for engine in ("vllm==0.33", "vllm==0.32"):
        said = _refusal("step3_text", engine)
        assert "AttributeError: 'list' object has no attribute 'strip'" in said


@pytest.mark.parametrize("name", ["step3_vl", "step3_vl.moe-layers-string"])
def test_step3_vl_without_text_architectures_stops_vllm(name: str) -> None:
    # step3_vl.py builds text_config's model with no architectures=, Step3TextConfig leaves
    # architectures None and transformers names no causal-LM class for step3_text: the 0.33
    # oracle stopped both files with this error (before the moe_layers_enum one).
    assert _config(name)["text_config"]["architectures"] is None
    for engine in ("vllm==0.33", "vllm==0.32"):
        assert "ValueError: No model architectures are specified" in _refusal(name, engine)


def test_step3_text_keeps_one_kv_head_of_256() -> None:
    config = _config("step3_text.moe-layers-string")
    assert config["moe_layers_enum"] == ",".join(str(i) for i in range(4, 60))
    assert (config["num_hidden_layers"], config["num_attention_groups"], config["head_dim"],
            config["num_attention_heads"]) == (61, 1, 256, 64)
    facts = derive_model(config)
    layers = facts.by_role(Role.DECODER)
    # step3_text.py: Step3TextAttention(num_kv_heads=1, head_dim=config.head_dim) on all 61
    # layers, no window; the 64 query heads do not reach the cache.
    assert len(layers) == 61
    assert {(x.k_heads, x.k_dim, getattr(x, "window", None)) for x in layers} == {(1, 256, None)}
    # 2 (K, V) x 1 head x 256 x 2 B = 1,024 B a layer a token; x 61 = 62,464 B a token;
    # x 16 = 999,424 B a block; 17,179,869,184 // 999,424 = 17,189 (17,189.8) blocks.
    assert _blocks("step3_text.moe-layers-string", 32768) == (16, 999_424, 17_189)
    # Its length is max_seq_len 65,536 (max_position_embedding, singular, is not a length key).
    assert facts.max_position_embeddings == 65536


def test_step3_vl_is_its_step3_text_model() -> None:
    text = _config("step3_vl.text-architectures")["text_config"]
    assert (text["model_type"], text["architectures"]) == ("step3_text",
                                                           ["Step3TextForCausalLM"])
    assert _blocks("step3_vl.text-architectures", 32768) == (16, 999_424, 17_189)


def test_step3p5_on_transformers_step3p7_text_defaults() -> None:
    config = _config("step3p5.router-bias")  # the defaults, use_moe_router_bias stated true
    # vLLM 0.33's _CONFIG_REGISTRY maps step3p5 to transformers' Step3p7TextConfig.
    assert "transformers (upstream" in config["_generated_by"]["vllm_config_class"]
    assert (config["num_hidden_layers"], config["num_key_value_heads"], config["head_dim"],
            config["sliding_window"]) == (45, 8, 128, None)
    assert set(config["layer_types"]) == {"full_attention"}
    # step3p5.py: num_kv_heads = num_attention_groups (-> num_key_value_heads, 8) x head_dim
    # 128 on all 45 layers, all full: 2 x 8 x 128 x 2 B = 4,096 B a layer a token; x 45 =
    # 184,320 B; x 16 = 2,949,120 B a block; 17,179,869,184 // 2,949,120 = 5,825 (5,825.4).
    assert _blocks("step3p5.router-bias", 32768) == (16, 2_949_120, 5_825)


def test_kimi_vl_is_deepseek_v2_mla() -> None:
    text = _config("kimi_vl")["text_config"]
    assert (text["model_type"], text["num_hidden_layers"], text["kv_lora_rank"],
            text["qk_rope_head_dim"]) == ("deepseek_v2", 32, 512, 64)
    # kimi_vl.py: DeepseekV2ForCausalLM on text_config, MLA: one latent of 512 + 64 a layer a
    # token, 576 x 2 B = 1,152 B; x 32 layers = 36,864 B a token; x 16 = 589,824 B a block;
    # 17,179,869,184 // 589,824 = 29,127 (29,127.1).
    assert _blocks("kimi_vl", 2048) == (16, 589_824, 29_127)


def test_openvla_is_its_llama_text_model() -> None:
    # (the 0.33 oracle could not build it: timm, which openvla.py imports, is not in its venv)
    name, text = "openvla", _config("openvla")["text_config"]
    assert (text["model_type"], text["num_hidden_layers"], text["num_key_value_heads"],
            text["head_dim"]) == ("llama", 32, 32, 128)
    # 2 x 32 heads x 128 x 2 B = 16,384 B a layer a token; x 32 = 524,288 B a token; x 16 =
    # 8,388,608 B a block; 16 GiB / that = 2,048 blocks exactly.
    assert _blocks(name, 2048) == (16, 8_388_608, 2_048)


@pytest.mark.parametrize(("name", "key"), [("bagel", "llm_config"),
                                           ("funaudiochat", "text_config")])
def test_qwen2_wrappers(name: str, key: str) -> None:
    # (funaudiochat's class defaults stop vLLM on its audio config, ORACLE_STOPS; its text
    # model is what a config stating the audio tokenizer's sizes gets)
    text = _config(name)[key]
    assert (text["model_type"], text["num_hidden_layers"], text["num_key_value_heads"],
            text["hidden_size"], text["num_attention_heads"], text.get("head_dim")) == (
        "qwen2", 32, 32, 4096, 32, None)
    # no head_dim: 4096 / 32 = 128 (qwen2.py; funaudiochat's Qwen3ForCausalLM takes the same
    # hidden_size // heads when head_dim is None); 2 x 32 x 128 x 2 B x 32 layers = 524,288 B
    # a token; x 16 = 8,388,608 B a block; 2,048 blocks.
    layers = derive_model(_config(name)).by_role(Role.DECODER)
    assert len(layers) == 32 and {(x.k_heads, x.k_dim) for x in layers} == {(32, 128)}
    if name == "bagel":  # the 0.33 oracle: 8 GiB, 1,024 blocks of 8,388,608 B
        assert _blocks(name, 8192) == (16, 8_388_608, 2_048)


def test_midashenglm_is_its_qwen2_5_omni_text_model() -> None:
    text = _config("midashenglm")["text_config"]
    assert (text["model_type"], text["num_hidden_layers"], text["num_key_value_heads"],
            text["hidden_size"], text["num_attention_heads"]) == (
        "qwen2_5_omni_text", 28, 4, 3584, 28)
    # 3,584 / 28 = 128; 2 x 4 x 128 x 2 B = 2,048 B a layer a token; x 28 = 57,344 B; x 16 =
    # 917,504 B a block; 17,179,869,184 // 917,504 = 18,724 (18,724.6), planned as it
    # derives (--engine native); vLLM is refused for want of a pipeline-parallel answer.
    layers = derive_model(_config("midashenglm")).by_role(Role.DECODER)
    assert len(layers) == 28 and {(x.k_heads, x.k_dim) for x in layers} == {(4, 128)}
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["plan", str(DEFAULTS / "midashenglm.json"), "--engine", "native",
                     "--kv-cache-memory-bytes", "16GiB", "--max-model-len", "32768",
                     "--block-size", "16", "--json"]) == 0
    assert json.loads(out.getvalue())["num_blocks"] == 18_724
    # vLLM 0.32's PP table has no answer (its oracle venv lacks torchaudio); 0.33's answers
    # True, so 0.33 plans it: 8 GiB // 917,504 B = 9,362 blocks (9,362.3), x 16 = 149,792
    # tokens, by hand: the 0.33 oracle cannot build it (its meta-device build stops in
    # midashenglm.py DashengFrontend.__init__, torchaudio's melscale_fbanks calling .item(); an
    # oracle gap, run_breadth_oracle.py ORACLE_GAPS), so no oracle case checks this one.
    assert "no pipeline-parallel answer for MiDashengLMModel" in _refusal("midashenglm",
                                                                          "vllm==0.32")
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["plan", str(DEFAULTS / "midashenglm.json"), "--engine", "vllm",
                     "--kv-cache-memory-bytes", "8GiB", "--max-model-len", "32768",
                     "--block-size", "16", "--json"]) == 0
    assert json.loads(out.getvalue())["num_blocks"] == 9_362


@pytest.mark.parametrize("model_type", PLANNED)
def test_planned_under_both_releases(model_type: str) -> None:
    path = str(DEFAULTS / f"{model_type}.json")
    for engine in ("vllm==0.33", "vllm==0.32"):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["plan", path, "--engine", engine, "--kv-cache-memory-bytes", "16GiB",
                         "--max-model-len", "2048", "--json"])
        assert code == 0, err.getvalue()
        assert json.loads(out.getvalue())["num_blocks"] > 0


@pytest.mark.parametrize("model_type", sorted(ORACLE_STOPS))
def test_refused_with_vllms_error_on_the_class_defaults(model_type: str) -> None:
    for engine in ("vllm==0.33", "vllm==0.32"):
        assert ORACLE_STOPS[model_type] in _refusal(model_type, engine).replace("\\n", " ")


def test_step3p5_class_defaults_stop_vllm_0_33_only() -> None:
    # 0.33 loads step3p5 with transformers' Step3p7TextConfig, which has no
    # use_moe_router_bias, and step3p5.py reads it on every MoE layer (the 0.33 oracle's
    # error); 0.32 loaded it with its own Step3p5Config, which defaults it to True.
    said = _refusal("step3p5", "vllm==0.33")
    assert "AttributeError: 'Step3p7TextConfig' object has no attribute " \
           "'use_moe_router_bias'" in said and "vLLM 0.33" in said
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["plan", str(DEFAULTS / "step3p5.json"), "--engine", "vllm==0.32",
                     "--kv-cache-memory-bytes", "16GiB", "--max-model-len", "32768",
                     "--json"]) == 0
    assert json.loads(out.getvalue())["num_blocks"] == 5_825  # as step3p5.router-bias


@pytest.mark.parametrize("model_type", REFUSED_NEW)
def test_new_in_the_registry_refused_for_want_of_a_pp_verdict(model_type: str) -> None:
    for engine, release in (("vllm==0.33", "vLLM 0.33"), ("vllm==0.32", "vLLM 0.32")):
        said = _refusal(model_type, engine)
        assert "holds no verdict for it" in said and release in said
