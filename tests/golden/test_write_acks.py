"""Golden pins of every recording command: its acknowledgement, its refusals, and the log it leaves.

Each scenario is a script of CLI commands on fresh logs in a temporary working directory, run twice: once
with ``--json`` on every command (the acknowledgement documents) and once without (the human
acknowledgements). The stopped clock moves one second between commands and stands still during one, so both
runs write the same bytes, which is checked, and the log is pinned as well as the transcript. A refused
command is pinned with its exit code and stderr, and the log (every file of the folder) must be byte for byte
what it was before it.

The scenarios take in every command of ``plantrail --help`` that writes: create, extend, start, complete,
block, fail, criterion, replan, finish, heartbeat, abandon, request-approval, approve, deny, effect, observe,
checkpoint, fork, import, copy, repair, hook and install / uninstall; with the duplicates under an
idempotency key, late results landing on the orphan path, a scope violation and the coverage warnings.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.golden import golden
from tests.golden.conftest import EPOCH
from tests.golden.golden import SAMPLES, Cli, Invocation, StoppedClock, assert_golden, canonical_json, render, section

#: Between two commands of a scenario the stopped clock moves this much.
STEP = timedelta(seconds=1)


class Scenario:
    """A scenario's CLI in one folder: every command with ``--json`` or without, refusals checked."""

    def __init__(self, cli: Cli, folder: Path, as_json: bool) -> None:
        self.cli, self.folder, self.as_json = cli, folder, as_json

    def __call__(self, *args: str, stdin: str | None = None, json: bool = True) -> Invocation:
        """Run one command (with ``--json`` in the JSON form, unless ``json`` is false); it must not crash."""
        done = self.cli(*args, *(("--json",) if self.as_json and json else ()), stdin=stdin)
        assert done.code != 70, done.err  # error[INTERNAL]: a bug, never a pinned answer
        return done

    def ok(self, *args: str, stdin: str | None = None) -> Invocation:
        """A command that must succeed."""
        done = self(*args, stdin=stdin)
        assert done.code == 0, (done.args, done.err)
        return done

    def refused(self, *args: str, stdin: str | None = None) -> Invocation:
        """A command that must be refused and leave every file of the folder as it was."""
        before = _files(self.folder)
        done = self(*args, stdin=stdin)
        assert done.code != 0, f"{done.args} was not refused"
        assert _files(self.folder) == before, f"{done.args} changed a file although it was refused"
        return done

    def in_folder(self, *args: str) -> Invocation:
        """A command that must succeed and prints the absolute path of the folder it works in: that path, and
        nothing else, reads ``<folder>`` in the pinned output (it is a new temporary folder on every run); the
        Python running plantrail, which install writes into the files it edits, reads ``<python>``."""
        done = self.ok(*args)
        shown = done._replace(out=self._folder_named(done.out), err=self._folder_named(done.err))
        self.cli.ran[-1] = shown
        return shown

    def _folder_named(self, text: str) -> str:
        for spelling in sorted({os.path.realpath(self.folder), str(self.folder)}, key=len, reverse=True):
            text = text.replace(spelling, "<folder>")
        return text.replace(_PYTHON, "<python>")

    def write(self, name: str, value: Any) -> str:
        """Write a JSON input file into the folder; its name."""
        (self.folder / name).write_bytes(orjson.dumps(value))
        return name


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by relative path, but the cache folders beside the logs (``LOG.plantrail-cache``:
    never a source of truth, and a refused writer may refresh its snapshot)."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not any(part.endswith(".plantrail-cache") for part in p.parts)
    }


ScenarioScript = Callable[[Scenario], list[str]]


#: The Python running plantrail, as JSON spells it: install writes it into the files it edits.
_PYTHON = orjson.dumps(os.path.abspath(sys.executable)).decode()[1:-1]


def _run_both_forms(script: ScenarioScript, clock: StoppedClock, tmp_path: Path, name: str) -> None:
    """Run ``script`` with --json and without, in two folders; pin both transcripts and the files it names (its
    logs, and any other file a command wrote), which must be the same bytes in both folders."""
    written: dict[bool, dict[str, bytes]] = {}
    for as_json in (True, False):
        form = "json" if as_json else "human"
        folder = tmp_path / form
        folder.mkdir()
        cli = Cli(clock, EPOCH, STEP)
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(folder)
            kept = script(Scenario(cli, folder, as_json))
        written[as_json] = {file: (folder / file).read_bytes() for file in kept}
        assert_golden(f"write/{name}.{form}.txt", render(cli.ran))
    assert written[True] == written[False], "the --json run and the human run wrote different files"
    files = "".join(section(file, raw.decode("utf-8")) for file, raw in written[True].items())
    files = files.replace(_PYTHON, "<python>")  # install writes the running Python's absolute path
    assert_golden(f"write/{name}.files.txt", files)


# --- the drafts the scenarios plan with ------------------------------------------------------------------------------


def _step(step_id: str, title: str, **terms: Any) -> dict[str, Any]:
    return {"id": step_id, "title": title, "completion_evidence": f"what shows {step_id} done", **terms}


#: Coverage is declared (steps cover criteria) and suite-green is covered by nothing: a warning on create.
LOGIN_DRAFT: dict[str, Any] = {
    "goal": "Fix the login failure and run the tests",
    "acceptance_criteria": [
        {"id": "login-passes", "description": "tests/login.test.ts passes"},
        {"id": "suite-green", "description": "the whole suite passes"},
    ],
    "policy": {"max_in_progress": 2},
    "steps": [
        _step("reproduce", "Reproduce the login failure", covers=["login-passes"]),
        _step("check-config", "Check the auth config"),
        _step("diagnose", "Find the cause", depends_on=["reproduce"]),
        _step("fix", "Fix the token check", depends_on=["diagnose"], covers=["login-passes"]),
        _step("verify", "Run the login tests", depends_on=["fix"], max_attempts=2),
    ],
}

LOGIN_V2: dict[str, Any] = {
    **LOGIN_DRAFT,
    "steps": [
        _step("reproduce", "Reproduce the login failure", covers=["login-passes"]),
        _step("diagnose", "Find the cause", depends_on=["reproduce"]),
        _step("check-timeout", "Measure the auth-service latency", depends_on=["diagnose"]),
        _step("fix", "Handle auth-service timeouts", depends_on=["check-timeout"], covers=["login-passes"]),
        _step("verify", "Run the login tests", depends_on=["fix"], covers=["suite-green"]),
    ],
}

LOGIN_V3_PATCH: dict[str, Any] = {
    "base_version": 2,
    "operations": [
        {"op": "add_step", "step": _step("logout-test", "Add a logout test", depends_on=["fix"])},
        {
            "op": "replace_step",
            "step_id": "verify",
            "step": _step("verify", "Run login and logout tests", depends_on=["fix", "logout-test"]),
        },
        {"op": "add_criterion", "criterion": {"id": "logout-passes", "description": "tests/logout.test.ts passes"}},
    ],
}

EXTENSION: dict[str, Any] = {
    "steps": [_step("docs", "Note the fix in the changelog", depends_on=["fix"])],
    "acceptance_criteria": [{"id": "changelog-noted", "description": "the changelog names the fix"}],
}


def _check(check_id: str, command: str, code: int) -> dict[str, Any]:
    return {"id": check_id, "kind": "command_exit", "command": command, "expected_exit_code": code}


CONTRACT_DRAFT: dict[str, Any] = {
    "goal": "Reject expired sessions with a regression test",
    "scope": {"writes": ["src/session.js", "test/session.test.js", "CHANGELOG.md"], "reads": ["**"]},
    "acceptance_criteria": [
        {
            "id": "expired-gets-401",
            "description": "an expired session gets 401",
            "checks": [_check("status-check", "npm test -- session.test.js", 0)],
        },
    ],
    "steps": [
        _step(
            "reproduce",
            "Add a regression test",
            writes=["test/session.test.js"],
            allowed_tools=["Edit", "Bash"],
            priority=2,
            timeout_s=600,
            checks=[_check("new-test-fails", "npm test -- session.test.js", 1)],
        ),
        _step(
            "implement",
            "Check expiry",
            depends_on=["reproduce"],
            writes=["src/session.js"],
            allowed_tools=["Edit", "Bash"],
            max_attempts=1,
            timeout_s=900,
            checks=[_check("new-test-passes", "npm test -- session.test.js", 0)],
        ),
        _step(
            "changelog",
            "Note the fix",
            depends_on=["implement"],
            writes=["CHANGELOG.md"],
            allowed_tools=["Edit"],
            requires_approval=True,
        ),
        _step(
            "verify",
            "Run the suite and lint",
            depends_on=["implement"],
            writes=[],
            allowed_tools=["Bash"],
            checks=[_check("suite", "npm test", 0), _check("lint", "npm run lint", 0)],
        ),
    ],
    "policy": {"max_in_progress": 1, "max_turns": 12},
}


def _report(check: str | None, code: int, changed: list[str], **more: Any) -> str:
    observations = [] if check is None else [{"check": check, "exit_code": code}]
    report = {"command": "npm test", "exit_code": code, "changed_paths": changed, "observations": observations}
    return orjson.dumps({**report, "tools": ["Edit", "Bash"], **more}).decode()


DIGEST = {
    name: f"sha256:{char * 64}"
    for name, char in (("schema1", "1"), ("schema2", "2"), ("config", "c"), ("client1", "d"), ("client2", "e"))
}

LINEAGE_DRAFT: dict[str, Any] = {
    "goal": "Regenerate the API client from the OpenAPI schema and publish it",
    "inputs": [{"name": "style-guide", "digest": f"sha256:{'5' * 64}", "uri": "docs/client-style.md"}],
    "required_artifacts": [{"step": "generate", "output": "client"}],
    "acceptance_criteria": [{"id": "client-matches-schema", "description": "the client is generated from the schema"}],
    "policy": {"max_in_progress": "unlimited"},
    "steps": [
        _step(
            "snapshot",
            "Snapshot the schema",
            inputs=[{"observation": "repo"}],
            outputs=[{"name": "schema", "media_type": "application/yaml"}],
        ),
        _step(
            "config",
            "Write the generator config",
            inputs=[{"initial": "style-guide"}],
            outputs=[{"name": "config", "media_type": "application/json"}],
        ),
        _step(
            "generate",
            "Generate the client",
            depends_on=["snapshot", "config"],
            inputs=[{"step": "snapshot", "output": "schema"}, {"step": "config", "output": "config"}],
            outputs=[{"name": "client", "media_type": "application/gzip"}],
            covers=["client-matches-schema"],
        ),
        _step(
            "test", "Run the contract tests", depends_on=["generate"], inputs=[{"step": "generate", "output": "client"}]
        ),
        _step("publish", "Publish the client", depends_on=["test"], inputs=[{"step": "generate", "output": "client"}]),
    ],
}


def _staged(draft: dict[str, Any]) -> dict[str, Any]:
    """The lineage plan with a staging release before the publish."""
    steps = [s for s in draft["steps"] if s["id"] != "publish"]
    stage = _step(
        "stage",
        "Publish to the staging registry",
        depends_on=["test"],
        inputs=[{"step": "generate", "output": "client"}],
    )
    publish = _step(
        "publish", "Publish the client", depends_on=["stage"], inputs=[{"step": "generate", "output": "client"}]
    )
    return {**draft, "steps": [*steps, stage, publish]}


# --- the scenarios -----------------------------------------------------------------------------------------------


def replans_script(run: Scenario) -> list[str]:
    """Create (warnings, --strict refusal), extend, the step results, idempotency, replans, late results, finish."""
    draft, v2, v3 = (
        run.write("draft.json", LOGIN_DRAFT),
        run.write("v2.json", LOGIN_V2),
        run.write("v3.json", LOGIN_V3_PATCH),
    )
    run.refused("create", "strict.jsonl", "--plan", draft, "--strict")
    run.ok("create", "run.jsonl", "--plan", draft)
    run.refused("create", "run.jsonl", "--plan", draft)
    run.ok("extend", "run.jsonl", run.write("more.json", EXTENSION))
    run.ok("start", "run.jsonl", "reproduce", "--idempotency-key", "start-reproduce")
    run.ok("start", "run.jsonl", "reproduce", "--idempotency-key", "start-reproduce")  # a duplicate
    run.refused("extend", "run.jsonl", run.write("late.json", {"steps": [_step("late", "Too late")]}))
    run.refused("start", "run.jsonl", "diagnose")
    run.ok("start", "run.jsonl", "check-config", "--actor", "runtime")
    run.ok("complete", "run.jsonl", "reproduce", "-e", "1 failed: expected 200, got 500", "--idempotency-key", "done")
    run.ok("complete", "run.jsonl", "reproduce", "-e", "1 failed: expected 200, got 500", "--idempotency-key", "done")
    run.refused("complete", "run.jsonl", "reproduce", "-e", "other evidence", "--idempotency-key", "done")
    run.refused("complete", "run.jsonl", "check-config", "-e", " ")
    run.refused("start", "run.jsonl", "diagnose", "--expected-seq", "2")
    run.ok("start", "run.jsonl", "diagnose", "--expected-seq", "5")
    run.ok("fail", "run.jsonl", "diagnose", "--error", "the auth stub is missing")
    run.ok("start", "run.jsonl", "diagnose")
    run.ok("complete", "run.jsonl", "diagnose", "-e", "auth service times out", "--evidence-file", draft)
    run.ok("start", "run.jsonl", "fix")
    run.ok("block", "run.jsonl", "fix", "--reason", "the fix needs the auth-service timeout first")
    run.ok("next", "run.jsonl")
    run.ok(
        "replan",
        "run.jsonl",
        "--plan",
        v2,
        "--reason",
        "failed_assumption",
        "--why",
        "the service times out",
        "--caused-by",
        "11",
        "--observation",
        "p95 is 340 ms",
        "--observed",
        "repo=9c1e4f2",
    )
    run.ok("complete", "run.jsonl", "check-config", "--plan-version", "1", "-e", "config is fine")  # late: orphan
    run.refused("start", "run.jsonl", "check-timeout", "--plan-version", "1")
    run.ok("start", "run.jsonl", "check-timeout")
    run.ok("complete", "run.jsonl", "check-timeout", "-e", "p95 340 ms")
    run.ok("start", "run.jsonl", "fix")
    run.ok("complete", "run.jsonl", "fix", "-e", "timeout 200 -> 1000 ms")
    run.ok(
        "replan",
        "run.jsonl",
        "--patch",
        v3,
        "--reason",
        "new_constraint",
        "--why",
        "logout must be covered",
        "--actor",
        "user",
    )
    run.refused("replan", "run.jsonl", "--plan", v2, "--reason", "user_request", "--why", "x", "--plan-version", "2")
    for step in ("logout-test", "verify"):
        run.ok("start", "run.jsonl", step)
        run.ok("complete", "run.jsonl", step, "-e", "-", stdin=f"{step}: 9 passed\n")
    run.ok("criterion", "run.jsonl", "login-passes", "--passed", "-e", "6 passed")
    run.ok("criterion", "run.jsonl", "suite-green", "--failed", "-e", "1 flaky test")
    run.refused("finish", "run.jsonl", "--outcome", "complete", "--reason", "all done")
    run.ok("criterion", "run.jsonl", "suite-green", "--passed", "-e", "48 passed")
    run.ok("criterion", "run.jsonl", "logout-passes", "--passed", "-e", "3 passed", "--idempotency-key", "c1")
    run.ok("criterion", "run.jsonl", "logout-passes", "--passed", "-e", "3 passed", "--idempotency-key", "c1")
    run.ok("finish", "run.jsonl", "--outcome", "complete", "--reason", "login and logout are covered")
    run.refused("complete", "run.jsonl", "verify", "--attempt", "1", "-e", "a worker reports after the finish")
    run.refused("finish", "run.jsonl", "--outcome", "cancelled", "--reason", "again")
    run.ok("verify", "run.jsonl")
    return ["run.jsonl"]


def contract_script(run: Scenario) -> list[str]:
    """Scope, typed checks, leases (heartbeat, abandon, a stale attempt's result), approvals and a scope
    violation, and a run that ends budget_exhausted."""
    outside = {
        **CONTRACT_DRAFT,
        "steps": [{**CONTRACT_DRAFT["steps"][0], "writes": ["package.json"]}, *CONTRACT_DRAFT["steps"][1:]],
    }
    run.refused("create", "bad.jsonl", "--plan", run.write("outside.json", outside))
    run.ok("create", "run.jsonl", "--plan", "-", stdin=orjson.dumps(CONTRACT_DRAFT).decode())
    run.ok("start", "run.jsonl", "reproduce")
    run.refused(
        "complete",
        "run.jsonl",
        "reproduce",
        "-e",
        "the test fails",
        "--report",
        "-",
        stdin=_report("new-test-fails", 0, ["test/session.test.js"]),
    )
    run.ok(
        "complete",
        "run.jsonl",
        "reproduce",
        "-e",
        "expired session gets 200",
        "--report",
        "-",
        stdin=_report("new-test-fails", 1, ["test/session.test.js"], usage={"turns": 2, "tokens": 6100}),
    )
    run.ok("start", "run.jsonl", "implement")
    run.refused("heartbeat", "run.jsonl", "reproduce", "--lease", "30")
    run.ok("heartbeat", "run.jsonl", "implement", "--lease", "1")
    run.cli.wait(5)  # the lease runs out
    run("resume", "run.jsonl")
    run.ok("abandon", "run.jsonl", "implement", "--reason", "worker w1 was killed; its lease expired")
    run.ok(
        "complete",
        "run.jsonl",
        "implement",
        "--attempt",
        "1",
        "-e",
        "w1 finished after all",
        "--report",
        "-",
        stdin=_report("new-test-passes", 0, ["src/session.js"]),
    )  # a stale attempt: orphan
    run.ok("start", "run.jsonl", "implement")
    run.ok("heartbeat", "run.jsonl", "implement")
    run.ok(
        "complete",
        "run.jsonl",
        "implement",
        "-e",
        "expiry compared in ms",
        "--report",
        "-",
        stdin=_report("new-test-passes", 0, ["src/session.js"]),
    )
    run.refused("start", "run.jsonl", "changelog")
    run.ok(
        "request-approval",
        "run.jsonl",
        "changelog-entry",
        "--steps",
        "changelog",
        "--question",
        "May the fix be noted in CHANGELOG.md?",
    )
    run.ok("approve", "run.jsonl", "changelog-entry", "--by", "ana", "--why", "the fix is user-visible")
    run.ok("start", "run.jsonl", "changelog")
    run.ok(
        "complete",
        "run.jsonl",
        "changelog",
        "-e",
        "CHANGELOG.md and the version bumped",
        "--report",
        "-",
        stdin=_report(None, 0, ["CHANGELOG.md", "package.json"]),
    )  # outside the scope: a scope violation
    run.refused("start", "run.jsonl", "verify")
    run.ok(
        "request-approval",
        "run.jsonl",
        "version-bump",
        "--steps",
        "changelog",
        "--writes",
        "package.json",
        "--tool",
        "Bash",
        "--question",
        "May changelog bump the version in package.json?",
    )
    run.ok("approve", "run.jsonl", "version-bump", "--by", "ana", "--why", "a fix release bumps the version")
    run.ok("start", "run.jsonl", "changelog")
    run.ok(
        "complete",
        "run.jsonl",
        "changelog",
        "-e",
        "version 1.4.1",
        "--report",
        "-",
        stdin=_report(None, 0, ["CHANGELOG.md", "package.json"]),
    )
    run.ok("start", "run.jsonl", "verify")
    run.ok(
        "fail",
        "run.jsonl",
        "verify",
        "--error",
        "lint: 1 error",
        "--report",
        "-",
        stdin=_report("lint", 2, [], usage={"turns": 3, "tool_calls": 3}),
    )
    run.ok("request-approval", "run.jsonl", "lint-off", "--steps", "verify", "--question", "May lint be skipped?")
    run.ok("deny", "run.jsonl", "lint-off", "--by", "ana", "--why", "lint stays on")
    run.refused("approve", "run.jsonl", "lint-off")
    run.ok("finish", "run.jsonl", "--outcome", "budget_exhausted", "--reason", "the turn budget is spent")
    run("resume", "run.jsonl")
    return ["run.jsonl"]


def lineage_script(run: Scenario) -> list[str]:
    """Artifacts, an observation that makes work stale, side effects, a keyed checkpoint, forks and a replan of
    the fork, verified against its parent."""
    run.ok("create", "run.jsonl", "--plan", run.write("draft.json", LINEAGE_DRAFT), "--observed", "repo=9c1e4f2")
    for step, output, digest in (("snapshot", "schema", "schema1"), ("config", "config", "config")):
        run.ok("start", "run.jsonl", step)
        run.ok(
            "complete", "run.jsonl", step, "-e", f"{step} written", "--artifact", f"{output}={DIGEST[digest]}@b/{step}"
        )
    run.ok("start", "run.jsonl", "generate")
    run.refused("complete", "run.jsonl", "generate", "-e", "client generated")
    run.ok("complete", "run.jsonl", "generate", "-e", "client generated", "--artifact", f"client={DIGEST['client1']}")
    run.ok("start", "run.jsonl", "test")
    run.ok("observe", "run.jsonl", "repo", "4b7d0a1", "--dirty", "openapi.yaml")
    run.ok("observe", "run.jsonl", "db-schema", "42", "--idempotency-key", "obs")
    run.ok("observe", "run.jsonl", "db-schema", "42", "--idempotency-key", "obs")
    run.ok("start", "run.jsonl", "snapshot")
    run.ok("complete", "run.jsonl", "snapshot", "-e", "schema at 4b7d0a1", "--artifact", f"schema={DIGEST['schema2']}")
    run.ok("start", "run.jsonl", "generate")
    run.ok("complete", "run.jsonl", "generate", "-e", "regenerated", "--artifact", f"client={DIGEST['client2']}")
    run.ok("abandon", "run.jsonl", "test", "--reason", "the client it tests was regenerated")
    run.ok("complete", "run.jsonl", "test", "--attempt", "1", "-e", "48 tests pass on the old client")  # orphan
    run.ok("start", "run.jsonl", "test")
    run.ok("complete", "run.jsonl", "test", "-e", "52 contract tests pass")
    run.ok("start", "run.jsonl", "publish")
    release = ("--requested", "release-1", "--target", "registry: acme-client 1.4.0", "--before", "1.3.2 is latest")
    run.ok("effect", "run.jsonl", "publish", *release)
    run.refused("effect", "run.jsonl", "publish", *release)
    run.refused("effect", "run.jsonl", "publish", "--committed", "never-requested")
    (run.folder / "audit.key").write_bytes(b"k" * 32)
    run.ok("checkpoint", "run.jsonl", "--key-file", "audit.key")
    run.refused("checkpoint", "run.jsonl")
    run.ok("fork", "run.jsonl", "--at-seq", "19", "-o", "fork.jsonl", "--reason", "release through staging first")
    run.ok("fork", "run.jsonl", "--version", "1", "-o", "again.jsonl", "--run", "again")
    run.refused("fork", "run.jsonl", "--at-seq", "19", "-o", "fork.jsonl")
    run.ok(
        "replan",
        "fork.jsonl",
        "--plan",
        run.write("staged.json", _staged(LINEAGE_DRAFT)),
        "--reason",
        "new_constraint",
        "--why",
        "releases go through staging first",
    )
    for step, key in (("stage", "stage-1"), ("publish", "release-2")):
        # the worker names its attempt by its start: the publish the fork carried in flight was cut off too
        started = re.search(r'(?:--started-seq |"started_seq": )(\d+)', run.ok("start", "fork.jsonl", step).out)
        assert started is not None
        run.ok("effect", "fork.jsonl", step, "--requested", key, "--target", f"{step} registry", "--before", "1.3.2")
        run.ok("effect", "fork.jsonl", step, "--committed", key, "--result", "1.4.0 is latest")
        run.ok("complete", "fork.jsonl", step, "-e", f"{step} accepted 1.4.0", "--started-seq", started.group(1))
    run.ok("criterion", "fork.jsonl", "client-matches-schema", "--passed", "-e", "the published client is generate's")
    run.ok("finish", "fork.jsonl", "--outcome", "complete", "--reason", "1.4.0 is released")
    run.ok("verify", "fork.jsonl", "--parent", "run.jsonl")
    run.ok("verify", "run.jsonl", "--key-file", "audit.key")
    return ["run.jsonl", "fork.jsonl", "again.jsonl"]


def _todo_payload(session: str, call: str, items: list[tuple[str, str]]) -> str:
    todos = [{"content": text, "status": status, "activeForm": text} for text, status in items]
    payload = {
        "session_id": session,
        "transcript_path": "transcript.jsonl",
        "cwd": ".",
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": "TodoWrite",
        "tool_input": {"todos": todos},
        "tool_response": {"oldTodos": [], "newTodos": todos},
        "tool_use_id": call,
        "duration_ms": 12,
    }
    return orjson.dumps(payload).decode()


def transport_script(run: Scenario) -> list[str]:
    """import, copy, repair of a torn tail, the Claude Code hook, and install / uninstall of its settings."""
    shutil.copyfile(SAMPLES / "claude-session.jsonl", run.folder / "transcript.jsonl")
    run.ok("import", "transcript.jsonl", "-o", "session.jsonl")
    run.refused("import", "transcript.jsonl", "-o", "session.jsonl")
    run.ok("import", "transcript.jsonl", "-o", "session.jsonl", "--append")
    run.ok("import", "transcript.jsonl", "-o", "first.jsonl", "--run", "first", "--format", "claude-code")
    run.ok("copy", "session.jsonl", "copied.jsonl")
    run.ok("copy", "session.jsonl", "copied.jsonl")  # copied already: skipped
    run.refused("copy", "first.jsonl", "copied.jsonl")  # another run there: LOG_EXISTS
    run.ok("create", "torn.jsonl", "--plan", run.write("draft.json", LOGIN_DRAFT))
    run.ok("start", "torn.jsonl", "reproduce")
    with (run.folder / "torn.jsonl").open("ab") as log:
        log.write(b'{"v":2,"seq":3,"ts":"2026-01')  # a write cut off mid-line
    run.refused("start", "torn.jsonl", "check-config")
    run.refused("repair", "torn.jsonl", "--acked", "3:" + "0" * 64)
    # repair --json ends in error[INTERNAL] (its acknowledgement holds a record that is not encoded) after the
    # repair is done: its human acknowledgement is pinned in both forms until that is fixed.
    run("repair", "torn.jsonl", json=False)
    run.ok("start", "torn.jsonl", "check-config")
    run.ok("hook", "claude", stdin=_todo_payload("s1", "t1", [("Reproduce", "in_progress"), ("Fix", "pending")]))
    run.ok("hook", "claude", stdin=_todo_payload("s1", "t2", [("Reproduce", "completed"), ("Fix", "in_progress")]))
    run.ok("hook", "claude", stdin="not json")
    gemini = _hook_fixture("gemini_session.jsonl")
    for payload in gemini:
        run.ok("hook", "gemini", stdin=payload)
    opencode = _hook_fixture("opencode_events.jsonl")
    run.ok("hook", "opencode", stdin="".join(f"{line}\n" for line in opencode[:2]))
    run.ok("hook", "opencode", stdin=opencode[2])
    run.in_folder("hook", "errors")
    run.in_folder("install", "claude", "--project")
    run.in_folder("install", "claude", "--project")
    run.in_folder("uninstall", "claude", "--project")
    run.refused("create", "demo", "--store", "runs", "--plan", "draft.json")
    (run.folder / "runs").mkdir()
    run.ok("create", "demo", "--store", "runs", "--plan", "draft.json")
    run.ok("start", "demo", "reproduce", "--store", "runs")
    run.ok("status", "demo", "--store", "runs")
    run.ok("copy", "runs", "runs-copy")
    run.ok("runs", "runs-copy")
    logs = ["session.jsonl", "first.jsonl", "copied.jsonl", "torn.jsonl", "runs/demo.jsonl", "runs-copy/demo.jsonl"]
    captured = [n for n in _files(run.folder) if n.startswith(".plantrail/") and not n.endswith(".lock")]
    return [*logs, *captured, ".claude/settings.json", ".claude/settings.json.plantrail-backup"]


def _hook_fixture(name: str) -> list[str]:
    """The suite's payload fixture ``name`` (one payload a line), for a project in the working directory."""
    text = (Path(__file__).resolve().parents[1] / "fixtures" / "hooks" / name).read_text(encoding="utf-8")
    return [line.replace("PROJECT", ".") for line in text.splitlines() if line.strip()]


SCRIPTS: dict[str, ScenarioScript] = {
    "replans": replans_script,
    "contract": contract_script,
    "lineage": lineage_script,
    "transport": transport_script,
}


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_recording_commands_acknowledge_the_same(name: str, stopped_clock: StoppedClock, tmp_path: Path) -> None:
    """Every command of the scenario prints the same acknowledgement (--json and human), refusals the same exit
    code and stderr with nothing written, and the scenario leaves the same log bytes."""
    _run_both_forms(SCRIPTS[name], stopped_clock, tmp_path, name)


# --- the MCP server's tools ----------------------------------------------------------------------------------------

#: Keys an MCP acknowledgement may gain over its golden file (the CLI's --json acknowledgements carry them: a
#: create's ``run``, ``steps`` and ``warnings``, a held result's ``scope_violation``, an effect's ``effect``): one
#: of these in a writing tool's result that its golden entry lacks is checked only to be there. Every other key,
#: and every value of a key the golden entry has, must match exactly.
MCP_ACK_MAY_GAIN = frozenset({"scope_violation", "effect", "warnings", "run", "steps"})
MCP_WRITING_TOOLS = frozenset(
    {"plan_set", "step_start", "step_update", "step_effect", "criterion_verdict", "run_finish"}
)  # the writing tools this scenario calls

_MCP_STEPS = [
    {
        "id": "reproduce",
        "title": "Reproduce the failure",
        "completion_evidence": "failing output",
        "covers": ["tests-pass"],
    },
    {"id": "probe", "title": "Probe the auth service", "completion_evidence": "latency numbers"},
    {
        "id": "fix",
        "title": "Fix it",
        "depends_on": ["reproduce"],
        "completion_evidence": "the diff",
        "covers": ["tests-pass"],
    },
]
_MCP_CRITERIA = [
    {"id": "tests-pass", "description": "the test suite passes"},
    {"id": "docs-updated", "description": "the docs say so"},  # covered by no step: a coverage gap
]


def _mcp_calls() -> list[tuple[str, dict[str, Any]]]:
    """The calls of the MCP scenario, in order: every tool, their refusals, duplicates and a late result."""
    first = {
        "run": "r1",
        "goal": "fix the login",
        "steps": _MCP_STEPS,
        "criteria": _MCP_CRITERIA,
        "max_in_progress": 2,
        "idempotency_key": "plan-1",
    }
    v2_steps = [
        *[s for s in _MCP_STEPS if s["id"] != "probe"],
        {
            "id": "docs",
            "title": "Note it",
            "depends_on": ["fix"],
            "completion_evidence": "changelog",
            "covers": ["docs-updated"],
        },
    ]
    effect = {"run": "r1", "step": "fix", "key": "deploy-1"}
    whole = {"run": "r1", "goal": "fix the login", "criteria": _MCP_CRITERIA}  # what every plan_set restates
    return [
        ("plan_set", first),
        ("plan_set", first),  # a retried first call: the original's acknowledgement
        ("plan_set", {"run": "r1", "goal": "g", "steps": _MCP_STEPS, "criteria": _MCP_CRITERIA}),  # no reason
        ("step_start", {"run": "r1", "step": "fix"}),  # not ready
        ("step_start", {"run": "r1", "step": "reproduce", "idempotency_key": "s1"}),
        ("step_start", {"run": "r1", "step": "reproduce", "idempotency_key": "s1"}),
        ("step_start", {"run": "r1", "step": "probe", "expected_seq": 1}),  # stale: the log ends at 2
        ("step_start", {"run": "r1", "step": "probe", "expected_seq": 2}),
        ("step_update", {"run": "r1", "step": "reproduce", "action": "complete", "evidence": [" "]}),
        ("step_update", {"run": "r1", "step": "reproduce", "action": "complete", "evidence": ["401 seen"]}),
        ("plan_set", {**whole, "steps": v2_steps, "reason": "new_constraint", "why": "the docs must say so"}),
        (
            "step_update",
            {"run": "r1", "step": "probe", "action": "complete", "evidence": "p95 340 ms", "plan_version": 1},
        ),  # a late result: the orphan path
        ("step_start", {"run": "r1", "step": "fix"}),
        ("step_update", {"run": "r1", "step": "fix", "action": "fail", "reason": "the stub is missing"}),
        ("step_start", {"run": "r1", "step": "fix"}),
        ("step_effect", {**effect, "phase": "requested"}),  # no target
        ("step_effect", {**effect, "phase": "requested", "target": "prod", "summary": "v1 serving"}),
        ("step_effect", {**effect, "phase": "committed", "summary": "v2 serving"}),
        ("step_update", {"run": "r1", "step": "fix", "action": "complete", "evidence": "the diff"}),
        ("step_start", {"run": "r1", "step": "docs"}),
        ("step_update", {"run": "r1", "step": "docs", "action": "block", "evidence": ["no access to the wiki"]}),
        ("plan_status", {"run": "r1"}),
        (
            "plan_set",
            {
                **whole,
                "steps": v2_steps,
                "reason": "failed_assumption",
                "why": "docs live in the repo",
                "max_in_progress": 1,
            },
        ),
        ("step_start", {"run": "r1", "step": "docs"}),
        ("step_update", {"run": "r1", "step": "docs", "action": "complete", "evidence": "README updated"}),
        ("criterion_verdict", {"run": "r1", "criterion": "tests-pass", "passed": False, "evidence": "1 failure"}),
        ("run_finish", {"run": "r1", "outcome": "complete", "reason": "too early"}),
        (
            "criterion_verdict",
            {"run": "r1", "criterion": "tests-pass", "passed": True, "evidence": "48 passed", "idempotency_key": "v1"},
        ),
        (
            "criterion_verdict",
            {"run": "r1", "criterion": "tests-pass", "passed": True, "evidence": "48 passed", "idempotency_key": "v1"},
        ),
        ("criterion_verdict", {"run": "r1", "criterion": "docs-updated", "passed": True, "evidence": "README"}),
        ("run_finish", {"run": "r1", "outcome": "complete", "reason": "fixed and documented"}),
        ("run_finish", {"run": "r1", "outcome": "cancelled", "reason": "again"}),
        ("plan_status", {"run": "r1"}),
        ("plan_why", {"run": "r1"}),
        ("plan_why", {"run": "r1", "version": 2}),
        ("run_resume", {"run": "r1"}),
        ("plan_set", {"run": "r2", "goal": "pause it", "steps": _MCP_STEPS[:1], "criteria": _MCP_CRITERIA[:1]}),
        ("run_finish", {"run": "r2", "outcome": "paused", "reason": "waiting for review"}),
        ("run_resume", {"run": "r2"}),
        ("plan_status", {"run": "../outside"}),
        ("plan_status", {"run": "nobody"}),
        ("plan_why", {"run": "r2"}),
    ]


def _outcome(tool: str, arguments: dict[str, Any], outcome: Any, folder: Path) -> dict[str, Any]:
    """One call as the golden file keeps it: the structured result, or a tool error's text, where the runs
    folder's absolute path (a new temporary folder on every run: a missing log's error names it) reads
    ``<runs>``; nothing else is rewritten."""
    entry: dict[str, Any] = {"tool": tool, "arguments": arguments, "is_error": bool(outcome.is_error)}
    if outcome.is_error:
        text = " ".join(part.text for part in outcome.content)
        entry["error"] = text.replace(os.path.realpath(folder), "<runs>").replace(str(folder), "<runs>")
    else:
        structured = outcome.structured_content
        entry["result"] = structured.get("result", structured) if isinstance(structured, dict) else structured
    return entry


async def _mcp_session(folder: Path, clock: StoppedClock) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every call of :func:`_mcp_calls` through the SDK's in-process client (the clock set before each as a
    scenario's CLI sets it, one :data:`STEP` apart), then both resources of r1."""
    from mcp import Client

    from plantrail.cli.mcp_server import build_server

    entries: list[dict[str, Any]] = []
    from mcp.types import Implementation

    # The client names itself, as the plan server's plan records keep it (not the SDK's default, which may change).
    async with Client(build_server(folder), client_info=Implementation(name="golden-client", version="1.0")) as client:
        for index, (tool, arguments) in enumerate(_mcp_calls()):
            clock.set(EPOCH + STEP * index)
            before = _files(folder) if folder.exists() else {}
            entry = _outcome(tool, arguments, await client.call_tool(tool, arguments), folder)
            if entry["is_error"] or tool not in MCP_WRITING_TOOLS:
                assert _files(folder) == before, f"{tool} {arguments} changed a log although it wrote nothing"
            entries.append(entry)
        resources = {}
        for uri in ("plantrail://runs/r1/plan", "plantrail://runs/r1/receipt"):
            read = await client.read_resource(uri)
            resources[uri] = [orjson.loads(part.text) for part in read.contents]
    return entries, resources


def _without_gained(actual: list[dict[str, Any]], expected: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``actual`` less the keys a writing tool's acknowledgement gained (see :data:`MCP_ACK_MAY_GAIN`): a key of
    that set it has and its golden entry (the one at the same place) has not. Nothing else is touched."""
    kept: list[dict[str, Any]] = []
    for index, entry in enumerate(actual):
        known = expected[index] if index < len(expected) else {}
        result, was = entry.get("result"), known.get("result")
        if entry["tool"] in MCP_WRITING_TOOLS and isinstance(result, dict) and isinstance(was, dict):
            gained = {key for key in MCP_ACK_MAY_GAIN if key in result and key not in was}
            entry = {**entry, "result": {k: v for k, v in result.items() if k not in gained}}
        kept.append(entry)
    return kept


def _assert_mcp_golden(name: str, actual: list[dict[str, Any]]) -> None:
    """The MCP calls equal their golden file but for the keys an acknowledgement may gain (written whole when
    updating)."""
    path = golden.EXPECTED / name
    expected = orjson.loads(path.read_bytes()) if path.exists() and not golden.UPDATING else []
    assert_golden(name, canonical_json(actual if golden.UPDATING else _without_gained(actual, expected)))


def test_mcp_tools_answer_the_same(stopped_clock: StoppedClock, tmp_path: Path) -> None:
    """Every MCP tool returns the same JSON (an acknowledgement may only gain the keys of MCP_ACK_MAY_GAIN), a
    refused call the same tool error with the log unchanged, and the session leaves the same logs."""
    if os.environ.get("CI") != "true":  # the SDK comes with the test extra; CI must have it
        pytest.importorskip("mcp")
    import anyio

    entries, resources = anyio.run(_mcp_session, tmp_path / "runs", stopped_clock)
    _assert_mcp_golden("mcp/calls.json", entries)
    assert_golden("mcp/resources.json", canonical_json(resources))
    logs = sorted((tmp_path / "runs").glob("*.jsonl"))
    assert [p.name for p in logs] == ["r1.jsonl", "r2.jsonl"]
    assert_golden("mcp/logs.txt", "".join(section(p.name, p.read_bytes().decode("utf-8")) for p in logs))
