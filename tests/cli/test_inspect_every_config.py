"""`kvledger inspect` over every real config in ../shared/configs: each derives, or is refused
with the exact reason vLLM 0.32 itself cannot serve it (listed here, with vLLM's own words).

The vLLM errors quoted below are what the oracle (../shared/oracles/tool/vllm_oracle.py) printed
for these files — tests/oracles/README.md has the commands.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from derive.coverage import check_inspect
from oracle_cases import CONFIGS, SHARED_MISSING

# config → what the one-line refusal must say (vLLM's own error, quoted in the reason).
VLLM_CANNOT_SERVE = {
    # transformers 5.19 has no config class for model_type "mimo" and the file has no auto_map.
    "XiaomiMiMo--MiMo-7B-Base.json":
        "model type `mimo` but Transformers does not recognize this architecture",
    # sgl-project's V4 re-upload states model_type "deepseek_ref", unknown to transformers 5.19
    # and to vLLM's config registry.
    "sgl-project--DeepSeek-V4-Flash-FP8.json":
        "model type `deepseek_ref` but Transformers does not recognize this architecture",
    "sgl-project--DeepSeek-V4-Pro-FP8.json":
        "model type `deepseek_ref` but Transformers does not recognize this architecture",
    # vLLM 0.32's registry has Step3p7ForConditionalGeneration, not this architecture.
    "stepfun-ai--Step-3.7-Flash.json":
        "Model architectures ['Step3p7FlashForCausalLM'] are not supported for now",
    "stepfun-ai--Step-3.7-Flash-FP8.json":
        "Model architectures ['Step3p7FlashForCausalLM'] are not supported for now",
}

def _listed() -> list[Path]:
    """The configs ../shared/configs/SOURCES.md lists (the coverage groups' files, listed in
    their own SOURCES-*.md, are walked by their own tests with their own refusal lists)."""
    sources = CONFIGS / "SOURCES.md"
    if not sources.is_file():
        return []
    names = re.findall(r"^\| `([^`]+\.json)`", sources.read_text(), re.M)
    return sorted(CONFIGS / n for n in set(names) if not n.endswith(".hf_quant_config.json"))


FILES = _listed()
pytestmark = pytest.mark.skipif(not FILES, reason=SHARED_MISSING)


def test_the_shared_configs_are_all_here() -> None:
    # SOURCES.md lists 110 files: 88 configs + 22 hf_quant_config companions. A new file must
    # be classified.
    assert len(FILES) == 88
    assert all(p.is_file() for p in FILES)
    for name in VLLM_CANNOT_SERVE:
        assert (CONFIGS / name).is_file(), name


@pytest.mark.parametrize("path", FILES, ids=[p.name.removesuffix(".json") for p in FILES])
def test_inspect_derives_or_refuses_with_vllms_reason(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    check_inspect(path, VLLM_CANNOT_SERVE.get(path.name), capsys)
