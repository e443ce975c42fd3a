"""A config file path brings its hf_quant_config.json companion, as a model directory does.

Without it a ModelOpt checkpoint silently loses its KV scheme: nvidia/Llama-3.1-70B-Instruct-FP8
states ``kv_cache_quant_algo: FP8`` only in its companion, and vLLM 0.32 then stores fp8
(oracle: coverage-cases.jsonl, hf_quant_config true: 6,553 blocks of 16 at 16 GiB). The
expected numbers below are that case's, or read off the files by hand.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kvledger.cli.main import main
from kvledger.derive import derive_model
from kvledger.source import load_source
from oracle_cases import CONFIGS, SHARED_MISSING
from release_pin import as_release

NAME = "nvidia--Llama-3.1-70B-Instruct-FP8"
# Its companion, by hand: producer modelopt, quantization.kv_cache_quant_algo "FP8".
COMPANION_KV = "FP8"


def _copy(tmp_path: Path, *, config_as: str, companion_as: str | None) -> Path:
    src = CONFIGS / f"{NAME}.json"
    if not src.is_file():
        pytest.skip(SHARED_MISSING)
    shutil.copyfile(src, tmp_path / config_as)
    if companion_as is not None:
        shutil.copyfile(CONFIGS / f"{NAME}.hf_quant_config.json", tmp_path / companion_as)
    return tmp_path / config_as


def test_stem_companion_is_picked_up(tmp_path: Path) -> None:
    path = _copy(tmp_path, config_as=f"{NAME}.json",
                 companion_as=f"{NAME}.hf_quant_config.json")
    source = load_source(str(path))
    assert source.hf_quant_config is not None
    assert source.hf_quant_config["quantization"]["kv_cache_quant_algo"] == COMPANION_KV
    assert f"{NAME}.hf_quant_config.json found beside {NAME}.json" in source.notes
    facts = derive_model(str(path))
    assert (facts.kv_dtype, facts.kv_dtype_source) == ("fp8_e4m3", "hf_quant_config")


def test_config_json_takes_the_folders_hf_quant_config(tmp_path: Path) -> None:
    path = _copy(tmp_path, config_as="config.json", companion_as="hf_quant_config.json")
    assert derive_model(str(path)).kv_dtype == "fp8_e4m3"


def test_a_named_config_ignores_the_folders_hf_quant_config(tmp_path: Path) -> None:
    # Beside org--name.json, a folder-wide hf_quant_config.json may belong to another model.
    path = _copy(tmp_path, config_as=f"{NAME}.json", companion_as="hf_quant_config.json")
    assert load_source(str(path)).hf_quant_config is None
    assert derive_model(str(path)).kv_dtype == "bfloat16"  # config.json's torch_dtype


def test_no_companion_no_quant(tmp_path: Path) -> None:
    path = _copy(tmp_path, config_as=f"{NAME}.json", companion_as=None)
    source = load_source(str(path))
    assert source.hf_quant_config is None and source.notes == ()


def test_a_companion_is_never_a_companions_config(tmp_path: Path) -> None:
    _copy(tmp_path, config_as=f"{NAME}.json", companion_as=f"{NAME}.hf_quant_config.json")
    # Planning the companion file itself reads it as a config (no model_type: refused), and
    # looks for no "...hf_quant_config.hf_quant_config.json".
    from kvledger.source.resolve import companion_of

    assert companion_of(tmp_path / f"{NAME}.hf_quant_config.json") is None


@pytest.mark.parametrize("layout", ["file", "directory"])
def test_an_explicit_hf_quant_config_wins(tmp_path: Path, layout: str) -> None:
    path = _copy(tmp_path, config_as="config.json", companion_as="hf_quant_config.json")
    model = str(path) if layout == "file" else str(tmp_path)
    given: dict[str, Any] = {"producer": {"name": "modelopt"},
                             "quantization": {"quant_algo": "FP8"}}  # no KV scheme
    facts = derive_model(model, hf_quant_config=given)
    assert facts.kv_dtype == "bfloat16"


def test_cli_plan_of_a_bare_config_path_matches_vllm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # coverage-cases.jsonl, nvidia--Llama-3.1-70B-Instruct-FP8 with hf_quant_config: 16 GiB,
    # max_model_len 32768, block auto → 6,553 blocks, 104,848 tokens, cache fp8_e4m3.
    path = _copy(tmp_path, config_as=f"{NAME}.json",
                 companion_as=f"{NAME}.hf_quant_config.json")
    code = main(as_release(["plan", str(path), "--kv-cache-memory-bytes", str(16 << 30),
                            "--max-model-len", "32768", "--json"]))
    out, err = capsys.readouterr()
    assert code == 0, err
    got = json.loads(out)
    assert (got["num_blocks"], got["kv_cache_tokens"], got["block_size"]) == (6553, 104848, 16)
    assert got["kv_cache_dtype"] == "fp8_e4m3"


def test_cli_shows_vllms_reason_for_nvfp4_on_mla(capsys: pytest.CaptureFixture[str]) -> None:
    # tests/oracles/vllm-0.32/vllm-0.32-refusals.jsonl: DeepSeek-V2-Lite with a ModelOpt NVFP4 KV
    # companion; vLLM refuses with "nvfp4 KV cache is not supported with MLA ...". The bare
    # config path brings the companion, and the user sees vLLM's reason, not derive's.
    path = CONFIGS / "deepseek-ai--DeepSeek-V2-Lite.NVFP4KV-HFQ.MODIFIED.json"
    code = main(["plan", str(path), "--kv-cache-memory-bytes", str(16 << 30)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "nvfp4 KV cache is not supported with MLA" in err
    assert "\n" not in err.strip()
