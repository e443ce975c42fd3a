"""The size grammars moved to ``kvledger.sizes`` (the library's ``PlanRequest`` reads them
too, and the library knows no command line); kept here for the CLI modules that import it."""

from kvledger.sizes import (
    AUTO,
    MAX_SIZE,
    SizeError,
    sglang_int,
    size,
    vllm_int,
    vllm_int_or_auto,
)

__all__ = ["AUTO", "MAX_SIZE", "SizeError", "sglang_int", "size", "vllm_int", "vllm_int_or_auto"]
