#!/usr/bin/env python3
"""Ask SGLang 0.5.23 how it lowers mem_fraction_static for a vision model.

Research tool (oracle venv; never imported by kvledger, never run by CI). For each config it
builds SGLang's ``ModelConfig`` on CPU and prints ``is_multimodal`` and
``adjust_mem_fraction_for_vlm(0.83, model_config, False, 81559)`` (arg_groups/memory_hook.py):

    /work/oracle/sglang/venv/bin/python scripts/oracles/sglang_vlm_fraction.py CONFIG.json ...

Recorded for tests/plan/engines/sglang/test_rules.py (test_vision_models_lower_mem_fraction_static):
Qwen3.5-35B-A3B → multimodal, 0.7675554687499999; gemma-3-27b-it and Llama-4-Scout → not
multimodal by default (the function alone would give 0.75508115234375 and 0.6561593098958333).
"""

import json
import logging
import os
import shutil
import sys
import tempfile


def main() -> None:
    logging.disable(logging.WARNING)
    import sglang.srt.arg_groups.mamba_hook as mh

    mh._platform_supports_mamba_cache_extra_buffer = lambda: True  # as on CUDA
    import sglang.srt.layers.quantization as q
    from sglang.srt import runtime_context as rc
    from sglang.srt.arg_groups.memory_hook import adjust_mem_fraction_for_vlm
    from sglang.srt.configs.model_config import ModelConfig
    from sglang.srt.layers.quantization.mxfp4 import Mxfp4Config
    from sglang.srt.server_args import ServerArgs

    for registry in (q.BASE_QUANTIZATION_METHODS, q.QUANTIZATION_METHODS):
        registry.setdefault("mxfp4", Mxfp4Config)
    for path in sys.argv[1:]:
        folder = tempfile.mkdtemp()
        shutil.copy(path, os.path.join(folder, "config.json"))
        sa = ServerArgs(model_path=folder, skip_tokenizer_init=True, device="cpu",
                        load_format="dummy", mem_fraction_static=0.9)
        sa.resolve_once()
        rc.publish(sa, role="scheduler")
        mc = ModelConfig.from_server_args(sa)
        print(json.dumps({"config": os.path.basename(path), "is_multimodal": mc.is_multimodal,
                          "adjusted_0.83": adjust_mem_fraction_for_vlm(0.83, mc, False,
                                                                       81559)}))
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
