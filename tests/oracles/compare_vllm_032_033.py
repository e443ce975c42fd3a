"""Compare the vLLM 0.33 answers in ``tests/oracles/vllm-0.33/`` with the vLLM 0.32 lines
they re-asked (each 0.33 line's ``source``: 0.32 file and 0-based line).

Research tool, never imported by the package or the tests. Prints, per 0.33 file, how many
lines it has, how many were answered with a plan, how many failed, and how many differ from
their 0.32 line in ``num_blocks``, ``kv_cache_tokens`` or ``block_size``; then every
differing line with both releases' numbers, every line where only one release gave a plan
(a refusal or error on one side), and the ``EXTRA`` questions (no 0.32 line). Run::

    python3 tests/oracles/compare_vllm_032_033.py            # text
    python3 tests/oracles/compare_vllm_032_033.py --markdown # the same as Markdown tables
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / ".." / "shared"
OUT_DIR = HERE / "vllm-0.33"
KEYS = ("num_blocks", "kv_cache_tokens", "block_size")
# 0.33 files the in-process runners wrote (make_vllm_033_cases.py OTHER_RUNNERS' stems)
OTHER_RUNNERS = ("remote", "tfbackend", "pp-startup", "pp-support", "tokenizer-len")


def source_path(name: str) -> Path:
    if name.startswith("../shared/"):
        return SHARED / name.removeprefix("../shared/")
    return HERE.parents[1] / name


def numbers(case: dict[str, Any]) -> dict[str, Any] | None:
    """num_blocks / kv_cache_tokens / block_size of a line, or None without a plan."""
    exp = case.get("expected")
    if isinstance(exp, dict) and exp.get("num_blocks") is not None:
        return {k: exp.get(k) for k in KEYS}
    if case.get("num_blocks") is not None:  # a start-up file's line
        return {"num_blocks": case["num_blocks"], "kv_cache_tokens": None,
                "block_size": case.get("block_size")}
    return None


def refuses(case: dict[str, Any]) -> bool | None:
    exp = case.get("expected")
    if isinstance(exp, dict):
        return bool(exp.get("vllm_refuses_to_start"))
    if "ok" in case:
        return not case["ok"]
    return None


def short(text: Any, n: int = 110) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= n else s[: n - 1] + "…"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--markdown", action="store_true")
    a = p.parse_args()
    cache: dict[str, list[dict[str, Any]]] = {}
    summary: list[tuple[str, int, int, int, int, int]] = []
    diffs: list[tuple[str, str, dict[str, Any], dict[str, Any], str]] = []
    one_sided: list[tuple[str, str, str, str]] = []
    extras: list[tuple[str, str]] = []
    for path in sorted(OUT_DIR.glob("*.jsonl")):
        if any(path.stem.endswith(f"-{other}") for other in OTHER_RUNNERS):
            continue  # the other runners' own 0.33 files (no "source" line to compare with)
        lines = [json.loads(t) for t in path.read_text().splitlines() if t.strip()]
        planned = failed = compared = differ = 0
        for case in lines:
            new = numbers(case)
            planned += new is not None
            failed += new is None
            src = case["source"]["file"]
            where = f"{src}:{case['source']['line']}"
            if src == "EXTRA":
                got = (f"{new['num_blocks']} blocks, {new['kv_cache_tokens']} tokens, block "
                       f"{new['block_size']}" if new else short(case.get("error"), 160))
                extras.append((f"{case['config']} {case['command'].split(' ', 2)[2]}", got))
                continue
            if src not in cache:
                cache[src] = [json.loads(t) for t in
                              source_path(src).read_text().splitlines() if t.strip()]
            old_case = cache[src][case["source"]["line"]]
            old = numbers(old_case)
            label = f"{where} {case['config']}"
            if old is None or new is None:
                if (old is None) != (new is None):
                    one_sided.append((label, "plan" if old else short(old_case.get("error")),
                                      "plan" if new else short(case.get("error")),
                                      short(case.get("why"), 80)))
                continue
            compared += 1
            changed = any(old[k] != new[k] for k in KEYS if old[k] is not None)
            if changed or refuses(old_case) != refuses(case):
                differ += changed
                note = "" if refuses(old_case) == refuses(case) else \
                    f"refuses: {refuses(old_case)} -> {refuses(case)}"
                if changed or note:
                    diffs.append((label, case["command"], old, new, note))
        summary.append((path.name, len(lines), planned, failed, compared, differ))
    if a.markdown:
        print("| 0.33 file | lines | with plan | no plan | compared | differ |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for row in summary:
            print("| " + " | ".join(str(x) for x in row) + " |")
        print("\n| case | 0.32 blocks / tokens / block | 0.33 blocks / tokens / block | note |")
        print("| --- | --- | --- | --- |")
        for label, _cmd, old, new, note in diffs:
            print(f"| {label} | {old['num_blocks']} / {old['kv_cache_tokens']} / "
                  f"{old['block_size']} | {new['num_blocks']} / {new['kv_cache_tokens']} / "
                  f"{new['block_size']} | {note} |")
        if one_sided:
            print("\n| case | 0.32 | 0.33 | why |")
            print("| --- | --- | --- | --- |")
            for row in one_sided:
                print("| " + " | ".join(row) + " |")
        if extras:
            print("\n| new-behaviour question | 0.33 |")
            print("| --- | --- |")
            for q, got in extras:
                print(f"| {q} | {got} |")
        return
    for name, n, planned, failed, compared, differ in summary:
        print(f"{name}: {n} lines, {planned} with a plan, {failed} without, "
              f"{compared} compared, {differ} differ")
    print(f"\n{len(diffs)} differing lines (num_blocks / kv_cache_tokens / block_size):")
    for label, cmd, old, new, note in diffs:
        print(f"  {label}\n    {short(cmd, 200)}\n    0.32: {old}\n    0.33: {new} {note}")
    print(f"\n{len(one_sided)} lines with a plan in one release only:")
    for label, o, n, why in one_sided:
        print(f"  {label} ({why})\n    0.32: {o}\n    0.33: {n}")
    print(f"\n{len(extras)} new-behaviour questions:")
    for q, got in extras:
        print(f"  {short(q, 200)}\n    0.33: {got}")


if __name__ == "__main__":
    main()
