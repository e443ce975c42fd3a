"""``import kvledger.check`` and its pytest plugin must not pull torch or transformers: the
plugin is loaded into every pytest session of every environment that installs kvledger."""

from __future__ import annotations

import subprocess
import sys


def test_check_package_and_plugin_import_without_torch() -> None:
    code = (
        "import sys, kvledger, kvledger.check, kvledger.check.pytest_plugin,"
        " kvledger.check.audit, kvledger.check.result,"
        " kvledger.check.arena, kvledger.check.distributed, kvledger.cli.audit;"
        "print(','.join(m for m in ('torch', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_nothing_outside_check_imports_torch_or_transformers() -> None:
    import re
    from pathlib import Path

    import kvledger

    root = Path(kvledger.__file__).parent
    pattern = re.compile(r"^\s*(import|from)\s+(torch|transformers)\b", re.MULTILINE)
    offenders = [
        str(p.relative_to(root)) for p in root.rglob("*.py")
        if p.relative_to(root).parts[0] != "check" and pattern.search(p.read_text())
    ]
    assert offenders == []


def test_audit_function_is_exported_as_audit_model() -> None:
    import pytest

    pytest.importorskip("torch")
    from kvledger.check import audit_model
    from kvledger.check.audit import audit

    assert audit_model is audit
