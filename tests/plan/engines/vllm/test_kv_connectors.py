"""vLLM 0.33's KV connectors (``--kv-transfer-config``), each connector's GPU and host bytes by
hand from the source cited in ``plan/engines/vllm/connectors.py`` and
``connectors_lmcache.py`` (vLLM 0.33.0; lmcache 0.5.6), and each refusal naming its setting.

Llama-3.1-70B at TP 4 (catalog config: 80 layers, 8 KV heads, head_dim 128, bfloat16): a GPU
holds 2 KV heads, so one token is 2 (K, V) × 80 × 2 × 128 × 2 B = 81,920 B per GPU and a
16-token block 1,310,720 B. Llama-3.1-8B at TP 1 (32 layers, 8 KV heads, 128): 131,072 B a
token, 2,097,152 B a block. All numbers: engine="vllm==0.33".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvledger.errors import PlanError
from kvledger.plan.api import plan_model
from kvledger.plan.engines.vllm.launch import VllmLaunch
from kvledger.plan.request import PlanRequest
from kvledger.plan.result import PlanResult

L70 = "meta-llama/Llama-3.1-70B-Instruct"
L8 = "meta-llama/Meta-Llama-3.1-8B"
GIB = 1 << 30
CONFIGS = Path(__file__).resolve().parents[4].parent / "shared" / "configs"
RELEASE = "vllm==0.33"


def plan(cfg: dict[str, Any] | None, model: str = L70, *, tp: int = 4,
         release: str = RELEASE, max_model_len: int = 32768, **launch: Any) -> PlanResult:
    text = json.dumps(cfg) if cfg is not None else None
    return plan_model(model, PlanRequest(
        gpu="H100-80GB", tensor_parallel_size=tp, max_model_len=max_model_len,
        engine_release=release.partition("==")[2],
        vllm_launch=VllmLaunch(kv_transfer_config=text, **launch)))


def transfer(cfg: dict[str, Any], model: str = L70, *, tp: int = 4) -> dict[str, Any]:
    found: dict[str, Any] = plan(cfg, model, tp=tp).to_json()["kv_transfer"]
    return found


def test_the_pool_is_the_same_with_and_without_a_connector() -> None:
    plain = plan(None)
    nixl = plan({"kv_connector": "NixlConnector", "kv_role": "kv_both"})
    assert nixl.num_blocks == plain.num_blocks
    assert nixl.to_json()["bytes_per_token"] == 81_920


def test_nixl_registers_the_pool_and_asks_for_the_heads_first_layout() -> None:
    got = transfer({"kv_connector": "NixlConnector", "kv_role": "kv_producer"})
    assert (got["gpu_bytes_per_gpu"], got["host_bytes"]) == (0, 0)
    assert got["kv_cache_layout"] == "LBHNC"  # nixl/connector.py get_required_kvcache_layout


def test_nixl_with_a_cpu_buffer_mirrors_the_whole_pool_on_the_host() -> None:
    # initialize_host_xfer_buffer: one host tensor per KV tensor = every block of every GPU.
    blocks = plan(None).num_blocks
    got = transfer({"kv_connector": "NixlConnector", "kv_role": "kv_both",
                    "kv_buffer_device": "cpu"})
    assert got["host_bytes"] == blocks * 1_310_720 * 4
    assert got["gpu_bytes_per_gpu"] == 0


def test_mooncake_registers_the_pool_and_nothing_more() -> None:
    got = transfer({"kv_connector": "MooncakeConnector", "kv_role": "kv_consumer",
                    "kv_connector_extra_config": {"mooncake_protocol": "rdma"}})
    assert (got["gpu_bytes_per_gpu"], got["host_bytes"], got["kv_cache_layout"]) == \
        (0, 0, "LBHNC")


@pytest.mark.parametrize("release", ["vllm==0.33", "vllm==0.34"])
def test_moriio_registers_the_pool_in_place_and_keeps_the_hybrid_manager(release: str) -> None:
    # moriio_connector.py (0.33.0 and 0.34.0): register_kv_caches registers the KV tensors
    # with the RDMA engine, no buffer; no get_required_kvcache_layout override; SupportsHMA.
    cfg = {"kv_connector": "MoRIIOConnector", "kv_role": "kv_producer",
           "kv_connector_extra_config": {"proxy_ip": "10.0.0.1", "proxy_ping_port": "5000",
                                         "http_port": "8100", "handshake_port": "6400",
                                         "notify_port": "6500"}}
    plain, got = plan(None, release=release), plan(cfg, release=release)
    assert got.num_blocks == plain.num_blocks
    kv = got.to_json()["kv_transfer"]
    assert (kv["gpu_bytes_per_gpu"], kv["host_bytes"], kv["kv_cache_layout"]) == (0, 0, None)
    # Gemma-2 (sliding + full: two groups) keeps its pool: the hybrid manager stays on.
    gemma = str(CONFIGS / "google--gemma-2-9b.json")
    if not (CONFIGS / "google--gemma-2-9b.json").is_file():
        pytest.skip("gemma-2-9b's config is in ../shared/configs")
    assert plan({**cfg, "kv_role": "kv_consumer"}, gemma, tp=1, max_model_len=8192,
                release=release).num_blocks == plan(None, gemma, tp=1, max_model_len=8192,
                                                    release=release).num_blocks


def test_lmcache_defaults_one_chunk_on_the_gpu_and_five_gib_per_gpu_on_the_host() -> None:
    # chunk_size 256 (lmcache 0.5.6 default): 256 × 81,920 = 20,971,520 B = 5,120 pages of
    # 4,096 (no rounding). max_local_cpu_size 5.0 GiB = 5,368,709,120 B per GPU:
    # / 20,971,520 = 256 chunks × 256 tokens = 65,536 tokens; the instance: 4 × 5 GiB.
    got = transfer({"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"})
    assert got["gpu_bytes_per_gpu"] == 20_971_520
    assert got["host_bytes"] == 21_474_836_480
    (cpu,) = got["tiers"]
    assert (cpu["tier"], cpu["per"], cpu["bytes"]) == ("cpu", "gpu", 5_368_709_120)
    assert (cpu["chunk_bytes"], cpu["chunks"], cpu["tokens"]) == (20_971_520, 256, 65_536)


def test_lmcache_extra_config_sizes_the_cpu_and_disk_tiers() -> None:
    # chunk 128 tokens: 128 × 81,920 = 10,485,760 B (GPU buffer too). CPU 20 GiB =
    # 21,474,836,480 / 10,485,760 = 2,048 chunks = 262,144 tokens; disk 10 GiB: 1,024 chunks
    # = 131,072 tokens, per GPU.
    got = transfer({"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both",
                    "kv_connector_extra_config": {
                        "lmcache.chunk_size": 128, "lmcache.max_local_cpu_size": 20,
                        "lmcache.local_disk": "file:///mnt/lmcache/",
                        "lmcache.max_local_disk_size": 10}})
    assert got["gpu_bytes_per_gpu"] == 10_485_760
    cpu, disk = got["tiers"]
    assert (cpu["chunks"], cpu["tokens"]) == (2_048, 262_144)
    assert (disk["tier"], disk["bytes"], disk["chunks"], disk["tokens"]) == \
        ("disk", 10 * GIB, 1_024, 131_072)


def test_offloading_connector_from_the_transfer_config() -> None:
    # Llama-3.1-8B TP 1: a 2,097,152 B block. cpu_bytes_to_use 64 GiB; block_size 64 tokens =
    # 4 blocks a chunk = 8,388,608 B; 68,719,476,736 / 8,388,608 = 8,192 chunks × 64 tokens =
    # 524,288 tokens (the same tokens as one-block chunks: 32,768 × 16).
    got = transfer({"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
                    "kv_connector_extra_config": {"cpu_bytes_to_use": 64 * GIB,
                                                  "block_size": 64}}, L8, tp=1)
    (cpu,) = got["tiers"]
    assert (got["gpu_bytes_per_gpu"], got["host_bytes"]) == (0, 64 * GIB)
    assert (cpu["chunk_bytes"], cpu["tokens_per_chunk"], cpu["chunks"], cpu["tokens"]) == \
        (8_388_608, 64, 8_192, 524_288)


def test_multi_connector_adds_its_children() -> None:
    # NIXL (0 B) + LMCache (20,971,520 B GPU, 4 × 5 GiB host).
    got = transfer({"kv_connector": "MultiConnector", "kv_role": "kv_both",
                    "kv_connector_extra_config": {"connectors": [
                        {"kv_connector": "NixlConnector", "kv_role": "kv_both"},
                        {"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}]}})
    assert got["gpu_bytes_per_gpu"] == 20_971_520
    assert got["host_bytes"] == 4 * 5 * GIB
    assert got["kv_cache_layout"] == "LBHNC"
    assert [c["connector"] for c in got["children"]] == ["NixlConnector",
                                                         "LMCacheConnectorV1"]


@pytest.mark.parametrize(("cfg", "named"), [
    ({"kv_connector": "P2pNcclConnector", "kv_role": "kv_producer"}, "P2pNcclConnector"),
    ({"kv_connector": "NixlConnector", "kv_role": "kv_both", "kv_buffer_size": 1e9},
     "kv_buffer_size"),
    ({"kv_connector": "LMCacheMPConnector", "kv_role": "kv_both"}, "LMCacheMPConnector"),
    ({"kv_connector": "NoSuchConnector", "kv_role": "kv_both"}, "NoSuchConnector"),
    ({"kv_connector": "NixlConnector"}, "kv_role"),
    ({"kv_connector": "NixlConnector", "kv_role": "kv_both", "kv_buffer_device": "xpu"},
     "kv_buffer_device"),
    ({"kv_connector": "NixlConnector", "kv_role": "kv_both",
      "kv_connector_module_path": "my.mod"}, "kv_connector_module_path"),
    ({"kv_connector": "NixlConnector", "kv_role": "kv_both",
      "kv_connector_extra_config": {"turbo": True}}, "kv_connector_extra_config.turbo"),
    ({"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both",
      "kv_connector_extra_config": {"lmcache.use_layerwise": True}}, "lmcache.use_layerwise"),
    ({"kv_connector": "OffloadingConnector", "kv_role": "kv_both",
      "kv_connector_extra_config": {"cpu_bytes_to_use": GIB, "block_size": 40}},
     "block_size 40"),
    ({"kv_connector": "OffloadingConnector", "kv_role": "kv_both"}, "cpu_bytes_to_use"),
    ({"kv_connector": "MoRIIOConnector", "kv_role": "kv_both",
      "kv_connector_extra_config": {"staging_buffer_mb": 512}},
     "kv_connector_extra_config.staging_buffer_mb"),
])
def test_settings_not_modelled_are_refused_by_name(cfg: dict[str, Any], named: str) -> None:
    with pytest.raises(PlanError, match=named):
        plan(cfg)


def test_a_connector_without_hma_on_a_hybrid_model_is_refused() -> None:
    # Gemma-2 has sliding-window and full layers (two KV cache groups); LMCacheConnectorV1 is
    # not SupportsHMA, so vLLM turns the hybrid manager off: another pool.
    with pytest.raises(PlanError, match="hybrid KV cache manager"):
        plan({"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"},
             str(CONFIGS / "google--gemma-2-9b.json"), tp=1, max_model_len=8192)


def test_kv_offloading_size_replaces_the_connector_so_both_are_refused() -> None:
    with pytest.raises(PlanError, match="--kv-offloading-size with --kv-transfer-config"):
        plan({"kv_connector": "NixlConnector", "kv_role": "kv_both"}, kv_offloading_size=8)


def test_a_release_whose_connectors_were_not_read_is_refused() -> None:
    with pytest.raises(PlanError, match=r"vllm==0\.33"):
        plan({"kv_connector": "NixlConnector", "kv_role": "kv_both"}, release="vllm==0.32")
