"""vLLM 0.34's KV connectors: what kvledger sizes is 0.33's (the diff is read in
``releases/v0_34.py``), and what moved — NixlConnector's ``transfer_mode``
(``kv_connector/factory.py KVConnectorFactory.get_connector_class``), ``UMBPStoreConnector``
(registered in 0.34's ``factory.py``) and the connectors that turn 0.34's extensible KV cache
off (``config/vllm.py VllmConfig._resolve_extensible_kv_cache`` with each connector's
``kv_cache_access``: NIXL's ``REGISTERS | EXPORTS_FABRIC`` needs an IMEX channel, which
kvledger assumes absent) — each checked under ``vllm==0.34`` beside ``vllm==0.33``.

Llama-3.1-8B at TP 1 (catalog config: 32 layers, 8 KV heads, head_dim 128, bfloat16): one
token is 2 × 32 × 8 × 128 × 2 B = 131,072 B; 0.34's 64-token block 8,388,608 B, 0.33's
16-token block 2,097,152 B. A given ``--gpu-total-bytes`` of 80 GiB and given reserves (2 GiB
activation peak, 1 GiB CUDA graphs, 0.5 GiB non-torch) keep the budget exact.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvledger.errors import PlanError
from kvledger.plan.api import plan_model
from kvledger.plan.engines.vllm.connectors import extensible_cache_off
from kvledger.plan.engines.vllm.launch import VllmLaunch
from kvledger.plan.request import PlanRequest
from kvledger.plan.result import PlanResult

GIB = 1 << 30
L8 = "meta-llama/Meta-Llama-3.1-8B"
TOTAL = 80 * GIB
NIXL = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}


def plan(cfg: dict[str, Any] | None, engine: str = "vllm==0.34", **launch: Any) -> PlanResult:
    return plan_model(L8, PlanRequest(
        engine=engine, gpu="H100-80GB", gpu_total_bytes=TOTAL, max_model_len=32768,
        activation_peak_bytes=2 * GIB, cuda_graph_bytes=GIB, non_torch_bytes=GIB // 2,
        vllm_launch=VllmLaunch(kv_transfer_config=json.dumps(cfg) if cfg else None,
                               **launch)))


def lines(result: PlanResult) -> dict[str, int]:
    return {line["key"]: line["bytes"] for line in result.to_json()["budget"]}


def test_0_34_sizes_the_connectors_0_33_does() -> None:
    # Was refused under 0.34 (sizes_kv_connectors False); the bytes are 0.33's rules on 0.34's
    # pool: OffloadingConnector, 16 GiB, one 8,388,608 B block a chunk (page-aligned already):
    # 17,179,869,184 / 8,388,608 = 2,048 chunks × 64 tokens = 131,072 tokens.
    got = plan({"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                "kv_connector_extra_config": {"cpu_bytes_to_use": 16 * GIB}}).to_json()
    (cpu,) = got["kv_transfer"]["tiers"]
    assert (cpu["chunk_bytes"], cpu["tokens_per_chunk"], cpu["chunks"], cpu["tokens"]) == \
        (8_388_608, 64, 2_048, 131_072)
    # 0.33: a 16-token block, 2,097,152 B a chunk: 8,192 chunks × 16 = the same 131,072 tokens.
    old = plan({"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                "kv_connector_extra_config": {"cpu_bytes_to_use": 16 * GIB}},
               "vllm==0.33").to_json()
    (cpu33,) = old["kv_transfer"]["tiers"]
    assert (cpu33["chunk_bytes"], cpu33["chunks"], cpu33["tokens"]) == (2_097_152, 8_192, 131_072)


def test_nixl_turns_the_extensible_cache_off_so_the_budget_is_0_92() -> None:
    # NixlConnector.kv_cache_access: REGISTERS | EXPORTS_FABRIC; no IMEX channel and the flag
    # not given: enable_extensible_kv_cache False, utilization 0.92 (CacheConfig.
    # DEFAULT_GPU_MEMORY_UTILIZATION): 0.92 × 80 GiB − weights − 2 − 1 − 0.5 GiB, no margin.
    got = lines(plan(NIXL))
    assert got["utilization"] == int(TOTAL * 0.92)
    assert "kv_margin" not in got and "before_snapshot" not in got
    assert got["kv_budget"] == int(TOTAL * 0.92) - got["weights"] - 2 * GIB - GIB - GIB // 2
    # Without the connector 0.34 is extensible: 80 − 0.5 (snapshot) − 1.5 (margin) − weights
    # − 2 − 1 − 0.5 GiB.
    plain = lines(plan(None))
    assert plain["kv_budget"] == 80 * GIB - 2 * GIB - plain["weights"] - 2 * GIB - GIB - GIB // 2


def test_the_budget_line_says_why_the_mode_is_off() -> None:
    util = next(ln for ln in plan(NIXL).to_json()["budget"] if ln["key"] == "utilization")
    assert "extensible KV cache is off" in util["label"] and "IMEX" in util["label"]


def test_enable_extensible_kv_cache_keeps_it_on_with_nixl() -> None:
    # requested True, nothing unsupported: vLLM keeps the mode (and warns about TCP).
    got = lines(plan(NIXL, enable_extensible_kv_cache=True))
    assert got["utilization"] == TOTAL and got["kv_margin"] == 3 * GIB // 2


@pytest.mark.parametrize("cfg", [
    {**NIXL, "kv_buffer_device": "cpu"},  # IN_PROCESS: host staging buffers
    {"kv_connector": "MooncakeConnector", "kv_role": "kv_both"},  # REGISTERS only
    {"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
     "kv_connector_extra_config": {"cpu_bytes_to_use": GIB}},  # the base class's IN_PROCESS
])
def test_connectors_that_leave_the_extensible_cache_on(cfg: dict[str, Any]) -> None:
    assert lines(plan(cfg))["utilization"] == TOTAL


def test_a_multi_connector_with_a_nixl_child_turns_it_off() -> None:
    # multi_connector.py MultiConnector.kv_cache_access: the children's flags, or-ed.
    cfg = {"kv_connector": "MultiConnector", "kv_role": "kv_both",
           "kv_connector_extra_config": {"connectors": [
               NIXL, {"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                      "kv_connector_extra_config": {"cpu_bytes_to_use": GIB}}]}}
    assert lines(plan(cfg))["utilization"] == int(TOTAL * 0.92)


def test_which_connectors_turn_it_off_by_their_access() -> None:
    assert extensible_cache_off(json.dumps({"kv_connector": "LMCacheMPConnector"}),
                                requested=None) is not None  # LEGACY_IPC
    assert extensible_cache_off(json.dumps({
        "kv_connector": "MooncakeConnector",
        "kv_connector_extra_config": {"custom_mem_pool": True}}), requested=None) is not None
    assert extensible_cache_off(json.dumps(NIXL), requested=True) is None
    assert extensible_cache_off(json.dumps({"kv_connector": "LMCacheConnectorV1"}),
                                requested=None) is None


def test_nixl_transfer_mode_pull_is_the_connector_sized_under_0_34_only() -> None:
    cfg = {**NIXL, "kv_connector_extra_config": {"transfer_mode": "pull",
                                                 "ucx_backend_params": {"x": 1}}}
    got = plan(cfg).to_json()["kv_transfer"]
    assert (got["gpu_bytes_per_gpu"], got["host_bytes"], got["kv_cache_layout"]) == \
        (0, 0, "LBHNC")
    # 0.33's factory.py reads no transfer_mode: the key is one kvledger does not model there.
    with pytest.raises(PlanError, match="transfer_mode is not modelled"):
        plan(cfg, "vllm==0.33")


def test_nixl_push_mode_and_umbp_are_refused_by_name_under_0_34() -> None:
    with pytest.raises(PlanError, match="NixlPushConnector"):
        plan({**NIXL, "kv_connector_extra_config": {"transfer_mode": "push"}})
    with pytest.raises(PlanError, match="transfer_mode 'sideways'"):
        plan({**NIXL, "kv_connector_extra_config": {"transfer_mode": "sideways"}})
    with pytest.raises(PlanError, match=r"UMBPStoreConnector: not sized.*0\.34"):
        plan({"kv_connector": "UMBPStoreConnector", "kv_role": "kv_both"})
    with pytest.raises(PlanError, match=r"0\.33\.0 registers no such connector"):
        plan({"kv_connector": "UMBPStoreConnector", "kv_role": "kv_both"}, "vllm==0.33")


def test_kv_offloading_size_is_planned_under_0_34() -> None:
    # --kv-offloading-size 16: cpu_bytes_to_use 16 × 2**30; 2,048 chunks of 64 tokens.
    tier = plan(None, kv_offloading_size=16).to_json()["kv_offload"]
    assert (tier["chunk_bytes"], tier["chunks"], tier["cpu_tokens"]) == (8_388_608, 2_048, 131_072)


def test_a_gpu_buffer_comes_out_of_the_extensible_margin(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Mooncake (REGISTERS) + LMCache (IN_PROCESS): the mode stays on, utilization 1.0 leaves
    # nothing above it, and LMCache's 256 × 81,920 = 20,971,520 B buffer (Llama-3.1-70B, TP 4)
    # is built after sizing, out of the ≥ 1 GiB margin: no "do not fit" warning.
    from kvledger.cli.main import main

    cfg = json.dumps({"kv_connector": "MultiConnector", "kv_role": "kv_both",
                      "kv_connector_extra_config": {"connectors": [
                          {"kv_connector": "MooncakeConnector", "kv_role": "kv_both"},
                          {"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}]}})
    line = ("vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 4 "
            f"--max-model-len 32768 --kv-transfer-config '{cfg}'")
    code = main(["pd", "--gpu", "H100-80GB", "--offline", "--json", "--prefill", line,
                 "--decode", line])
    out, err = capsys.readouterr()
    assert code == 0, err
    roles = json.loads(out)["roles"]
    assert all(r["transfer"]["gpu_bytes_per_gpu"] == 20_971_520 for r in roles)
    assert not any("do not fit" in w for r in roles for w in r["warnings"])


MORIIO = {"kv_connector": "MoRIIOConnector", "kv_role": "kv_producer",
          "kv_connector_extra_config": {"proxy_ip": "10.0.0.1", "http_port": "8100",
                                        "handshake_port": "6400", "notify_port": "6500"}}


def _on_mi300x(cfg: dict[str, Any], **launch: Any) -> PlanResult:
    return plan_model(L8, PlanRequest(
        engine="vllm==0.34", gpu="MI300X", gpu_total_bytes=TOTAL, max_model_len=32768,
        activation_peak_bytes=2 * GIB, cuda_graph_bytes=GIB, non_torch_bytes=GIB // 2,
        vllm_launch=VllmLaunch(kv_transfer_config=json.dumps(cfg), **launch)))


@pytest.mark.parametrize("cfg", [
    MORIIO, {"kv_connector": "MooncakeConnector", "kv_role": "kv_both"}, NIXL])
def test_on_rocm_a_connector_that_registers_the_cache_turns_it_off(cfg: dict[str, Any]) -> None:
    # config/vllm.py _resolve_extensible_kv_cache: current_platform.is_rocm() and
    # kv_cache_access.needs_single_chunk() (REGISTERS or an export flag): "on ROCm, UCX and
    # RDMA cannot yet register driver-mapped memory". Mooncake keeps the mode on a CUDA GPU
    # (test_connectors_that_leave_the_extensible_cache_on); on ROCm the budget is 0.92's.
    util = next(ln for ln in _on_mi300x(cfg).to_json()["budget"] if ln["key"] == "utilization")
    assert util["bytes"] == int(TOTAL * 0.92)
    assert "on ROCm" in util["label"]


def test_asking_for_the_mode_where_rocm_cannot_have_it_is_vllms_refusal() -> None:
    # requested and unsupported: "enable_extensible_kv_cache: <why>." (a ValueError).
    with pytest.raises(PlanError, match="vLLM refuses to start: enable_extensible_kv_cache"):
        _on_mi300x(MORIIO, enable_extensible_kv_cache=True)
