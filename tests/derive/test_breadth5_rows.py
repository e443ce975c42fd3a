"""Breadth round 5: the five architectures of vLLM 0.33's registry that transformers 5.20 (the
release vLLM 0.33 pins) gives a config class and 5.19 did not. Every config here is a
CLASS-DEFAULT config (tests/data/class-default-configs/, written by
``scripts/class_default_configs.py --python <0.33 oracle venv> --transformers 5.20``), not a
real checkpoint file. Expected numbers are worked by hand from the values in the file. The
types kvledger refuses are refused with the reason of
plan/engines/vllm/releases/model_type_verdicts.py.
"""

from __future__ import annotations

import io
import json
from collections import Counter
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
ROUND5 = ("beam", "kolibri1", "molmo2", "moss_transcribe_diarize", "muse_spark")


def _config(name: str) -> dict[str, Any]:
    config: dict[str, Any] = json.loads((DEFAULTS / f"{name}.json").read_text())
    return config


@pytest.mark.parametrize("model_type", ROUND5)
def test_the_files_are_transformers_5_20_class_defaults(model_type: str) -> None:
    made = _config(model_type)["_generated_by"]
    assert made["transformers_version"].startswith("5.20.")
    assert made["set_beyond_the_class"] == ["architectures", "dtype"]
    assert model_type in MODEL_TYPES


def test_moss_transcribe_diarize_is_its_qwen3_text_model() -> None:
    config = _config("moss_transcribe_diarize")
    text = config["text_config"]
    assert text["model_type"] == "qwen3"
    assert (text["num_hidden_layers"], text["num_key_value_heads"], text["head_dim"]) == (
        28, 8, 128)
    facts = derive_model(config)
    layers = facts.by_role(Role.DECODER)
    # moss_transcribe_diarize.py: Qwen3ForCausalLM on text_config, full attention on all 28
    # layers, no window (use_sliding_window false); the audio encoder keeps no cache.
    assert len(layers) == 28 and len(facts.layers) == 28
    assert {(x.k_heads, x.k_dim, getattr(x, "window", None)) for x in layers} == {(8, 128, None)}
    # 2 (K, V) x 8 heads x 128 x 2 B (bfloat16) = 4,096 B a layer a token; x 28 = 114,688 B
    # a token; x 16 tokens = 1,835,008 B a block; 16 GiB // that = 9,362 (9,362.3) blocks
    # = 149,792 tokens; at 32,768 a request: 149,792 / 32,768 = 4.57... requests.
    plan = plan_vllm(facts, PlanRequest(engine="vllm==0.33", kv_cache_memory_bytes=GIB16,
                                        max_model_len=32768, block_size=16), GIB16)
    assert (plan.block_size, plan.bytes_per_block, plan.num_blocks) == (16, 1_835_008, 9_362)
    assert plan.kv_cache_tokens == 149_792
    assert plan.max_concurrency == pytest.approx(149_792 / 32_768)


def test_moss_transcribe_diarize_plans_under_both_releases() -> None:
    path = str(DEFAULTS / "moss_transcribe_diarize.json")
    for engine in ("vllm==0.33", "vllm==0.32"):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["plan", path, "--engine", engine, "--kv-cache-memory-bytes", "16GiB",
                         "--max-model-len", "32768", "--json"])
        assert code == 0, err.getvalue()
        assert json.loads(out.getvalue())["num_blocks"] == 9_362


REFUSED = [
    ("molmo2", "no attribute 'vit_config'"),
    ("muse_spark", "no attribute 'num_shared_experts'"),
]

# (type, layers sliding, full, KV heads, window, blocks, tokens) at 8 GiB, 4,096 tokens a
# request, bf16, blocks of 16. vLLM groups the layers by spec in groups of the smaller count
# (the full layers), and a block holds one page of each layer of a group.
# - beam: 52 layers, layer_types: every 6th full and the last (9 full, 43 sliding over 512),
#   8 KV x head_dim 128. A group-block: 9 x 16 x 2 x 8 x 128 x 2 B = 589,824 B;
#   8,589,934,592 // 589,824 = 14,563 (14,563.6). A request: 4,096 / 16 = 256 full blocks, and
#   5 sliding groups (43 / 9 rounded up) x (cdiv(min(511 + 8,192, 4,096), 16) + 1 = 257):
#   1,541 blocks; 14,563 / 1,541 x 4,096 = 38,708.6 -> 38,708 tokens.
# - kolibri1: 50 layers, layer_types: (i + 1) % 5 == 0 full (10 full, 40 sliding over 513),
#   4 KV x 128. A group-block: 10 x 16 x 2 x 4 x 128 x 2 = 327,680 B; // = 26,214 (26,214.4).
#   A request: 256 + 4 x 257 = 1,284 blocks; 26,214 / 1,284 x 4,096 = 83,623.3 -> 83,623.
# The same numbers as vLLM 0.33's own (tests/oracles/vllm-0.33/vllm-0.33-new-behaviour.jsonl).
SERVED_BY_033 = [
    ("beam", 43, 9, 8, 512, 14_563, 38_708),
    ("kolibri1", 40, 10, 4, 513, 26_214, 83_623),
]


@pytest.mark.parametrize(("model_type", "sliding", "full", "kv", "window", "blocks", "tokens"),
                         SERVED_BY_033, ids=[r[0] for r in SERVED_BY_033])
def test_served_by_the_newest_release_only(model_type: str, sliding: int, full: int, kv: int,
                                           window: int, blocks: int, tokens: int) -> None:
    path = str(DEFAULTS / f"{model_type}.json")
    facts = derive_model(path)
    kinds = Counter((getattr(x, "window", None), x.k_heads, x.k_dim)  # type: ignore[attr-defined]
                    for x in facts.layers)
    assert kinds == {(window, kv, 128): sliding, (None, kv, 128): full}
    plan = plan_vllm(facts, PlanRequest(engine="vllm==0.33", kv_cache_memory_bytes=8 << 30,
                                        max_model_len=4096), 8 << 30)
    assert (plan.block_size, plan.num_blocks, plan.kv_cache_tokens) == (16, blocks, tokens)
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):  # the release before does not serve it
        code = main(["plan", path, "--engine", "vllm==0.32", "--kv-cache-memory-bytes", "8GiB"])
    assert code == 2 and out.getvalue() == "" and len(err.getvalue().splitlines()) == 1
    assert f"does not serve model_type '{model_type}'" in err.getvalue()
    assert "Transformers does not recognize this architecture" in err.getvalue()


@pytest.mark.parametrize(("model_type", "words"), REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_with_the_reason(model_type: str, words: str) -> None:
    path = str(DEFAULTS / f"{model_type}.json")
    for engine, release in (("vllm==0.33", "vLLM 0.33"), ("vllm==0.32", "vLLM 0.32")):
        line = refusal_line(path, engine)
        assert words in line and release in line


def test_beam_without_layer_types_slides_everywhere() -> None:
    # vLLM loads beam with its own BeamConfig (transformers_utils/configs/beam.py): no
    # layer_types -> ["sliding_attention"] * num_hidden_layers, sliding_window 4096 by default
    # (transformers' class, which wrote the file, differs: it states both).
    config = {k: v for k, v in _config("beam").items()
              if k not in ("layer_types", "sliding_window")}
    facts = derive_model(config)
    assert {(getattr(x, "window", None), x.k_heads) for x in facts.layers  # type: ignore[attr-defined]
            } == {(4096, 8)}
    assert len(facts.layers) == config["num_hidden_layers"] == 52
