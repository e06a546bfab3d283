"""Only `plantrail export otel` loads OpenTelemetry: one module of the package imports the SDK, only the export
command imports that module, and no command that records loads any `opentelemetry` module."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from plantrail.ledger.api import Ledger
from tests.helpers.otlp import Collector
from tests.project.import_graph import read_graph

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "login-fix-replans.jsonl"

_SCRIPT = """
import sys
from plantrail.cli.entry import main
try:
    code = main(sys.argv[2:])
finally:
    with open(sys.argv[1], "w") as out:
        out.write("\\n".join(sorted(sys.modules)))
sys.exit(code)
"""

#: Commands that record, in an order that works on one fresh log (each run as a whole process).
_WRITES: tuple[tuple[str, ...], ...] = (
    ("start", "s0"),
    ("heartbeat", "s0", "--lease", "60"),
    ("complete", "s0", "-e", "pytest: 12 passed"),
    ("start", "s1"),
    ("fail", "s1", "--error", "it broke"),
    ("start", "s1"),
    ("block", "s1", "--reason", "waiting on a key"),
    ("criterion", "c", "--passed", "-e", "checked"),
    ("finish", "--outcome", "failed", "--reason", "stopped here"),
)


def _otel_importers() -> set[str]:
    graph = read_graph()
    found = set()
    for module, path in graph.files.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            if any(name == "opentelemetry" or name.startswith("opentelemetry.") for name in names):
                found.add(module)
    return found


def test_one_module_imports_the_sdk_and_only_the_export_command_imports_it() -> None:
    """`plantrail.cli.otel_sdk` is the package's only importer of `opentelemetry`, and only
    `plantrail.cli.export_otel` imports it."""
    assert _otel_importers() == {"plantrail.cli.otel_sdk"}
    graph = read_graph()
    users = {m for m, targets in graph.runtime.items() if "plantrail.cli.otel_sdk" in targets}
    assert users == {"plantrail.cli.export_otel"}


def _loaded(folder: Path, argv: list[str]) -> set[str]:
    out = folder / "modules.txt"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PLANTRAIL_", "OTEL_"))}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(out), *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"plantrail {argv} failed: {done.stdout}{done.stderr}"
    return set(out.read_text().split())


def test_no_recording_command_loads_opentelemetry(tmp_path: Path) -> None:
    """`create` and each command that records, run as a whole process, load no `opentelemetry` module, while
    `export otel` of the same log loads the SDK and its exporter (so the check can see one)."""
    draft = tmp_path / "draft.json"
    draft.write_text(
        '{"goal": "g", "acceptance_criteria": [{"id": "c", "description": "d"}], "steps": ['
        '{"id": "s0", "title": "one", "depends_on": [], "completion_evidence": "out"},'
        '{"id": "s1", "title": "two", "depends_on": [], "completion_evidence": "out"}]}'
    )
    log = tmp_path / "run.jsonl"
    loaded = {"create": _loaded(tmp_path, ["create", str(log), "--plan", str(draft)])}
    for command, *args in _WRITES:
        loaded[" ".join([command, *args])] = _loaded(tmp_path, [command, str(log), *args])
    otel = {name: sorted(m for m in modules if m.startswith("opentelemetry")) for name, modules in loaded.items()}
    assert all(not found for found in otel.values()), otel
    with Ledger.open(log) as ledger:
        assert ledger.state.outcome == "failed"  # every command above was recorded
    collector = Collector()
    try:
        exported = _loaded(tmp_path, ["export", "otel", str(log), "--endpoint", collector.endpoint])
    finally:
        collector.close()
    assert {"opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.http.trace_exporter"} <= exported
    assert len(collector.spans()) == 5  # the run, its version and three attempts
    helped = _loaded(tmp_path, ["export", "otel", "--help"])
    assert not any(m.startswith("opentelemetry") for m in helped)  # its help loads no SDK either
