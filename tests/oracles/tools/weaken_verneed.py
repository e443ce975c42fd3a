#!/usr/bin/env python3
"""Mark one version need of an ELF64 shared object weak (``VER_FLG_WEAK``).

Research tool for the vLLM 0.10.2 oracle venv (``tests/oracles/tools/README.md``): the wheel's
``vllm/_C.abi3.so`` needs ``GLIBCXX_3.4.32`` from libstdc++.so.6 for one symbol that Debian
12's libstdc++ lacks. With that need weak the dynamic loader accepts the older library, and the
symbol binds to ``libglibcxx_3_4_32_shim.so`` (loaded first). Only the flag bit changes::

    python3 weaken_verneed.py FILE.so GLIBCXX_3.4.32
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

SHT_GNU_VERNEED = 0x6FFFFFFE
VER_FLG_WEAK = 0x2


def weaken(data: bytearray, want: bytes) -> list[str]:
    """Set VER_FLG_WEAK on every vernaux entry named ``want``; return what was changed."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise SystemExit("ELF64 little-endian only")
    (e_shoff,) = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum = struct.unpack_from("<HH", data, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize)
            for i in range(e_shnum)]
    changed: list[str] = []
    for sec in secs:
        typ, off, link, info = sec[1], sec[4], sec[6], sec[7]
        if typ != SHT_GNU_VERNEED:
            continue
        stroff = secs[link][4]

        def cstr(o: int, stroff: int = stroff) -> bytes:
            return bytes(data[stroff + o:data.index(b"\0", stroff + o)])

        vn = off
        for _ in range(info):
            _, vn_cnt, vn_file, vn_aux, vn_next = struct.unpack_from("<HHIII", data, vn)
            aux = vn + vn_aux
            for _ in range(vn_cnt):
                _, flags, _, name, aux_next = struct.unpack_from("<IHHII", data, aux)
                if cstr(name) == want:
                    struct.pack_into("<H", data, aux + 4, flags | VER_FLG_WEAK)
                    changed.append(f"{cstr(vn_file).decode()}: {want.decode()} flags "
                                   f"{flags:#x} -> {flags | VER_FLG_WEAK:#x}")
                aux += aux_next
            vn += vn_next
    return changed


def main() -> None:
    path, want = Path(sys.argv[1]), sys.argv[2].encode()
    data = bytearray(path.read_bytes())
    changed = weaken(data, want)
    if not changed:
        raise SystemExit(f"{want.decode()} is not needed by {path}")
    path.write_bytes(bytes(data))
    print("\n".join(changed))


if __name__ == "__main__":
    main()
