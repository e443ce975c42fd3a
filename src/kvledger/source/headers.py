"""Safetensors headers → exact tensor bytes per dtype, refusing any header the safetensors
library itself would refuse.

A safetensors file is an 8-byte little-endian header length ``N``, ``N`` bytes of JSON (one
entry per tensor: ``dtype``, ``shape``, ``data_offsets`` into the data that follows, plus an
optional ``__metadata__`` map of strings), then the data. Only the header is read.

The rules are the library's own, so that "exact" means "what safetensors would load":
``read_metadata`` and ``Metadata::validate`` in safetensors' ``src/tensor.rs`` (a header of at
most 100,000,000 bytes that fits in the file; tensors sorted by offset start at 0 and follow
each other with no gap or overlap; ``end − begin`` equals ``numel × element size`` with no
overflow of 64 bits; the last ``end`` is the end of the file), and the dtype vocabulary of
safetensors 0.8.0 (the 22 names its parser lists when given an unknown one; bit widths as its
``torch`` bridge stores them, sub-byte types packed, a tensor ending off a byte boundary
refused). Shapes and offsets must be non-negative integers (the parser reads them as
``usize``; JSON ``true`` or ``8.0`` are refused).

Rejected alternative: the previous reader fell back to a tensor's byte range when its dtype
was unknown, so a header with dtype "Q7" or a negative shape was summed and labelled exact.

Besides the bytes per dtype, the reader keeps apart the floating-point tensors whose names mark
them as a quantization method's companions (``QUANT_AUX_SUFFIXES``: weight and activation
scales, zero points, group indices): the engine casts ordinary floating weights to the dtype it
serves in, but loads those into parameters of their own dtype (``kvledger.plan.weights`` says
which, from vLLM's source). A header states facts; which bytes change on the GPU is the plan's
business, so this module only labels them.

It also sums the bytes of each decoder layer by its index (``tensor_group``: names
``[model.|model.language_model.|language_model.model.]layers.<i>.``) and of the tensors whose
names say ``mtp``: a checkpoint's multi-token-prediction layers sit after the last decoder
layer (DeepSeek, GLM: ``model.layers.<num_hidden_layers>.*``) or under an ``mtp`` name
(Qwen3-Next, Qwen3.5, MiMo, ERNIE), and whether the engine loads them is again the plan's
business (``kvledger.plan.weights``).
"""

from __future__ import annotations

import json
import os
import re
import struct
from collections.abc import Iterable, Mapping
from typing import Any

from kvledger.records import field, record

# safetensors 0.8.0's dtypes → bits per element.
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64,
    "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}
# Floating-point dtypes an engine casts to its serving dtype when it loads an ordinary weight.
FLOAT_DTYPES = frozenset({"F16", "BF16", "F32", "F64"})
# Storage types of quantized weights (8-bit and smaller floats, integers packing sub-byte
# values). A checkpoint holding any of them is quantized; BOOL / I64 / U64 are not listed
# (position-id buffers and masks in plain checkpoints).
QUANTIZED_DTYPES = frozenset({
    "U8", "I8", "I16", "U16", "I32", "U32", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ",
    "F8_E5M2FNUZ", "F4", "F6_E2M3", "F6_E3M2",
})
# The last component of a tensor name that marks a quantization companion: the names vLLM's
# quantization methods register (``fp8.py`` weight_scale / weight_scale_inv / input_scale,
# ``modelopt.py`` weight_scale_2, ``kv_cache.py`` k_scale / v_scale / q_scale / prob_scale,
# compressed-tensors weight_zero_point / weight_g_idx / weight_global_scale, GPTQ/AWQ scales /
# qzeros / g_idx). Matched as a suffix of the last component (w13_weight_scale, ...).
QUANT_AUX_SUFFIXES = (
    "_scale", "_scale_inv", "_scale_2", "_zero_point", "_g_idx", "scales", "qzeros", "g_idx",
)
MAX_HEADER_BYTES = 100_000_000  # MAX_HEADER_SIZE in safetensors' src/tensor.rs
_INDEX = "safetensors index"
_USIZE_LIMIT = 1 << 64  # the parser's usize: shapes, offsets and byte counts must fit


@record(frozen=True)
class SafetensorsTotals:
    """A checkpoint's tensor bytes, per safetensors dtype, and where they were read."""

    total_bytes: int
    by_dtype: dict[str, int]
    files: int
    how: str
    # Of ``by_dtype``, the floating-point bytes of quantization companions (scales, zero
    # points: ``is_quant_aux``), by dtype. Empty for a checkpoint without them.
    aux_by_dtype: dict[str, int] = field(default_factory=dict)
    # Of ``by_dtype``, the bytes of each ``tensor_group`` ("layer:<i>", "mtp"), by dtype, and
    # of those the quantization companions. None: not told apart (an index's total size, or a
    # header cache written before the groups were kept).
    groups: dict[str, dict[str, int]] | None = None
    group_aux: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def quantized(self) -> bool:
        """Whether any tensor is stored in a quantized type (``QUANTIZED_DTYPES``)."""
        return any(d in QUANTIZED_DTYPES for d, n in self.by_dtype.items() if n)

    def detail(self) -> str:
        """``"safetensors headers of 2 files: BF16 16,060,522,496 B"`` (largest dtype first)."""
        parts = ", ".join(f"{dtype} {size:,} B" for dtype, size in
                          sorted(self.by_dtype.items(), key=lambda kv: (-kv[1], kv[0])))
        return f"{self.how}: {parts}" if parts else self.how


def malformed(where: str, why: str, what: str = "safetensors header") -> Exception:
    from kvledger.errors import SafetensorsError

    return SafetensorsError(
        f"{where}: malformed {what} ({why})",
        hint="the checkpoint file is damaged or not safetensors; re-download it, or give "
             "the KV budget with --kv-cache-memory-bytes",
    )


def is_quant_aux(name: str) -> bool:
    """Whether a tensor name marks a quantization companion (``QUANT_AUX_SUFFIXES``)."""
    return name.rsplit(".", 1)[-1].endswith(QUANT_AUX_SUFFIXES)


_LAYER_NAME = re.compile(r"(?:model\.|model\.language_model\.|language_model\.model\.)?"
                         r"layers\.(\d+)\.")


def tensor_group(name: str) -> str | None:
    """``"mtp"`` for a tensor whose name says so, ``"layer:<i>"`` for one of decoder layer
    ``i`` (the name forms vLLM's ``get_spec_layer_idx_from_weight_name`` matches, and the
    Hugging Face form of a wrapper's language model), else None."""
    if "mtp" in name:
        return "mtp"
    found = _LAYER_NAME.match(name)
    return f"layer:{int(found[1])}" if found else None


def add_group(groups: dict[str, dict[str, int]], key: str, dtype: str, size: int) -> None:
    into = groups.setdefault(key, {})
    into[dtype] = into.get(dtype, 0) + size


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _USIZE_LIMIT


def bytes_by_dtype(
    tensors: Iterable[tuple[str, Any, Any, Any]],
    where: str,
    *,
    metadata: Any = None,
    data_len: int | None = None,
    aux: dict[str, int] | None = None,
    groups: dict[str, dict[str, int]] | None = None,
    group_aux: dict[str, dict[str, int]] | None = None,
) -> dict[str, int]:
    """Validate ``(name, dtype, shape, data_offsets)`` entries; tensor bytes per dtype.

    ``data_len`` (the file size minus the header) is checked against the last offset when
    known: a local file, not a remote header. ``aux``, when given, also receives the bytes of
    floating-point quantization companions (``is_quant_aux``) by dtype; ``groups`` and
    ``group_aux`` the same per ``tensor_group``.
    """
    if metadata is not None and not (
        isinstance(metadata, Mapping)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        raise malformed(where, "__metadata__ must map strings to strings")
    spans: list[tuple[int, int, str]] = []
    out: dict[str, int] = {}
    for name, dtype, shape, offsets in tensors:
        bits = DTYPE_BITS.get(dtype) if isinstance(dtype, str) else None
        if bits is None:
            raise malformed(where, f"tensor {name!r} has unknown dtype {dtype!r}")
        if not isinstance(shape, list | tuple) or not all(_count(d) for d in shape):
            raise malformed(where, f"tensor {name!r} shape {shape!r} is not a list of "
                                    "non-negative integers")
        if not isinstance(offsets, list | tuple) or len(offsets) != 2 or \
                not all(_count(o) for o in offsets):
            raise malformed(where, f"tensor {name!r} data_offsets {offsets!r} are not two "
                                    "non-negative integers")
        numel = 1
        for d in shape:
            numel *= d
        nbits = numel * bits
        if numel >= _USIZE_LIMIT or nbits >= 8 * _USIZE_LIMIT:
            raise malformed(where, f"tensor {name!r} shape {list(shape)} overflows")
        if nbits % 8:
            raise malformed(where, f"tensor {name!r} ({dtype} × {numel}) does not end on a "
                                    "byte boundary")
        begin, end = int(offsets[0]), int(offsets[1])
        if end - begin != nbits // 8:
            raise malformed(where, f"tensor {name!r} data_offsets [{begin}, {end}] hold "
                                    f"{end - begin} bytes, its {dtype} shape {list(shape)} "
                                    f"needs {nbits // 8}")
        spans.append((begin, end, str(name)))
        out[dtype] = out.get(dtype, 0) + nbits // 8
        companion = dtype in FLOAT_DTYPES and is_quant_aux(str(name))
        if aux is not None and companion:
            aux[dtype] = aux.get(dtype, 0) + nbits // 8
        group = tensor_group(str(name)) if groups is not None else None
        if group is not None and groups is not None:
            add_group(groups, group, dtype, nbits // 8)
            if companion and group_aux is not None:
                add_group(group_aux, group, dtype, nbits // 8)
    position = 0
    for begin, end, name in sorted(spans):
        if begin != position:
            raise malformed(where, f"tensor {name!r} starts at byte {begin}, expected "
                                    f"{position} (tensors must follow each other)")
        position = end
    if data_len is not None and position != data_len:
        raise malformed(where, f"tensors cover {position:,} bytes but the file holds "
                                f"{data_len:,} after the header (truncated or padded)")
    return out


def header_entries(header: Any, where: str) -> tuple[Any, list[tuple[str, Any, Any, Any]]]:
    """(``__metadata__``, tensor entries) of a decoded header object."""
    if not isinstance(header, dict):
        raise malformed(where, f"expected a JSON object, got {type(header).__name__}")
    entries = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(entry, dict):
            raise malformed(where, f"tensor {name!r} is not an object")
        missing = [k for k in ("dtype", "shape", "data_offsets") if k not in entry]
        if missing:
            raise malformed(where, f"tensor {name!r} lacks {', '.join(missing)}")
        entries.append((name, entry["dtype"], entry["shape"], entry["data_offsets"]))
    return header.get("__metadata__"), entries


def read_file_header(path: str, aux: dict[str, int] | None = None,
                     groups: dict[str, dict[str, int]] | None = None,
                     group_aux: dict[str, dict[str, int]] | None = None) -> dict[str, int]:
    """Tensor bytes per dtype of one local safetensors file (reads its header only);
    ``aux``, ``groups`` and ``group_aux`` as for ``bytes_by_dtype``."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            raw = fh.read(8)
            if len(raw) != 8:
                raise malformed(path, "shorter than 8 bytes")
            (length,) = struct.unpack("<Q", raw)
            if length > MAX_HEADER_BYTES:
                raise malformed(path, f"header of {length:,} bytes exceeds safetensors' "
                                       f"limit of {MAX_HEADER_BYTES:,}")
            if 8 + length > size:
                raise malformed(path, f"header of {length:,} bytes does not fit in a file "
                                       f"of {size:,} (truncated)")
            text = fh.read(length)
    except OSError as exc:
        raise malformed(path, f"cannot read: {exc.strerror}") from None
    try:
        header = json.loads(text.decode("utf-8"))
    except UnicodeDecodeError:
        raise malformed(path, "header is not UTF-8") from None
    except json.JSONDecodeError as exc:
        raise malformed(path, f"header is not JSON: {exc.msg}") from None
    except RecursionError:
        raise malformed(path, "header JSON nests too deeply") from None
    metadata, entries = header_entries(header, path)
    return bytes_by_dtype(entries, path, metadata=metadata, data_len=size - 8 - length, aux=aux,
                          groups=groups, group_aux=group_aux)


def add(into: dict[str, int], more: Mapping[str, int]) -> dict[str, int]:
    for dtype, size in more.items():
        into[dtype] = into.get(dtype, 0) + size
    return into


def weight_files(directory: str) -> tuple[list[str], str] | None:
    """The safetensors files a loader would read from ``directory``, and why those.

    Transformers' and huggingface_hub's order: ``model.safetensors``, else the files named in
    ``model.safetensors.index.json`` (which may be absent locally: a cache snapshot holds the
    index without the shards), else every ``*.safetensors`` (a hand-made directory). Mistral
    repositories also hold a ``consolidated.safetensors`` beside the shards: reading every file
    would count the weights twice.
    """
    single = os.path.join(directory, "model.safetensors")
    if os.path.isfile(single):
        return [single], "model.safetensors"
    index = os.path.join(directory, "model.safetensors.index.json")
    if os.path.isfile(index):
        names = index_files(index)
        return [os.path.join(directory, n) for n in names], "model.safetensors.index.json"
    try:
        found = sorted(n for n in os.listdir(directory) if n.endswith(".safetensors"))
    except OSError:
        return None
    if not found:
        return None
    return [os.path.join(directory, n) for n in found], "*.safetensors"


def read_index(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.loads(fh.read())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise malformed(path, f"not readable JSON: {type(exc).__name__}", _INDEX) from None
    if not isinstance(data, dict):
        raise malformed(path, "not a JSON object", _INDEX)
    return data


def index_files(path: str) -> list[str]:
    """The shard file names of a ``model.safetensors.index.json`` (its ``weight_map``)."""
    weight_map = read_index(path).get("weight_map")
    if not isinstance(weight_map, dict):
        raise malformed(path, "weight_map is not an object", _INDEX)
    names = set()
    for shard in weight_map.values():
        if not isinstance(shard, str) or not shard or shard.startswith(("/", "\\")) or \
                ".." in shard.replace("\\", "/").split("/"):
            raise malformed(path, f"weight_map names shard {shard!r}", _INDEX)
        names.add(shard)
    return sorted(names)


def index_total_size(path: str) -> int | None:
    """``metadata.total_size`` of an index when it is a plausible byte count, else None."""
    metadata = read_index(path).get("metadata")
    size = metadata.get("total_size") if isinstance(metadata, dict) else None
    return size if isinstance(size, int) and _count(size) and size > 0 else None


def local_totals(directory: str) -> SafetensorsTotals | None:
    """Exact bytes from a local directory's safetensors, or None when they are not all here."""
    found = weight_files(directory)
    if found is None:
        return None
    files, _ = found
    if not files or not all(os.path.isfile(f) for f in files):
        return None
    by_dtype: dict[str, int] = {}
    aux: dict[str, int] = {}
    groups: dict[str, dict[str, int]] = {}
    group_aux: dict[str, dict[str, int]] = {}
    for f in files:
        add(by_dtype, read_file_header(f, aux, groups, group_aux))
    how = f"safetensors headers of {len(files)} file{'s' if len(files) > 1 else ''}"
    return SafetensorsTotals(sum(by_dtype.values()), by_dtype, len(files), how, aux, groups,
                             group_aux)


def index_totals(directory: str) -> SafetensorsTotals | None:
    """The index's ``metadata.total_size`` when the shards are not at hand: exact in total
    (the size the checkpoint's writer recorded), without a split by dtype."""
    index = os.path.join(directory, "model.safetensors.index.json")
    if not os.path.isfile(index):
        return None
    total = index_total_size(index)
    if total is None:
        return None
    return SafetensorsTotals(total, {}, 0, "model.safetensors.index.json metadata.total_size "
                                           "(shards not present)")
