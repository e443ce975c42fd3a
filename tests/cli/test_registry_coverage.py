"""docs/model-integrators.md's count of vLLM's generative architectures kvledger plans is the
committed coverage file's (tests/data/vllm-0.33-registry-coverage.json, written by
scripts/vllm_registry_coverage.py from vLLM's registry.py read as source), and every verdict
in that file is what kvledger's model-type table gives today: a row change that moves an
architecture between planned / refused / not covered fails here until the file and the page are
regenerated (``python scripts/vllm_registry_coverage.py --registry ... --transformers-auto ...
--write``)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The page the model-type list and the coverage count moved to from README.md.
PAGE = ROOT / "docs" / "model-integrators.md"
DATA = ROOT / "tests" / "data" / "vllm-0.33-registry-coverage.json"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "vllm_registry_coverage", ROOT / "scripts" / "vllm_registry_coverage.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _data() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DATA.read_text())
    return loaded


def test_readme_shows_the_files_count() -> None:
    readme = PAGE.read_text(encoding="utf-8")
    block = _script().readme_block(_data())
    assert block in readme, "docs/model-integrators.md's registry coverage is stale: regenerate it"


def test_the_file_lists_generative_architectures_only() -> None:
    lines = _data()["architectures"]
    names = [line["architecture"] for line in lines]
    assert len(names) == len(set(names)) > 200
    assert {line["registry"] for line in lines} <= {
        "_TEXT_GENERATION_MODELS", "_MULTIMODAL_MODELS", "_TRANSFORMERS_SUPPORTED_MODELS"}
    # A pooling head and a draft model are not generative serving targets.
    assert "BertModel" not in names and "EagleLlamaForCausalLM" not in names
    assert {"LlamaForCausalLM", "Glm4MoeLiteForCausalLM"} <= set(names)


@pytest.mark.parametrize("line", _data()["architectures"], ids=lambda x: x["architecture"])
def test_verdict_is_kvledgers_today(line: dict[str, Any]) -> None:
    got = _script().verdict(line["architecture"], line["model_types"],
                            line.get("config_format", "hf"))
    assert got == {k: line[k] for k in ("verdict", "model_type", "reason")}


def test_vllms_own_config_classes_are_a_source() -> None:
    # vLLM 0.33's _CONFIG_REGISTRY (transformers_utils/config.py) names step3_text, and the
    # class-default file made from vLLM's Step3TextConfig carries it too.
    by_arch = {line["architecture"]: line for line in _data()["architectures"]}
    assert by_arch["Step3TextForCausalLM"]["model_types"] == {
        "step3_text": ["vllm-config-class"]}
    assert "vllm-config-class" in by_arch["KimiVLForConditionalGeneration"]["model_types"][
        "kimi_vl"]


def test_an_architecture_no_source_names_says_why() -> None:
    script = _script()
    unnamed = [line for line in _data()["architectures"] if not line["model_types"]]
    assert unnamed and all(line["verdict"] == "not covered" for line in unnamed)
    assert {line["reason"] for line in unnamed} == {script.REMOTE_ONLY, script.MISTRAL_ONLY}
    # Pixtral's checkpoints are Mistral-format (params.json, configs/mistral.py).
    assert {line["architecture"] for line in unnamed if line["reason"] == script.MISTRAL_ONLY
            } == {"PixtralForConditionalGeneration", "MistralLarge3ForCausalLM",
                  "VoxtralRealtimeGeneration"}
    readme = PAGE.read_text(encoding="utf-8")
    assert "remote code only (" in readme and "Mistral format only (3" in readme
