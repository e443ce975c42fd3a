"""``--speculative-config '{"model": DIR, …}'`` in a pasted ``vllm serve`` line: a separate draft
model in a local directory is read as ``--draft-config DIR/config.json``
(``cli/serve/vllm_map.py _draft_model``), so vLLM 0.33's Model Runner V2 limit — a shorter
draft lowers ``max_model_len`` (``config/vllm.py VllmConfig._limit_max_model_len_to_draft``,
``plan/engines/vllm/draft_length.py``) — applies to pasted lines as to typed ones.

Hand-worked numbers (as tests/plan/test_draft_length.py): target Llama-3.1-8B, 32 layers x 8
KV heads x 128 x 2 (K, V) x 2 B = 131,072 B a token, a 16-token block 2,097,152 B; 10 GiB /
2,097,152 = 5,120 blocks. Draft: SpecForge's EAGLE3 draft for it, max_position_embeddings
2,048, RoPE "default".
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.cli.serve.errors import ServeLineError
from kvledger.cli.serve.translate import translate
from kvledger.cli.serve.translation import Context, Translation
from oracle_cases import CONFIGS

LLAMA = "meta-llama/Meta-Llama-3.1-8B"
DRAFT = CONFIGS / "sgl-project--SpecForge-llama3-8B-eagle3.json"
CTX = Context(kv_cache_dtypes=("auto", "bfloat16", "fp8"))


def _line(spec: dict[str, Any]) -> list[str]:
    return ["vllm", "serve", LLAMA, "--max-model-len", "32768", "--kv-cache-memory-bytes",
            str(10 << 30), "--speculative-config", json.dumps(spec)]


def _t(spec: dict[str, Any]) -> Translation:
    return translate(_line(spec), CTX)


@pytest.fixture
def draft_dir(tmp_path: Path) -> Path:
    if not DRAFT.is_file():
        pytest.skip("the draft config is in ../shared/configs")
    where = tmp_path / "eagle3-draft"
    where.mkdir()
    shutil.copyfile(DRAFT, where / "config.json")
    return where


def test_local_draft_directory_becomes_draft_config(draft_dir: Path) -> None:
    out = _t({"method": "draft_model", "model": str(draft_dir), "num_speculative_tokens": 3})
    assert out.options["--draft-config"] == str(draft_dir / "config.json")
    assert out.options["--speculative-method"] == "draft_model"


def test_pasted_line_gets_model_runner_v2s_draft_limit(
        draft_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = {"method": "draft_model", "model": str(draft_dir), "num_speculative_tokens": 3}
    code = main(["plan", "--json", "--engine", "vllm==0.33", "--", *_line(spec)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    data = json.loads(captured.out)
    # 2,048 tokens = 128 blocks a request; 5,120 / 128 = 40.0x; 40 x 2,048 = 81,920 tokens.
    assert (data["max_model_len"], data["num_blocks"], data["kv_cache_tokens"]) == (
        2048, 5120, 81920)


def test_eagle3_draft_with_default_rope_keeps_the_length(
        draft_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # eagle3 with RoPE "default" shares the target's positions: no limit (32,768 tokens =
    # 2,048 blocks a request, 5,120 / 2,048 = 2.5x).
    spec = {"method": "eagle3", "model": str(draft_dir), "num_speculative_tokens": 3}
    code = main(["plan", "--json", "--", *_line(spec)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert json.loads(captured.out)["max_model_len"] == 32768


def test_unreadable_hub_eagle3_draft_is_a_note() -> None:
    # Offline (the suite sets HF_HUB_OFFLINE) and not cached: an EAGLE-3 draft's config only
    # caps max_model_len, so the line plans with a note; tests/source/test_hub_draft.py reads
    # one from the loopback Hub, and a DFlash / DSpark draft's read is required.
    out = _t({"method": "eagle3", "model": "org/no-such-local-draft",
              "num_speculative_tokens": 3})
    assert "--draft-config" not in out.options
    assert any("neither in the local HF cache nor read from the Hub" in n for n in out.notes)
    out = _t({"method": "dflash", "model": "org/no-such-local-draft",
              "num_speculative_tokens": 3})
    assert out.options["--draft-config"] == "org/no-such-local-draft"


def test_neither_a_directory_nor_a_hub_id_is_refused() -> None:
    with pytest.raises(ServeLineError, match="neither a local directory nor a hub id"):
        _t({"method": "eagle3", "model": "./no/such/dir", "num_speculative_tokens": 3})


def test_mtp_model_is_not_a_draft_config(tmp_path: Path) -> None:
    # MTP drafts with the target's own layers: no separate draft config to read.
    out = _t({"method": "mtp", "model": str(tmp_path), "num_speculative_tokens": 1})
    assert "--draft-config" not in out.options


def test_directory_without_config_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ServeLineError, match=r"has no config\.json"):
        _t({"method": "draft_model", "model": str(tmp_path), "num_speculative_tokens": 3})


def test_draft_file_instead_of_directory_is_refused(draft_dir: Path) -> None:
    with pytest.raises(ServeLineError, match="not a directory"):
        _t({"method": "draft_model", "model": str(draft_dir / "config.json"),
            "num_speculative_tokens": 3})


def test_bad_draft_config_through_the_line_is_one_line_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "config.json").write_text("{not json")
    spec = {"method": "draft_model", "model": str(tmp_path), "num_speculative_tokens": 3}
    code = main(["plan", "--", *_line(spec)])
    err = capsys.readouterr().err
    assert code == 2 and "--draft-config" in err and "Traceback" not in err
