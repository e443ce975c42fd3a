"""The options ``plan``, ``fit`` and ``report`` share, and the ``PlanRequest`` they build.

vLLM's option names and defaults (SGLang's under ``--engine sglang``), defined once so a flag
means the same in every command; ``build_request`` turns them into the very ``PlanRequest`` a
library caller builds, field for field, with the request's own defaults for what was not given.
"""

from __future__ import annotations

import sys

from kvledger.cli.args import (
    block_size,
    bytes_at_least,
    engine_spec,
    fraction,
    int_at_least,
    nonneg_bytes,
    tokens_at_least,
)
from kvledger.cli.errors import UsageError
from kvledger.cli.vllm_launch_options import add_vllm_launch_options, vllm_launch
from kvledger.plan.engines.registry import LAYOUTS, engine_label
from kvledger.plan.request import KV_CACHE_DTYPES, PlanRequest
from kvledger.records import fields

TYPE_CHECKING = False  # typing is kept off the start-up path (bench/startup.py)
if TYPE_CHECKING:
    import argparse
    from typing import Any


ENGINES = tuple(LAYOUTS)  # the engine registry (kvledger.plan.engines.registry) is the one list
# A flag not given takes the library's default: the request's own, read from its fields.
DEFAULTS = {f.name: f.default for f in fields(PlanRequest)}


# Flags fit answers from its own question: given to fit, each is refused by name (one line,
# exit 2) rather than silently replaced; fit's --help does not list them.
FIT_SETS = {
    "data_parallel_size": "not taken by fit: it sizes one replica (data parallelism repeats "
                          "it; plan each replica with 'kvledger plan -dp D')",
    "max_model_len": "not taken by fit: it plans max_model_len = --context",
    "max_num_seqs": "not taken by fit: it plans max_num_seqs = --concurrency",
}


def add_engine_options(p: argparse.ArgumentParser, *, for_fit: bool = False) -> None:
    """vLLM's option names and defaults, shared by ``plan`` and ``fit``.

    ``fit`` searches GPU layouts, so it takes neither a direct byte budget nor a GPU total:
    the preset is the question (its ``--gpu`` is required and added by ``fit`` itself).
    The flags it answers itself (``FIT_SETS``) still parse, to be refused by name, but its
    ``--help`` leaves them out.
    """
    import argparse  # loaded already: the parser being filled is one

    SUPPRESS = argparse.SUPPRESS  # compared by identity: the constant itself, not its text
    p.add_argument("--engine", type=engine_spec, default=DEFAULTS["engine"], metavar="ENGINE",
                   help="{" + ",".join(ENGINES) + "}, optionally pinned to a release as pip "
                   "writes it (vllm==0.32; default: the newest kvledger knows); " + "; ".join(
                       f"{name}: {engine_label(name)}" for name in ENGINES))
    if not for_fit:
        p.add_argument("--kv-cache-memory-bytes", type=nonneg_bytes, default=None,
                       metavar="N", help="KV budget per GPU in bytes (skips the GPU budget)")
        p.add_argument("--gpu", default=None, metavar="NAME",
                       help="GPU preset (H100-80GB, H200, B200, MI300X, ...), or auto: read "
                       "this machine's from nvidia-smi / rocm-smi")
    p.add_argument("--gpu-memory-utilization", type=fraction, default=None, metavar="U",
                   help="fraction of GPU memory the engine may use (default: the engine "
                   "release's own, e.g. vLLM's 0.92)")
    # Not given = vLLM's own default: 16, unless the attention backend needs another size
    # (FlashMLA sparse: 64). A fixed 16 would make sparse-MLA models fail by default.
    p.add_argument("--block-size", "--page-size", type=block_size, default=None,
                   metavar="B|auto",
                   help="tokens per KV block (default: 16, or what the attention backend "
                        "needs, e.g. 64 for sparse MLA; same as auto)")
    p.add_argument("--max-model-len", "--context-length", type=tokens_at_least(1),
                   default=None, metavar="L",
                   help=SUPPRESS if for_fit else
                   "longest request in tokens (default: the config's)")
    p.add_argument("--allow-long-max-model-len", action="store_true",
                   help=f"plan a {'--context' if for_fit else '--max-model-len'} above the "
                   "config's, as vLLM does with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (default: "
                   "refused, as vLLM refuses it)")
    p.add_argument("--kv-cache-dtype", choices=KV_CACHE_DTYPES, default=DEFAULTS["kv_cache_dtype"],
                   help="KV element type (auto: the checkpoint's KV scheme, else the dtype the "
                   "engine serves it in; a float32 checkpoint is served in bfloat16)")
    # fit searches TP × PP itself: a size given there fixes that axis of the search.
    p.add_argument("--tensor-parallel-size", "-tp", type=int_at_least(1),
                   default=None if for_fit else DEFAULTS["tensor_parallel_size"],
                   metavar="T",
                   help="fit: only layouts with T-way tensor parallelism are tried (default: "
                        "1, 2, 4, 8)" if for_fit else "GPUs each layer is split across "
                        "(default 1); the budget is per GPU")
    p.add_argument("--pipeline-parallel-size", "-pp", type=int_at_least(1),
                   default=None if for_fit else DEFAULTS["pipeline_parallel_size"],
                   metavar="P",
                   help="fit: only layouts with P pipeline stages are tried (default: 1, 2, "
                        "4, 8, 16)" if for_fit else "pipeline stages the layers are divided "
                        "into (default 1)")
    p.add_argument("--data-parallel-size", "-dp", type=int_at_least(1),
                   default=None if for_fit else DEFAULTS["data_parallel_size"],
                   metavar="D",
                   help=SUPPRESS if for_fit else "replicas of the whole model (default 1); "
                   "each is planned alike")
    p.add_argument("--enable-expert-parallel", "-ep", action="store_true",
                   help="fit: also search data × expert parallel layouts of a MoE model "
                   "(vLLM's -dp D -tp T --enable-expert-parallel)" if for_fit else
                   "vLLM's expert parallelism: each GPU of the DP × TP group holds whole "
                   "experts (default: off)")
    # None = not given: vLLM's default for the GPU and usage context (EngineArgs.
    # get_batch_defaults; plan/engines/vllm/batch.py), then min(that, --max-num-batched-tokens)
    # (_set_default_max_num_seqs_and_batched_tokens_args), so a small token budget is no
    # refusal.
    p.add_argument("--max-num-seqs", type=int_at_least(1), default=None, metavar="S",
                   help=SUPPRESS if for_fit else
                   "concurrent requests the engine admits (default: vLLM's for the GPU and "
                   "--usage-context, e.g. 1024 for vllm serve on an H100; 256 without --gpu; "
                   "or --max-num-batched-tokens if smaller)")
    p.add_argument("--max-num-batched-tokens", type=tokens_at_least(1), default=None,
                   metavar="N",
                   help="tokens per scheduler step (default: vLLM's for the GPU and "
                   "--usage-context, e.g. 8192 for vllm serve on an H100; "
                   f"{DEFAULTS['max_num_batched_tokens']} without --gpu)")
    p.add_argument("--usage-context", choices=("serve", "llm"), default=None,
                   help="the launch whose batch defaults are planned: serve (vllm serve, the "
                   "default) or llm (the offline LLM(...) class); --engine vllm only")
    p.add_argument("--enable-prefix-caching", action="boolean_optional",
                   default=None, help="default: the engine's choice for the model")
    p.add_argument("--num-speculative-tokens", type=int_at_least(0),
                   default=DEFAULTS["num_speculative_tokens"], metavar="K",
                   help="draft tokens proposed per step (default 0: no speculative decoding)")
    p.add_argument("--speculative-method", default=None, metavar="METHOD",
                   help="mtp, eagle3, ... (needed with --num-speculative-tokens)")
    _add_sglang_options(p)
    add_vllm_launch_options(p)
    reserves = p.add_argument_group(
        "GPU budget reserves (default: documented estimates, labelled 'estimated')")
    reserves.add_argument("--activation-peak-bytes", type=nonneg_bytes, default=None,
                          metavar="N", help="peak activation memory of one forward pass")
    reserves.add_argument("--cuda-graph-bytes", type=nonneg_bytes, default=None, metavar="N",
                          help="CUDA graph pool (vLLM logs it after capture)")
    reserves.add_argument("--non-torch-bytes", type=nonneg_bytes, default=None, metavar="N",
                          help="CUDA context, NCCL buffers, fragmentation")
    if not for_fit:
        reserves.add_argument("--gpu-total-bytes", type=bytes_at_least(1), default=None,
                              metavar="N", help="the GPU's memory as the device reports it "
                              "(overrides the preset; alone, a complete budget: SM90 "
                              "assumed)")
        held = reserves.add_mutually_exclusive_group()
        held.add_argument("--gpu-free-bytes", type=nonneg_bytes, default=None, metavar="N",
                          help="free memory on the GPU before the engine starts (nvidia-smi's "
                          "memory.free): vLLM refuses to start below ceil(total × utilization)")
        held.add_argument("--gpu-memory-in-use", type=nonneg_bytes, default=None, metavar="N",
                          help="memory other processes hold on the GPU (another engine beside "
                          "this one: its total × utilization)")
        reserves.add_argument(
            "--co-tenant", action="append", default=[], metavar='"MODEL FLAGS"',
            help="another engine or model on the same GPU, started before this one, as a plan "
            'line (e.g. "Qwen/Qwen3-8B --engine sglang --mem-fraction-static 0.4"); repeat '
            "for more: each is planned with what the earlier ones hold, with its own "
            "engine's admission rule")


def _add_sglang_options(p: argparse.ArgumentParser) -> None:
    """SGLang's own server arguments (``--engine sglang`` only), under SGLang's names."""
    g = p.add_argument_group("SGLang options (--engine sglang; SGLang's names and defaults)")
    g.add_argument("--mem-fraction-static", type=fraction, default=None, metavar="F",
                   help="default: SGLang's formula from the GPU's memory")
    g.add_argument("--max-running-requests", type=int_at_least(1), default=None, metavar="N",
                   help="requests SGLang runs at once (default: its formula from the pool)")
    g.add_argument("--max-total-tokens", type=int_at_least(1), default=None, metavar="N",
                   help="cap the KV pool at N tokens (default: what the memory holds)")
    g.add_argument("--chunked-prefill-size", type=int_at_least(1), default=None, metavar="N",
                   help="tokens per prefill chunk (default: SGLang's for the GPU)")
    g.add_argument("--cuda-graph-max-bs", type=int_at_least(1), default=None, metavar="N",
                   help="largest batch captured as a CUDA graph (default: SGLang's for the "
                   "GPU)")
    g.add_argument("--swa-full-tokens-ratio", type=fraction, default=None, metavar="R",
                   help="SWA pool tokens per full pool token (default 0.8)")
    g.add_argument("--mamba-full-memory-ratio", type=float, default=None, metavar="R",
                   help="state pool memory per KV memory (default 0.9)")
    g.add_argument("--disable-radix-cache", action="store_true", default=None,
                   help="no prefix cache (SGLang's radix tree)")
    g.add_argument("--disable-overlap-schedule", action="store_true", default=None,
                   help="schedule the next batch after the current one, not alongside it")
    g.add_argument("--enable-dp-attention", action="store_true", default=None,
                   help="data-parallel attention (SGLang's DP attention)")
    g.add_argument("--mamba-ssm-dtype", choices=("float32", "bfloat16", "float16"),
                   default=None, help="element type of the Mamba SSM state (default: the "
                   "config's)")
    g.add_argument("--speculative-num-draft-tokens", type=int_at_least(1), default=None,
                   metavar="D", help="tokens verified per speculative step (default: "
                   "--num-speculative-tokens + 1, a linear chain); sizes the Mamba states' "
                   "speculative scratch")
    g.add_argument("--dsa-prefill-backend", default=None, metavar="NAME",
                   help="DeepSeek sparse attention's prefill kernel (default: SGLang's by "
                   "platform and KV dtype); with an fp8 KV the pair decides the row layout")
    g.add_argument("--dsa-decode-backend", default=None, metavar="NAME",
                   help="DeepSeek sparse attention's decode kernel (default: SGLang's)")
    g.add_argument("--enable-hierarchical-cache", "--enable-hicache", action="store_true",
                   default=None, dest="enable_hierarchical_cache",
                   help="HiCache: a host KV tier beside the GPU pool (its tokens and bytes)")
    g.add_argument("--hicache-ratio", type=float, default=None, metavar="R",
                   help="host tier tokens per GPU pool token (default: 2.0 at most, lowered "
                   "by SGLang to fit the host)")
    g.add_argument("--hicache-size", type=float, default=None, metavar="G",
                   help="host tier of G GB (decimal) per GPU; overrides --hicache-ratio")
    g.add_argument("--hicache-mem-layout", choices=("layer_first", "page_first",
                                                    "page_first_direct"), default=None,
                   help="the host tier's layout (default page_first)")


SGLANG_FLAGS = ("mem_fraction_static", "max_running_requests", "max_total_tokens",
                "chunked_prefill_size", "cuda_graph_max_bs", "swa_full_tokens_ratio",
                "mamba_full_memory_ratio", "disable_radix_cache", "disable_overlap_schedule",
                "enable_dp_attention", "mamba_ssm_dtype", "speculative_num_draft_tokens",
                "enable_hierarchical_cache", "hicache_ratio", "hicache_size",
                "hicache_mem_layout", "dsa_prefill_backend", "dsa_decode_backend")


def _sglang_options(ns: argparse.Namespace) -> Any:
    given = {k: getattr(ns, k) for k in SGLANG_FLAGS if getattr(ns, k, None) is not None}
    if ns.engine.partition("==")[0] == "sglang" and getattr(ns, "attention_backend", None):
        # --attention-backend (vllm_launch_options' flag) is SGLang's own flag too.
        given["attention_backend"] = ns.attention_backend
    if ns.engine.partition("==")[0] != "sglang":
        if given:
            flags = ", ".join("--" + k.replace("_", "-") for k in given)
            raise UsageError(f"kvledger: error: {flags} apply to --engine sglang only",
                             hint="add --engine sglang")
        return None
    if getattr(ns, "draft_config", None):
        given["draft_num_layers"] = _sglang_draft_layers(ns.draft_config)
    if not given:
        return None
    from kvledger.plan.engines.sglang.options import SglangOptions

    return SglangOptions(**given)


def _sglang_draft_layers(path: str) -> int:
    """The EAGLE / STANDALONE draft's layer count as SGLang reads it (draft_layers.py)."""
    from kvledger.cli.vllm_launch_options import read_draft_config
    from kvledger.plan.engines.sglang.draft_layers import draft_num_layers

    try:
        return draft_num_layers(read_draft_config(path))
    except ValueError as exc:
        raise UsageError(f"kvledger: error: --draft-config {path}: {exc}") from None


def add_model_local_options(p: argparse.ArgumentParser) -> None:
    """Seed A's declarations (read by ``cli.model_local`` only when one is given)."""
    group = p.add_argument_group(
        "model-local KV caches (seed A: caches a model keeps itself, planned inside the "
        "engine's budget)")
    group.add_argument("--model-local-kv", default=None, metavar="FILE.json",
                       help="a JSON list of declarations in the seed's field names "
                       "(see examples/omni-talker-kv.json)")
    group.add_argument("--model-local-kv-from", default=None, metavar="MODULE:FUNCTION",
                       help="build the model (FUNCTION returns it, or (model, run) as for "
                       "'kvledger audit') and collect its declarations (needs torch)")
    group.add_argument("--model-local-kv-charged", action="append", default=[],
                       metavar="NAME", help="a declaration the engine's profiling already "
                       "paid for: listed, not subtracted (repeatable)")
    group.add_argument("--model-local-kv-stage", action="append", default=[],
                       metavar="NAME=STAGE", help="the pipeline stage whose GPUs hold this "
                       "declaration's module (default 0, the first; repeatable)")



def add_omni_options(p: argparse.ArgumentParser) -> None:
    """``--omni-deploy`` and ``--omni-platform`` (read by ``cli.omni`` only when given)."""
    omni = p.add_argument_group("vLLM-Omni deployments")
    omni.add_argument("--omni-deploy", default=None, metavar="DEPLOY.yaml",
                      help="plan every stage of a vLLM-Omni deploy file (its own fractions, "
                      "max_num_seqs, devices) and check each device as vLLM-Omni admits it")
    omni.add_argument("--omni-platform", default=None,
                      choices=("cuda", "rocm", "npu", "xpu", "musa"),
                      help="the deploy file's platforms: overlay to apply (default: the GPU's, "
                      "cuda or rocm)")


def installed_release(engine: str, *, warn: bool = True) -> str:
    """``engine`` as given, or — an unpinned engine installed in this environment — pinned
    to the installed release when kvledger reproduces it (read from the package's metadata,
    never by importing it). An installed release kvledger does not know is named on stderr
    (unless ``warn`` is false) with the release planned instead."""
    name, sep, _ = engine.partition("==")
    if sep:
        return engine
    found = _installed_version(name)
    if found is None:
        return engine
    from kvledger.plan.engines.release import version_key

    if version_key(found) is None:  # a build kvledger cannot read as a release: the newest
        return engine
    from kvledger.plan.engines.base import get_layout

    layout = get_layout(name)
    try:
        release = layout.find_release(found)
    except ValueError:
        # An installed release kvledger does not know: planned as the nearest known one,
        # which the plan's release_note names (get_layout binds it).
        return f"{name}=={found}"
    return release.pin if release is not None else engine


def _installed_version(name: str) -> str | None:
    """The version of the distribution ``name`` on ``sys.path``, from its ``.dist-info``
    folder's name (``vllm-0.33.0.dist-info``, as pip writes it): the package metadata, read
    without importlib.metadata (start-up: bench/startup.py) and without importing it."""
    import os

    prefix = f"{name}-"
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for folder in names:
            if folder.startswith(prefix) and folder.endswith(".dist-info"):
                return folder[len(prefix):-len(".dist-info")]
    return None


def build_request(ns: argparse.Namespace, **overrides: Any) -> Any:
    """The one ``PlanRequest``, field for field from the flags (``fit`` has no
    ``--kv-cache-memory-bytes`` / ``--gpu-total-bytes``: they stay unset)."""
    given: dict[str, Any] = dict(
        # With --omni-deploy an unknown installed release is the Omni planner's to name: it
        # plans the stages with the oldest release kvledger knows and says so itself.
        engine=installed_release(ns.engine, warn=getattr(ns, "omni_deploy", None) is None),
        kv_cache_memory_bytes=getattr(ns, "kv_cache_memory_bytes", None),
        gpu=ns.gpu,
        gpu_memory_utilization=ns.gpu_memory_utilization,
        gpu_total_bytes=getattr(ns, "gpu_total_bytes", None),
        gpu_free_bytes=getattr(ns, "gpu_free_bytes", None),
        gpu_memory_in_use=getattr(ns, "gpu_memory_in_use", None),
        activation_peak_bytes=ns.activation_peak_bytes,
        cuda_graph_bytes=ns.cuda_graph_bytes,
        non_torch_bytes=ns.non_torch_bytes,
        concurrency=ns.concurrency,
        block_size=ns.block_size,
        max_model_len=ns.max_model_len,
        allow_long_max_model_len=ns.allow_long_max_model_len,
        kv_cache_dtype=ns.kv_cache_dtype,
        tensor_parallel_size=ns.tensor_parallel_size,
        pipeline_parallel_size=ns.pipeline_parallel_size,
        data_parallel_size=ns.data_parallel_size,
        enable_expert_parallel=bool(getattr(ns, "enable_expert_parallel", False)),
        max_num_seqs=ns.max_num_seqs,  # None: the request resolves vLLM's default
        max_num_batched_tokens=ns.max_num_batched_tokens,
        usage_context=ns.usage_context,
        enable_prefix_caching=ns.enable_prefix_caching,
        num_speculative_tokens=ns.num_speculative_tokens,
        speculative_method=ns.speculative_method,
        sglang=_sglang_options(ns),
        vllm_launch=vllm_launch(ns),
    )
    if getattr(ns, "model_local_kv", None) is not None or \
            getattr(ns, "model_local_kv_from", None) is not None or \
            getattr(ns, "model_local_kv_charged", None) or \
            getattr(ns, "model_local_kv_stage", None):
        from kvledger.cli import model_local

        given.update(model_local.request_fields(ns))
    if isinstance(ns.gpu, str) and ns.gpu.strip().lower() == "auto":
        given.update(_probed_gpu(given))
    given.update(overrides)
    if getattr(ns, "co_tenant", None):
        given.update(_with_co_tenants(ns, given))
    return PlanRequest(**given)


def _with_co_tenants(ns: argparse.Namespace, given: dict[str, Any]) -> dict[str, Any]:
    """``--co-tenant`` (cli/co_tenants.py): what they hold is added to what is held before
    this engine starts — taken from the free memory when that was given."""
    from kvledger.cli.co_tenants import held_by_co_tenants

    free = given.get("gpu_free_bytes")
    total = given.get("gpu_total_bytes")
    before = given.get("gpu_memory_in_use") or 0
    if free is not None and total is not None:
        before = max(0, total - free)
    elif free is not None:  # the preset's total is not known here: keep the free form
        held = held_by_co_tenants(ns, 0, parser=_co_tenant_parser, build=build_request)
        return {"gpu_free_bytes": max(0, free - held)}
    held = held_by_co_tenants(ns, before, parser=_co_tenant_parser, build=build_request)
    return {"gpu_free_bytes": None, "gpu_memory_in_use": before + held}


def _co_tenant_parser() -> argparse.ArgumentParser:
    """One ``--co-tenant`` line's parser: a model and the engine options of ``plan``."""
    from kvledger.cli.parser import Parser
    from kvledger.cli.source_args import add_model

    parser = Parser(prog="kvledger plan --co-tenant",
                    description="another engine or model on the same GPU")
    add_model(parser)
    add_engine_options(parser)
    return parser


def _probed_gpu(given: dict[str, Any]) -> dict[str, Any]:
    """``--gpu auto`` (cli/gpu_probe.py): what nvidia-smi / rocm-smi read, said on stderr;
    a total or free memory given on the command line wins over the probe's."""
    from kvledger.cli.gpu_probe import probe, request_fields

    probed = probe()
    sys.stderr.write(probed.describe() + "\n")
    fields = request_fields(probed)
    for name in ("gpu_total_bytes", "gpu_free_bytes"):
        if given.get(name) is not None:
            fields.pop(name)
    if given.get("gpu_memory_in_use") is not None:
        fields.pop("gpu_free_bytes", None)
    return fields

