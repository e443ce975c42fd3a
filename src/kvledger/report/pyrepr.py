"""Read the Python reprs that engines print at start-up, without evaluating anything.

vLLM logs ``non-default args: {'model': 'x', 'tensor_parallel_size': 2, ...}`` (a dict repr)
and ``Initializing a V1 LLM engine (v0.11.0) with config: model='x', dtype=torch.bfloat16,
speculative_config=SpeculativeConfig(method='mtp', ...), compilation_config={"level":3}``
(``key=value`` pairs whose values are reprs, bare words, JSON, or object reprs such as
``<CUDAGraphMode.FULL: 2>``); SGLang logs ``server_args=ServerArgs(model_path='x', ...)``.

Why a small parser and not ``ast.literal_eval``: the values are not all literals
(``torch.bfloat16``, ``auto``, ``SpeculativeConfig(...)``, ``<Enum: 1>``), and one unreadable
value must not lose the whole line. ``eval`` is out of the question for text pasted from the
internet. So: literals become Python values; a call ``Name(k=v, ...)`` becomes a dict of its
keyword arguments plus ``"__class__": "Name"``; anything else becomes its raw text.
"""

from __future__ import annotations

import re
from typing import Any

_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_NAME = re.compile(r"[A-Za-z_][\w.]*")
_KEY = re.compile(r"\s*([A-Za-z_]\w*)\s*=(?!=)")
_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSE = {")", "]", "}"}
_WORDS: dict[str, Any] = {
    "True": True, "False": False, "None": None, "true": True, "false": False, "null": None,
}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "'": "'", '"': '"'}


class ReprError(ValueError):
    """The text is not a value this parser reads (the caller falls back to raw text)."""


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def _string(text: str, i: int) -> tuple[str, int]:
    quote = text[i]
    i += 1
    out: list[str] = []
    while i < len(text):
        ch = text[i]
        if ch == quote:
            return "".join(out), i + 1
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in "xu" and re.fullmatch(r"[0-9a-fA-F]+",
                                            text[i + 2:i + (4 if nxt == "x" else 6)] or "-"):
                width = 2 if nxt == "x" else 4
                out.append(chr(int(text[i + 2:i + 2 + width], 16)))
                i += 2 + width
                continue
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    raise ReprError("unterminated string")


def raw_until_delimiter(text: str, i: int) -> int:
    """Index of the next top-level ``,`` or unmatched closing bracket from ``i``.

    Quotes and brackets are tracked so that ``Foo(a=1, b=2)`` or ``'x, y'`` stay one value.
    """
    depth: list[str] = []
    while i < len(text):
        ch = text[i]
        if ch in "'\"":
            try:
                _, i = _string(text, i)
            except ReprError:
                return len(text)
            continue
        if ch in _OPEN and (ch != "<" or re.match(r"<[A-Za-z_]", text[i:i + 2])):
            depth.append(_OPEN[ch])
        elif depth and ch == depth[-1]:
            depth.pop()
        elif not depth and (ch == "," or ch in _CLOSE):
            return i
        i += 1
    return i


def _items(text: str, i: int, close: str) -> tuple[list[Any], int]:
    values: list[Any] = []
    i = _skip(text, i)
    while i < len(text) and text[i] != close:
        value, i = parse_value(text, i)
        values.append(value)
        i = _skip(text, i)
        if i < len(text) and text[i] == ",":
            i = _skip(text, i + 1)
        elif i < len(text) and text[i] != close:
            raise ReprError(f"expected ',' or {close!r} at {i}")
    if i >= len(text):
        raise ReprError(f"missing {close!r}")
    return values, i + 1


def _mapping(text: str, i: int) -> tuple[dict[Any, Any] | list[Any], int]:
    i = _skip(text, i + 1)
    out: dict[Any, Any] = {}
    members: list[Any] = []
    while i < len(text) and text[i] != "}":
        key, i = parse_value(text, i)
        i = _skip(text, i)
        if i < len(text) and text[i] == ":":
            value, i = parse_value(text, i + 1)
            out[key if isinstance(key, str | int | float | bool) or key is None
                else str(key)] = value
        else:  # a set repr: keep its members as a list
            members.append(key)
        i = _skip(text, i)
        if i < len(text) and text[i] == ",":
            i = _skip(text, i + 1)
        elif i < len(text) and text[i] != "}":
            raise ReprError(f"expected ',' or '}}' at {i}")
    if i >= len(text):
        raise ReprError("missing '}'")
    return (members if members and not out else out), i + 1


def parse_value(text: str, i: int = 0) -> tuple[Any, int]:
    """One value starting at ``text[i]``; returns it and the index just after it."""
    i = _skip(text, i)
    if i >= len(text):
        raise ReprError("no value")
    ch = text[i]
    if ch in "'\"":
        return _string(text, i)
    if ch in "bru" and i + 1 < len(text) and text[i + 1] in "'\"":
        return _string(text, i + 1)
    if ch == "{":
        return _mapping(text, i)
    if ch == "[":
        return _items(text, i + 1, "]")
    if ch == "(":
        items, end = _items(text, i + 1, ")")
        return tuple(items), end
    if ch == "<":  # <CUDAGraphMode.FULL: 2>, <object at 0x...>: kept as text
        end = text.find(">", i)
        if end < 0:
            raise ReprError("missing '>'")
        return text[i:end + 1], end + 1
    number = _NUMBER.match(text, i)
    if number and not _NAME.match(text, number.end()):
        token = number.group()
        is_int = re.fullmatch(r"[-+]?\d+", token) is not None
        return (int(token) if is_int else float(token)), number.end()
    name = _NAME.match(text, i)
    if name:
        word, end = name.group(), name.end()
        if word in _WORDS:
            return _WORDS[word], end
        if end < len(text) and text[end] == "(":  # Name(k=v, ...)
            close = _matching(text, end)
            args = parse_kwargs(text[end + 1:close])
            return {"__class__": word, **args}, close + 1
        return word, end
    raise ReprError(f"unexpected {ch!r} at {i}")


def _matching(text: str, i: int) -> int:
    """Index of the bracket closing the one at ``text[i]``."""
    end = raw_until_delimiter(text, i + 1)
    while end < len(text) and text[end] == ",":
        end = raw_until_delimiter(text, end + 1)
    if end >= len(text):
        raise ReprError("unbalanced brackets")
    return end


def parse_literal(text: str) -> Any:
    """The whole of ``text`` as one value; ``ReprError`` if anything is left over."""
    value, end = parse_value(text, 0)
    if _skip(text, end) != len(text):
        raise ReprError(f"trailing text at {end}")
    return value


def parse_kwargs(text: str) -> dict[str, Any]:
    """``key=value, key=value, ...`` → dict. A value that is not a readable repr is kept as
    its raw text (``tokenizer_mode=auto`` → ``"auto"``), so one odd value never loses the
    rest. Text that is not ``key=`` where a key should start ends the parse."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(text):
        key = _KEY.match(text, i)
        if key is None:
            break
        start = key.end()
        end = raw_until_delimiter(text, start)
        raw = text[start:end].strip()
        try:
            out[key.group(1)] = parse_literal(raw)
        except (ReprError, RecursionError):
            if raw[:1] not in "'\"([{<":  # a bare word (auto, torch.bfloat16, a/b-c)
                out[key.group(1)] = raw
            # else: a quoted or bracketed value cut short (a truncated paste): dropped
        i = end + 1 if end < len(text) and text[end] == "," else len(text)
    return out
