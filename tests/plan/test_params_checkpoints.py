"""The weight estimate from config.json alone against real checkpoints' stored bytes.

Each pair in ``../shared/weights/`` (SOURCES.md: copied byte for byte from public repositories)
holds a checkpoint's ``model.safetensors.index.json``, whose ``metadata.total_size`` is the
exact number of bytes its tensors hold, and its ``config.json``. The estimate counts the
parameters from the architecture (``derive/params/``) at the config's own dtype
(``estimate_weights(..., stored=True)``: a float32 checkpoint holds 4 bytes a parameter), MTP
layers and towers included, and must land within 1 % of that total for every checkpoint.

Measured when this test was written (error = estimate / total_size - 1; "before": the generic
decoder formula this replaced, at the same dtype):

| checkpoint                               | model_type  | total_size      | error     | before   |
|------------------------------------------|-------------|-----------------|-----------|----------|
| LHembree25--lex-gap-model-phi2           | phi         | 11,100,197,340  | 0         | +30.19 % |
| SakuraLLM--Sakura-14B-Qwen2.5-v1.0       | qwen2       | 29,540,067,328  | 0         | -0.01 %  |
| TinyLlama--TinyLlama-1.1B                | llama       | 2,200,096,768   | 0         | -0.01 %  |
| YinghaoHu--LegalHalBench-GLM4-9B         | chatglm     | 18,799,902,784  | -64 B     | +27.44 % |
| allenai--OLMo-2-1124-13B                 | olmo2       | 54,864,793,600  | 0         | -0.01 %  |
| allenai--olmOCR-7B-0225-preview          | qwen2_vl    | 16,582,751,232  | 0         | -8.15 %  |
| alpindale--WizardLM-2-8x22B              | mixtral     | 281,241,268,224 | 0         | -0.00 %  |
| gghfez--gemma-3-4b-novision              | gemma3_text | 7,760,526,336   | 0         | +17.29 % |
| google--gemma-4-31B-it                   | gemma4      | 62,546,177,752  | -4,608 B  | -3.61 %  |
| microsoft--Phi-tiny-MoE-instruct         | phimoe      | 7,510,440,576   | 0         | -0.02 %  |
| nvidia--OpenMath-CodeLlama-13b-Python-hf | llama       | 26,031,728,640  | 0         | -0.00 %  |
| semcoder--semcoder_s                     | llama       | 13,481,025,536  | 0         | -0.00 %  |

(gemma-4-31B before: its full-attention layers' own head sizes and shared K = V, its tied
head and its vision tower were not modelled; olmOCR before: no vision tower.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvledger.derive.config import Config
from kvledger.derive.kvdtype import model_dtype
from kvledger.plan.weights import estimate_weights

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "weights"
STEMS = sorted(p.name[: -len(".config.json")] for p in SHARED.glob("*.config.json")) \
    if SHARED.is_dir() else []


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} is absent: the real checkpoints "
                    "(config.json + index.json pairs) live outside the repository")
def test_the_shared_checkpoints_are_all_there() -> None:
    # The docstring's table has twelve rows; a missing pair must not pass unnoticed.
    assert len(STEMS) >= 12, STEMS


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"{SHARED} is absent: the real checkpoints "
                    "(config.json + index.json pairs) live outside the repository")
@pytest.mark.parametrize("stem", STEMS)
def test_estimate_from_config_alone_is_within_one_percent(stem: str) -> None:
    config = json.loads((SHARED / f"{stem}.config.json").read_text())
    index = json.loads((SHARED / f"{stem}.index.json").read_text())
    total = index["metadata"]["total_size"]
    assert isinstance(total, int) and total > 0
    dtype = model_dtype(Config(config, model=stem))
    est = estimate_weights(config, dtype, stored=True)
    error = est.bytes / total - 1
    assert abs(error) <= 0.01, (f"{stem}: estimated {est.bytes:,} B vs stored {total:,} B "
                                f"({error:+.3%}); {est.how}")
