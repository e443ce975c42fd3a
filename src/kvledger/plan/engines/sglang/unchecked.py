"""Model types kvledger derives that have not been put to SGLang 0.5.23 yet.

The breadth rows (derive/model_types.py, last block) were checked against vLLM's own numbers
only. Whether SGLang serves them, and with which pool, no SGLang oracle run has said, so the
SGLang layout refuses them as not checked (as ``served.backend`` refuses an architecture it
has no verdict for) rather than give an unchecked number. A row leaves this table with its
SGLang oracle case (tests/plan/test_sglang_every_type.py).
"""

from __future__ import annotations

from collections.abc import Mapping

UNCHECKED_MODEL_TYPES: Mapping[str, str] = dict.fromkeys(
    ("glm4_moe_lite", "glm4", "apertus", "seed_oss", "granitemoeshared", "cohere2",
     "lfm2_moe", "exaone_moe", "olmo", "glm", "arcee", "jais2", "smollm3", "vaultgemma",
     "flex_olmo", "hunyuan_v1_dense", "cwm"),
    "checked against vLLM's own numbers only",
)


def unchecked_reason(model_type: str) -> str:
    """Why SGLang's answer for ``model_type`` is not reproduced ("" when it has been checked)."""
    why = UNCHECKED_MODEL_TYPES.get(model_type)
    if why is None:
        return ""
    return (f"model_type '{model_type}' has not been checked against SGLang 0.5.23 ({why}; no "
            "SGLang oracle case yet): not reproduced yet")
