"""A pasted ``vllm serve`` line with a DFlash draft (``--speculative-config '{"method":
"dflash", "model": DIR, …}'``): a local directory becomes ``--draft-config DIR/config.json``
and vLLM 0.34 plans the draft's layers in the target's pool (plan/engines/vllm/
parallel_draft.py); a Hub id is read as a model id is, so offline and uncached it is one
line, exit 2, naming --draft-config (tests/source/test_hub_draft.py reads one from the
loopback Hub).

Hand-worked (the draft of tests/plan/engines/vllm/test_parallel_draft_plan.py, written here):
Qwen/Qwen3-8B 36 x 4,096 B + 2 draft layers x 4,096 B = 155,648 B a token; a 64-token block
9,961,472 B; --kv-cache-memory-bytes 10 GiB -> 1,077 blocks, 68,928 tokens.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvledger.cli.main import main

DRAFT = {
    "architectures": ["DFlashDraftModel"], "model_type": "qwen3", "hidden_size": 1024,
    "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8, "head_dim": 128,
    "intermediate_size": 2048, "vocab_size": 151936, "max_position_embeddings": 40960,
    "dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 17]},
}


def _line(model: str) -> list[str]:
    spec = {"method": "dflash", "model": model, "num_speculative_tokens": 15}
    return ["vllm", "serve", "Qwen/Qwen3-8B", "--kv-cache-memory-bytes", str(10 << 30),
            "--speculative-config", json.dumps(spec)]


def test_local_dflash_draft_is_planned(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "config.json").write_text(json.dumps(DRAFT))
    code = main(["plan", "--engine", "vllm==0.34", "--json", "--", *_line(str(tmp_path))])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    assert (result["block_size"], result["num_blocks"], result["kv_cache_tokens"]) == (
        64, 1077, 68928)


def test_hub_dflash_draft_names_draft_config(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["plan", "--engine", "vllm==0.34", "--", *_line("z-lab/Qwen3-8B-DFlash-b16")])
    err = capsys.readouterr().err
    assert code == 2 and "--draft-config" in err and err.strip().count("\n") == 0


def test_hub_draft_with_draft_config_before_the_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "draft.json"
    path.write_text(json.dumps(DRAFT))
    code = main(["plan", "--engine", "vllm==0.34", "--json", "--draft-config", str(path), "--",
                 *_line("z-lab/Qwen3-8B-DFlash-b16")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["num_blocks"] == 1077
