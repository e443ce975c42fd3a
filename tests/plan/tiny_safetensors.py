"""A safetensors file written by hand (header + zero bytes), for weights tests that need exact
tensor names, dtypes and sizes without the safetensors library."""

from __future__ import annotations

import json
import struct
from pathlib import Path

WIDTH = {"BF16": 2, "F32": 4, "F8_E4M3": 1}


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> None:
    """``{name: (dtype, shape)}`` laid out one after another, in order."""
    header: dict[str, object] = {}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = WIDTH[dtype]
        for d in shape:
            size *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)
