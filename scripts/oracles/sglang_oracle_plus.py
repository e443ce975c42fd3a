#!/usr/bin/env python3
"""Run the shared SGLang 0.5.23 oracle with server arguments it has no flag for.

Research tool, never imported by kvledger and never run by CI. It needs the oracle's venv
(``/work/oracle/sglang/venv``, set up as ``../shared/oracles/sglang-tool/README.md`` says):

    venv/bin/python scripts/oracles/sglang_oracle_plus.py CONFIG.json --kv-pool-bytes N \\
        [--server-arg max_running_requests=64 ...] [--resolve-spec-aux] \\
        [--pp-stage K/P] [oracle flags: --tp T --page-size P --kv-cache-dtype D ...]

What it adds to ``sglang_oracle.py`` (whose ``main`` it calls unchanged):

* ``--server-arg KEY=JSON`` (repeatable): passed to ``ServerArgs(...)`` as a keyword, e.g.
  ``swa_full_tokens_ratio=0.5``, ``max_running_requests=64``, ``context_length=8192``,
  ``mamba_full_memory_ratio=0.5``, ``disable_radix_cache=true``,
  ``speculative_algorithm="EAGLE"``. SGLang's own resolution pipeline then runs on them.
* ``--resolve-spec-aux``: the oracle builds the KV configurator with an empty
  ``SpecAuxHiddenStateConfig()``, so a draft model never enters the cell size. With this flag
  the config is what SGLang's ``resolve_spec_aux_hidden_state_config`` returns for the
  resolved server arguments (``model_runner_components/spec_aux_hidden_state.py``), as the
  model runner does.
* ``--load-quant-config``: the oracle passes no model to ``configure_kv_cache_dtype``, so
  ``--kv-cache-dtype auto`` never sees a checkpoint's ``kv_cache_quant_algo``. With this flag
  the model handed to it carries the quant config SGLang's loader builds for the checkpoint
  (``model_loader/weight_utils.get_quant_config``), as a loaded model would.
* ``--model-class-window``: the weightless model has no methods, so SGLang falls back to the
  config's sliding window (``resolve_sliding_window_size``); a real model class may report
  another (gpt-oss: ``sliding_window - 1``). With this flag the model class SGLang would load
  (``ModelRegistry.resolve_model_cls``) answers ``get_attention_sliding_window_size`` as the
  loaded model would.
* ``--resolve-model-class``: the weightless oracle never asks which model class SGLang would
  load, so it sizes configs SGLang cannot serve. With this flag the resolved server arguments
  go through SGLang's own ``get_model_architecture`` (``model_loader/utils.py``): the native
  class from ``ModelRegistry``, or the Transformers-backend class (``resolve_transformers_arch``)
  for an architecture SGLang has no class for, or SGLang's error (``model_class_error``).
* ``--remote-config-as-plain``: a config whose class is remote code (``auto_map``, e.g.
  Phi-3-small) cannot load here: the code is not on disk and the oracle runs offline. With
  this flag, when transformers refuses it for that reason, the config loads as a plain
  ``PretrainedConfig`` holding config.json's keys (``remote_config_stand_in`` in the output),
  and SGLang's own code runs on that. A remote class's *defaults* for keys config.json omits
  are then absent, so use it only for configs that state every key SGLang reads. Lists of
  records (DeciLM's ``block_configs``) get attribute access, as the remote class gives them.
* ``--pp-stage K/P``: the layer range ``[start, end)`` of pipeline stage K of P, from SGLang's
  own ``get_pp_indices``, is what the weightless model reports (a real model reports it from
  the same function). The all-reduce MIN over stages is left to the caller (one run per
  stage); the pool sizing itself is SGLang's.
"""

from __future__ import annotations

import json
import os
import sys

ORACLE_DIR = os.environ.get("SGLANG_ORACLE_DIR", "/work/shared/oracles/sglang-tool")


def _take(argv: list[str], flag: str, *, has_value: bool) -> tuple[list[str], list[str]]:
    """Remove every ``flag [value]`` from argv; return (remaining argv, the values)."""
    rest: list[str] = []
    values: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == flag:
            if has_value:
                values.append(argv[i + 1])
                i += 2
            else:
                values.append("1")
                i += 1
            continue
        rest.append(argv[i])
        i += 1
    return rest, values


def _records(value: object) -> object:
    """A dict (recursively) as an object with attributes; anything else unchanged."""
    import types

    if isinstance(value, dict):
        return types.SimpleNamespace(**{k: _records(v) for k, v in value.items()})
    return value


def _model_class(server_args: object) -> dict[str, object]:
    """The class SGLang's loader would build for the model, or the error it raises."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a remote-code auto_map must not download
    try:
        from sglang.srt.configs.model_config import ModelConfig
        from sglang.srt.model_loader.utils import get_model_architecture

        cls, arch = get_model_architecture(ModelConfig.from_server_args(server_args))
        return {"model_class": arch, "model_class_module": cls.__module__}
    except Exception as exc:  # SGLang refuses the model: that is the answer
        return {"model_class_error": f"{type(exc).__name__}: {exc}"[:600]}


def main() -> None:
    argv = sys.argv[1:]
    argv, server_args = _take(argv, "--server-arg", has_value=True)
    argv, spec_aux = _take(argv, "--resolve-spec-aux", has_value=False)
    argv, pp_stage = _take(argv, "--pp-stage", has_value=True)
    argv, load_quant = _take(argv, "--load-quant-config", has_value=False)
    argv, class_window = _take(argv, "--model-class-window", has_value=False)
    argv, model_class = _take(argv, "--resolve-model-class", has_value=False)
    argv, plain_remote = _take(argv, "--remote-config-as-plain", has_value=False)
    extra: dict[str, object] = {}
    for item in server_args:
        key, _, raw = item.partition("=")
        extra[key] = json.loads(raw)

    import sglang.srt.server_args as server_args_module

    captured: dict[str, object] = {}
    real_class = server_args_module.ServerArgs

    def server_args_with_extra(*args: object, **kwargs: object) -> object:
        # ServerArgs is a msgspec Struct (its __init__ cannot be wrapped): the oracle's one
        # `from sglang.srt.server_args import ServerArgs` gets this factory, which puts the
        # real class back and builds the record with the extra arguments.
        server_args_module.ServerArgs = real_class
        kwargs.update(extra)
        record = real_class(*args, **kwargs)
        captured["server_args"] = record
        return record

    server_args_module.ServerArgs = server_args_with_extra

    if spec_aux:
        from sglang.srt.configs.model_config import ModelConfig
        from sglang.srt.model_executor.model_runner_components import spec_aux_hidden_state
        from sglang.srt.runtime_context import get_spec
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

        real_aux_class = spec_aux_hidden_state.SpecAuxHiddenStateConfig

        def resolved_aux() -> object:
            # SGLang's resolver builds the class itself: give it the real one back first.
            spec_aux_hidden_state.SpecAuxHiddenStateConfig = real_aux_class
            sa = captured["server_args"]
            return spec_aux_hidden_state.resolve_spec_aux_hidden_state_config(
                server_args=sa,
                model_config=ModelConfig.from_server_args(sa),
                spec_algorithm=SpeculativeAlgorithm.from_string(
                    get_spec().speculative_algorithm),
                is_draft_worker=False,
            )

        spec_aux_hidden_state.SpecAuxHiddenStateConfig = resolved_aux  # type: ignore[assignment]

    if pp_stage:
        from sglang.srt.distributed.utils import get_pp_indices
        from sglang.srt.model_executor.model_runner_components import layer_setup

        rank, size = (int(x) for x in pp_stage[0].split("/"))
        original_range = layer_setup._resolve_pp_layer_range

        def stage_range(*, model: object, model_num_layers: int) -> object:
            start, end = get_pp_indices(model_num_layers, rank, size)
            out = original_range(model=model, model_num_layers=model_num_layers)
            return type(out)(start_layer=start, end_layer=end)

        layer_setup._resolve_pp_layer_range = stage_range

        # The oracle builds the configurator with pp_size=1; the state pool's per-stage share
        # (_handle_max_mamba_cache) reads the real one.
        from sglang.srt.mem_cache import kv_cache_configurator as kvcm

        configurator_init = kvcm.KVCacheConfigurator.__init__

        def init_with_pp(self: object, *args: object, **kwargs: object) -> None:
            kwargs["pp_size"] = size
            configurator_init(self, *args, **kwargs)

        kvcm.KVCacheConfigurator.__init__ = init_with_pp  # type: ignore[method-assign]

    extra_out: dict[str, object] = {"oracle_plus_server_args": extra}
    if plain_remote:
        from sglang.srt.utils.hf_transformers import config as hf_config_module
        from transformers import PretrainedConfig

        auto_config = hf_config_module.AutoConfig

        class _Stated(PretrainedConfig):
            """The stated keys, set before PretrainedConfig's own __init__ as a remote class's
            __init__ does: transformers' rope standardisation reads max_position_embeddings
            before it would set the remaining keys itself (a rope_scaling config fails)."""

            def __init__(self, **kwargs: object) -> None:
                for key, value in kwargs.items():
                    setattr(self, key, value)
                super().__init__(**kwargs)

        class _PlainForRemoteCode:
            @staticmethod
            def from_pretrained(model: str, *args: object, **kwargs: object) -> object:
                try:
                    return auto_config.from_pretrained(model, *args, **kwargs)
                except ValueError as exc:
                    # with auto_map: "custom code"; a converted copy without one (the .mlc
                    # presets): transformers "does not recognize this architecture"
                    if ("custom code" not in str(exc)
                            and "does not recognize this architecture" not in str(exc)):
                        raise
                extra_out["remote_config_stand_in"] = "PretrainedConfig"
                plain = _Stated.from_pretrained(model)
                # Nested records (DeciLM's block_configs) are objects in the remote class:
                # give their dicts attribute access, as that class's dataclasses would.
                for key, value in list(vars(plain).items()):
                    if isinstance(value, list) and value and isinstance(value[0], dict):
                        setattr(plain, key, [_records(v) for v in value])
                return plain

            def __getattr__(self, name: str) -> object:
                return getattr(auto_config, name)

        hf_config_module.AutoConfig = _PlainForRemoteCode  # type: ignore[misc,assignment]
    if load_quant:
        import types

        from sglang.srt.mem_cache import kv_cache_dtype as kvd

        original_configure = kvd.configure_kv_cache_dtype

        def configure_with_quant(**kwargs: object) -> object:
            from sglang.srt.configs.load_config import LoadConfig
            from sglang.srt.configs.model_config import ModelConfig
            from sglang.srt.model_loader.weight_utils import get_quant_config

            mc = ModelConfig.from_server_args(captured["server_args"])
            quant = get_quant_config(mc, LoadConfig(load_format="dummy"), {}) \
                if mc.quantization else None
            extra_out["quantization"] = mc.quantization
            extra_out["kv_cache_quant_algo"] = getattr(quant, "kv_cache_quant_algo", None)
            kwargs["model"] = types.SimpleNamespace(quant_config=quant)
            return original_configure(**kwargs)

        kvd.configure_kv_cache_dtype = configure_with_quant

    if class_window:
        import types

        from sglang.srt.model_executor.model_runner_components import load_model_utils
        from sglang.srt.models.registry import ModelRegistry

        original_window = load_model_utils.resolve_sliding_window_size

        def window_of_model_class(model: object, model_config: object) -> object:
            hf_config = model_config.hf_config  # type: ignore[attr-defined]
            cls, _ = ModelRegistry.resolve_model_cls(hf_config.architectures)
            method = getattr(cls, "get_attention_sliding_window_size", None)
            if method is None:
                return original_window(model, model_config)
            extra_out["model_class_window"] = method(types.SimpleNamespace(config=hf_config))
            return extra_out["model_class_window"]

        load_model_utils.resolve_sliding_window_size = window_of_model_class

    sys.path.insert(0, ORACLE_DIR)
    import io

    import sglang_oracle  # the shared oracle, unchanged

    sys.argv = [sys.argv[0], *argv]
    real_stdout = sys.stdout
    buffer = io.StringIO()
    sys.stdout = buffer
    try:
        sglang_oracle.main()
    finally:
        sys.stdout = real_stdout
    out = json.loads(buffer.getvalue())
    out.update(extra_out)
    sa = captured.get("server_args")
    if sa is not None and model_class:
        out.update(_model_class(sa))
    if sa is not None:
        from sglang.srt.arg_groups.overrides import resolving_view

        view = resolving_view(sa)
        for key in ("chunked_prefill_size", "mem_fraction_static", "context_length",
                    "speculative_algorithm", "speculative_num_draft_tokens", "dp_size",
                    "enable_dp_attention"):
            try:
                value = getattr(view, key)
            except Exception as exc:  # report, do not hide
                value = f"ERR {exc}"
            out["resolved_" + key] = value if isinstance(
                value, int | float | str | bool | type(None)) else str(value)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
