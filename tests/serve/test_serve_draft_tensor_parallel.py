"""``--speculative-config`` ``draft_tensor_parallel_size`` in a pasted ``vllm serve`` line
(``cli/serve/vllm_map.py _draft_tensor_parallel``), as vLLM 0.34 reads it:

- ``config/speculative.py SpeculativeConfig._verify_and_get_draft_tp`` takes only 1 or the
  target's tensor-parallel size (the same check in 0.19, 0.32, 0.33);
- only the draft_model speculator (``standalone_ar/speculator.py load_draft_model``) and the
  DSpark draft (``dspark/utils.py``) build the draft with that parallel config; an EAGLE-3 draft
  is loaded with the target's VllmConfig (``eagle/utils.py load_eagle_model``), so the key
  leaves its KV sharded as the target's;
- a plain ``tensor_parallel_size`` key is ``_verify_args``'s ValueError.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.cli.serve.errors import ServeLineError
from kvledger.cli.serve.translate import translate
from kvledger.cli.serve.translation import Context, Translation
from oracle_cases import CONFIGS

CTX = Context(kv_cache_dtypes=("auto", "bfloat16", "fp8"))
TARGET = "meta-llama/Meta-Llama-3.1-8B"


def _t(spec: dict[str, Any], tp: int = 4) -> Translation:
    return translate(["vllm", "serve", TARGET, "--tensor-parallel-size", str(tp),
                      "--speculative-config", json.dumps(spec)], CTX)


def test_eagle3_draft_tp_1_keeps_the_targets_sharding() -> None:
    out = _t({"method": "eagle3", "model": "some-org/llama-eagle3", "num_speculative_tokens": 3,
              "draft_tensor_parallel_size": 1})
    assert not out.refused
    assert out.options["--speculative-method"] == "eagle3"
    assert any("draft_tensor_parallel_size 1" in n and "TP 4" in n for n in out.notes)


def test_draft_tp_equal_to_the_target_is_planned_without_a_note() -> None:
    out = _t({"method": "draft_model", "model": "some-org/small-draft",
              "num_speculative_tokens": 3, "draft_tensor_parallel_size": 4})
    assert not out.refused
    assert not any("draft_tensor_parallel_size" in n for n in out.notes)


@pytest.mark.parametrize("method", ["draft_model", "dspark"])
def test_an_unsharded_own_parallel_draft_is_refused_by_name(method: str) -> None:
    with pytest.raises(ServeLineError, match=f"method {method}: .*unsharded"):
        _t({"method": method, "model": "some-org/small-draft", "num_speculative_tokens": 3,
            "draft_tensor_parallel_size": 1})


def test_a_draft_tp_other_than_1_or_the_targets_is_vllms_refusal() -> None:
    with pytest.raises(ServeLineError, match=r"cannot be other value than 1.*use 1 or 4"):
        _t({"method": "eagle3", "model": "some-org/llama-eagle3", "num_speculative_tokens": 3,
            "draft_tensor_parallel_size": 2})


def test_plain_tensor_parallel_key_is_refused_as_vllm_does() -> None:
    with pytest.raises(ServeLineError, match="draft_tensor_parallel_size"):
        _t({"method": "eagle3", "model": "some-org/llama-eagle3", "num_speculative_tokens": 3,
            "tensor_parallel_size": 1})


def test_pasted_line_plans_with_draft_tp_1(capsys: pytest.CaptureFixture[str]) -> None:
    # Before this rule the key was refused as "sizes the draft's own KV"; now the line plans
    # and the plan's KV is the target's at TP 4 (the EAGLE-3 draft's own layers are a separate
    # warning, as without the key). The draft's config is given before '--'.
    draft = CONFIGS / "sgl-project--SpecForge-llama3-8B-eagle3.json"
    if not draft.is_file():
        pytest.skip("the EAGLE-3 draft's config is in ../shared/configs")
    spec = {"method": "eagle3", "model": "some-org/llama-eagle3", "num_speculative_tokens": 3,
            "draft_tensor_parallel_size": 1}
    code = main(["plan", "--gpu", "H100", "--json", "--draft-config", str(draft), "--",
                 "vllm", "serve", TARGET,
                 "--tensor-parallel-size", "4", "--max-model-len", "8192",
                 "--speculative-config", json.dumps(spec)])
    out = capsys.readouterr().out
    assert code == 0
    data = json.loads(out)
    assert data["tensor_parallel_size"] == 4
