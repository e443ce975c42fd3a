"""``--json-model-override-args`` that sets only RoPE keys, with the derived context length
unchanged (SGLang 0.5.23 ``get_context_length``: the factor is ignored when the scaling names
``original_max_position_embeddings``), plans the model's own pool (engine="sglang==0.5.23");
any other override stays refused by name."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.cli.main import main

LINE = ("python", "-m", "sglang.launch_server", "--model", "Qwen/Qwen3-Next-80B-A3B-Thinking",
        "--tp", "8", "--context-length", "262144")
YARN = ('{"rope_scaling":{"rope_type":"yarn","factor":4.0,'
        '"original_max_position_embeddings":262144}}')


def run(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    code = main(["plan", "--gpu", "H200", "--offline", "--json", "--", *LINE, *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_yarn_with_original_length_plans_the_same_pool(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys)
    assert code == 0, err
    plain: dict[str, Any] = json.loads(out)
    code, out, err = run(capsys, "--json-model-override-args", YARN)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    assert data["kv_cache_tokens"] == plain["kv_cache_tokens"]
    assert any("rope_scaling" in n for n in data["serve_line"]["notes"])


@pytest.mark.parametrize("override", [
    # factor × max_position_embeddings: the derived context length changes.
    '{"rope_scaling":{"rope_type":"yarn","factor":4.0}}',
    '{"num_hidden_layers": 24}',
    '{"rope_theta": 1000000, "num_key_value_heads": 4}',
])
def test_other_overrides_stay_refused(capsys: pytest.CaptureFixture[str], override: str) -> None:
    code, _, err = run(capsys, "--json-model-override-args", override)
    assert code == 2
    assert "--json-model-override-args" in err
