"""SGLang 0.5.23, as kvledger reproduces it (its rules: the modules of ``plan/engines/sglang/``,
each citing SGLang 0.5.23's source; its cases: ``tests/oracles/sglang-0.5.23/``)."""

from __future__ import annotations

from kvledger.plan.engines.sglang.releases.profile import SglangRelease

RELEASE = SglangRelease(engine="sglang", product="SGLang", version="0.5.23",
                        flag_table="sglang-0.5.23.json")
