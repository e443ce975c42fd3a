"""``explain`` reads SGLang 0.5.23's memory lines, one check per budget key
(``report/sglang_budget_checks.py``), on log texts written here in SGLang's own wording
(``model_executor/model_runner.py``: "Load weight begin/end. ... avail mem=%.2f GB, mem
usage=%.2f GB."; ``mem_cache/memory_pool.py``: "KV Cache is allocated. #tokens: N, K size:
X GB, V size: Y GB"; "Memory pool end. avail mem=%.2f GB"; SGLang's GB are GiB).

The numbers: Llama-3.1-8B on an H100-80GB (79.65 GiB) at mem_fraction_static 0.8; 0.53 GiB in
use before the weights (79.12 free); 14.99 GiB of weights; budget 64.10 − 79.12 × 0.2 =
48.276 GiB; 131,072 B per token (32 layers × 8 KV heads × 128 × 2 B × K and V) → 395,477
tokens, K = V = (395,477 + 1) × 65,536 B = 24.14 GiB; 15.71 GiB left after the pools.
"""

from __future__ import annotations

from kvledger.report.explain import explain_log

GIB = 1 << 30
LLAMA = "meta-llama/Meta-Llama-3.1-8B"
ARGS = ("server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B-Instruct', dtype='auto', "
        "kv_cache_dtype='auto', mem_fraction_static=0.8, max_running_requests=None, "
        "chunked_prefill_size=8192, page_size=1, tp_size=1, pp_size=1)")


def _log(before: str, after: str, pool_end: str) -> str:
    return "\n".join((
        f"[2026-11-02 09:14:03] {ARGS}",
        f"[2026-11-02 09:14:09 TP0] Load weight begin. avail mem={before} GB",
        "[2026-11-02 09:14:21 TP0] Load weight end. type=LlamaForCausalLM, "
        f"dtype=torch.bfloat16, avail mem={after} GB, mem usage=14.99 GB.",
        "[2026-11-02 09:14:21 TP0] KV Cache is allocated. #tokens: 395477, K size: 24.14 GB, "
        "V size: 24.14 GB",
        f"[2026-11-02 09:14:21 TP0] Memory pool end. avail mem={pool_end} GB",
    ))


def test_every_sglang_memory_line_beside_kvledgers() -> None:
    e = explain_log(_log("79.12", "64.10", "15.71"), model=LLAMA, gpu="H100-80GB")
    checks = {c.name: c for c in e.checks}
    # non_torch: 79.65 − 79.12 = 0.53 GiB logged; kvledger's 0.5 GiB estimate (± 0.25 GiB).
    assert checks["non_torch"].derived == GIB // 2 and checks["non_torch"].match is True
    # utilization: 79.12 × 0.8 = 63.296 GiB; kvledger's (79.65 − 0.5) × 0.8 = 63.32 GiB.
    assert abs(checks["utilization"].logged - int(79.12 * GIB * 0.8)) <= 1
    assert checks["utilization"].match is True
    assert checks["weights"].match is True  # 14.99 logged, 8.03B × 2 B = 14.96 estimated
    # kv_budget: 64.10 − 79.12 × 0.2 = 48.276 GiB; kvledger's 63.32 − 14.96 = 48.36 GiB.
    assert abs(checks["kv_budget"].logged - int((64.10 - 79.12 * 0.2) * GIB)) <= 2
    assert checks["kv_budget"].match is True
    # headroom: 15.71 GiB logged after the pools; kvledger's (79.65 − 0.5) × 0.2 = 15.83 GiB.
    assert checks["headroom"].derived == 16_996_787_815
    assert checks["headroom"].match is True


def test_a_gpu_shared_with_another_process_shows_in_the_in_use_line() -> None:
    # 39.12 GiB free before the weights: 40.53 GiB was in use — another process — which
    # kvledger's plan of a GPU of its own (0.5 GiB) does not expect: non_torch, utilization
    # and kv_budget miss, and say by how much.
    e = explain_log(_log("39.12", "24.10", "7.71"), model=LLAMA, gpu="H100-80GB")
    checks = {c.name: c for c in e.checks}
    assert checks["non_torch"].match is False
    assert abs(checks["non_torch"].logged - int((79.65 - 39.12) * GIB)) < GIB // 100
    assert checks["utilization"].match is False
    assert checks["kv_budget"].match is False


def test_without_the_device_total_the_lines_say_how_to_get_it() -> None:
    e = explain_log(_log("79.12", "64.10", "15.71"), model=LLAMA)
    checks = {c.name: c for c in e.checks}
    assert "non_torch" not in checks  # total − B needs the total
    assert checks["kv_budget"].derived is None and "--gpu NAME" in checks["kv_budget"].why


def test_an_sglang_version_is_not_replayed_as_a_vllm_release() -> None:
    # "sglang: 0.5.10.post1" (a pasted environment line) names SGLang's release: no vLLM
    # profile is looked for and no note speaks of vLLM.
    e = explain_log("sglang: 0.5.10.post1\n" + _log("79.12", "64.10", "15.71"), model=LLAMA,
                    gpu="H100-80GB")
    assert e.engine == "sglang" and e.engine_version == "0.5.10.post1"
    assert not any("vLLM" in note for note in e.notes)
    assert e.check("kv_budget").match is True
