"""``explain`` plans the kernels of the GPU family a log's attention backend names.

A log often prints only the device's CUDA total ("Free memory on device (F/T GiB)"), not its
name; kvledger then assumes SM90's kernels. But vLLM prints the backend it chose
(``platforms/cuda.py get_attn_backend_cls``: "Using %s attention backend out of potential
backends: %s."), and some backends run on one compute-capability major only
(``supports_compute_capability``: FLASHINFER_MLA_SPARSE ``major == 10``). The log below is
written here in vLLM 0.26.0's wording for a deployment made up for the test: GLM-5.2-NVFP4 at
TP 4, fp8 KV, max_model_len 819,200, on an SM100 device with a CUDA total of 184.00 GiB.

By hand (vLLM 0.26; the rows in ``tests/plan/test_sparse_mla_backends.py``):

- SM100 picks FLASHINFER_MLA_SPARSE for an fp8 cache, which stores one-byte rows: 78 MLA
  layers × 576 B + 21 indexer layers × 132 B = 47,700 B a token, 3,052,800 B a 64-token block;
- 40.00 GiB (39.995–40.005 GiB) / 3,052,800 B = 14,067–14,070 blocks; the log says 14,068
  blocks = 900,352 tokens (a request of 819,200 tokens takes 12,800 blocks: 1.10x);
- on SM90 FLASHMLA_SPARSE packs fp8 as 656-byte rows: 53,940 B a token, 3,452,160 B a block,
  about 12,441 blocks (796,224 tokens): the SM90 assumption would not match the log.
"""

from __future__ import annotations

import pytest

from kvledger.report.explain import explain_log
from oracle_cases import CONFIGS

GLM = CONFIGS / "nvidia--GLM-5.2-NVFP4.json"

CONFIG = (
    "(EngineCore pid=7) INFO 03-04 05:06:07 [core.py:116] Initializing a V1 LLM engine "
    "(v0.26.0) with config: model='/models/GLM-5.2-NVFP4', dtype=torch.bfloat16, "
    "max_seq_len=819200, tensor_parallel_size=4, pipeline_parallel_size=1, "
    "data_parallel_size=1, quantization=modelopt_fp4, kv_cache_dtype=fp8_e4m3, "
    "enable_prefix_caching=True\n"
)
BACKEND = (
    "(Worker_TP0 pid=8) INFO 03-04 05:07:00 [cuda.py:482] Using FLASHINFER_MLA_SPARSE "
    "attention backend out of potential backends: ['FLASHINFER_MLA_SPARSE'].\n"
)
MEMORY = (
    "(Worker_TP0 pid=8) INFO 03-04 05:30:00 [gpu_worker.py:560] Available KV cache memory: "
    "40.0 GiB\n"
    "(EngineCore pid=7) INFO 03-04 05:30:01 [kv_cache_utils.py:2177] GPU KV cache size: "
    "900,352 tokens\n"
    "(EngineCore pid=7) INFO 03-04 05:30:01 [kv_cache_utils.py:2178] Maximum concurrency for "
    "819,200 tokens per request: 1.10x\n"
    "(Worker_TP0 pid=8) INFO 03-04 05:31:00 [gpu_worker.py:857] Free memory on device "
    "(182.0/184.0 GiB) on startup. Desired GPU memory utilization is (0.92, 169.28 GiB).\n"
)


def _tokens_match(text: str) -> bool | None:
    checks = {c.name: c for c in explain_log(text, model=str(GLM)).checks}
    return checks["kv_cache_tokens"].match


@pytest.fixture(autouse=True)
def _needs_config() -> None:
    if not GLM.is_file():
        pytest.skip("GLM-5.2-NVFP4's config is in ../shared/configs")


def test_the_backend_line_is_read() -> None:
    e = explain_log(CONFIG + BACKEND + MEMORY, model=str(GLM))
    assert e.figures["attention_backends"] == ["FLASHINFER_MLA_SPARSE"]
    assert any("compute capability 10.x" in n for n in e.notes)


def test_a_backend_of_one_family_plans_that_familys_rows() -> None:
    assert _tokens_match(CONFIG + BACKEND + MEMORY) is True
    # Without the backend line the SM90 kernels are assumed: 656-byte rows, fewer tokens.
    assert _tokens_match(CONFIG + MEMORY) is False


def test_a_named_gpu_wins_over_the_backend() -> None:
    # --gpu H200 (SM90) is the user's word: the backend line does not override it.
    checks = {c.name: c for c in explain_log(CONFIG + BACKEND + MEMORY, model=str(GLM),
                                             gpu="H200").checks}
    assert checks["kv_cache_tokens"].match is False
