"""Bad input: every malformed log, draft, path or argument gets its documented code and exit status, never a
traceback, and leaves the log as it was; a fuzzer feeding the reader arbitrary or mutated bytes only ever
gets documented errors that name a line or a byte offset."""

from __future__ import annotations

import copy
import os
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plantrail.ledger.api import Ledger
from plantrail.ledger.stores.jsonl.log import LogReader
from plantrail.ledger.vocabulary.errors import PlantrailError
from tests.conftest import LOGIN_DRAFT, CliResult, Clock
from tests.helpers.logs import lines_of, rechain, reseal

FUZZ_EXAMPLES = (300, 20_000)


def join(lines: list[bytes]) -> bytes:
    """Lines back into file bytes."""
    return b"".join(line + b"\n" for line in lines)


def edit3(old: bytes, new: bytes) -> Callable[[list[bytes]], bytes]:
    """Replace ``old`` with ``new`` in line 3 and recompute its hash: well framed, wrong inside."""
    return lambda lines: join([*lines[:2], reseal(lines[2].replace(old, new, 1)), *lines[3:]])


def raw3(line: bytes) -> Callable[[list[bytes]], bytes]:
    """Put ``line`` where line 3 was."""
    return lambda lines: join([*lines[:2], line, *lines[3:]])


def second_header(lines: list[bytes]) -> bytes:
    """A second log.opened header, correctly chained, at line 3."""
    return join(rechain([*lines[:2], lines[0], *lines[3:]], 2))


#: Damaged logs: each is read (verify) and written to (start); both must give the code, exit 3 or 4.
LOG_CASES: dict[str, tuple[Callable[[list[bytes]], bytes], str]] = {
    "empty file": (lambda lines: b"", "EMPTY_LOG"),
    "blank line": (lambda lines: join([*lines[:2], b"", *lines[2:]]), "CORRUPT_LINE"),
    "not JSON": (raw3(b"this is not json"), "CORRUPT_LINE"),
    "a JSON array": (raw3(b"[1, 2, 3]"), "CORRUPT_LINE"),
    "a JSON string": (raw3(b'"hello"'), "CORRUPT_LINE"),
    "missing field (actor)": (edit3(b'"actor":"agent",', b""), "CORRUPT_LINE"),
    "seq: true": (edit3(b'"seq":2', b'"seq":true'), "CORRUPT_LINE"),
    'seq: "2"': (edit3(b'"seq":2', b'"seq":"2"'), "CORRUPT_LINE"),
    "negative seq": (edit3(b'"seq":2', b'"seq":-2'), "SEQ_GAP"),
    "unknown event type": (edit3(b'"criterion.verified"', b'"criterion.teleported"'), "FORMAT_TOO_NEW"),
    "unknown member": (edit3(b'"plan_version":1,', b'"plan_version":1,"links":["00-ab-cd-01"],'), "FORMAT_TOO_NEW"),
    "future format version": (edit3(b'{"v":1,', b'{"v":3,'), "FORMAT_TOO_NEW"),
    "v2 line holding only v1 content": (edit3(b'{"v":1,', b'{"v":2,'), "CORRUPT_LINE"),
    "invalid UTF-8": (edit3(b"evidence 0", b"evid\xff\xfence 0"), "CORRUPT_LINE"),
    "overlong UTF-8": (edit3(b"evidence 0", b"evidence \xc0\xaf"), "CORRUPT_LINE"),
    "lone surrogate": (edit3(b"evidence 0", b"evidence \\ud800"), "CORRUPT_LINE"),
    "byte order mark": (lambda lines: b"\xef\xbb\xbf" + join(lines), "CORRUPT_LINE"),
    "CRLF endings": (lambda lines: b"".join(line + b"\r\n" for line in lines), "CORRUPT_LINE"),
    "NaN": (edit3(b'"plan_version":1', b'"plan_version":NaN'), "CORRUPT_LINE"),
    "Infinity": (edit3(b'"plan_version":1', b'"plan_version":Infinity'), "CORRUPT_LINE"),
    "duplicate keys": (edit3(b'"plan_version":1', b'"plan_version":1,"plan_version":1'), "CORRUPT_LINE"),
    "a duplicate key hidden by a space": (
        edit3(b'"plan_version":1', b'"plan_version" :9,"plan_version":1'),
        "CORRUPT_LINE",
    ),
    "a duplicate key hidden by a tab": (edit3(b'"verdict":', b'"verdict"\t:"failed","verdict":'), "CORRUPT_LINE"),
    "an escaped key": (edit3(b'"actor":', b'"\\u0061ctor":'), "CORRUPT_LINE"),
    "an escaped value": (edit3(b"evidence 0", b"\\u0065vidence 0"), "CORRUPT_LINE"),
    "a space after a colon": (edit3(b'"seq":2', b'"seq": 2'), "CORRUPT_LINE"),
    "a number spelled with an exponent": (edit3(b'"plan_version":1', b'"plan_version":1e0'), "CORRUPT_LINE"),
    "20 MB line": (raw3(b'{"v":1,"data":"' + b"x" * 20_000_000 + b'"}'), "CORRUPT_LINE"),
    "100,000-deep nesting": (edit3(b'"evidence 0"', b"[" * 100_000 + b"]" * 100_000), "CORRUPT_LINE"),
    "5,000-digit number": (edit3(b'"plan_version":1', b'"plan_version":' + b"7" * 5_000), "CORRUPT_LINE"),
    "NUL bytes in a line": (edit3(b"evidence 0", b"evid\x00\x00nce 0"), "CORRUPT_LINE"),
    "a hash that does not match": (
        lambda lines: join([*lines[:2], lines[2].replace(b"evidence 0", b"evidence 9"), *lines[3:]]),
        "HASH_MISMATCH",
    ),
    "a deleted line (seq gap)": (lambda lines: join([*lines[:2], *lines[3:]]), "SEQ_GAP"),
    "a line of another run": (edit3(b'"run":"run"', b'"run":"other"'), "CORRUPT_LINE"),
    "a second header": (second_header, "CORRUPT_LINE"),
    "a torn tail": (lambda lines: join(lines) + lines[2][:40], "TORN_TAIL"),
    "only a torn header": (lambda lines: lines[0][:60], "TORN_TAIL"),
    "a file of NUL bytes": (lambda lines: b"\0" * 4096, "TORN_TAIL"),
}


class Env(NamedTuple):
    """A directory with a valid log (header, plan, two verdicts) and a helper to write input files."""

    tmp: Path
    log: Path

    def file(self, name: str, content: bytes) -> str:
        path = self.tmp / name
        path.write_bytes(content)
        return str(path)

    def draft(self, **changes: Any) -> str:
        draft = copy.deepcopy(LOGIN_DRAFT) | changes
        return self.file("draft.json", orjson.dumps(draft))


@pytest.fixture
def env(tmp_path: Path) -> Env:
    """A fresh environment for one case."""
    log = tmp_path / "run.jsonl"
    with Ledger.create(log, copy.deepcopy(LOGIN_DRAFT), fsync="none", nonce="0" * 32, clock=Clock()) as ledger:
        ledger.verify_criterion("login-test-passes", False, "evidence 0")
        ledger.verify_criterion("login-test-passes", True, "evidence 1")
    return Env(tmp_path, log)


def step(n: int, depends: list[str]) -> dict[str, Any]:
    """A draft step."""
    return {"id": f"s{n}", "title": f"step {n}", "dependsOn": depends, "completionEvidence": "done"}


def steps_in_a_chain(count: int, closed: bool) -> list[dict[str, Any]]:
    """``count`` steps, each depending on the one before; ``closed`` makes the first depend on the last."""
    return [step(0, [f"s{count - 1}"] if closed else [])] + [step(n, [f"s{n - 1}"]) for n in range(1, count)]


def cyclic(env: Env) -> list[Any]:
    """A two-step cycle."""
    return ["create", env.tmp / "new.jsonl", "--plan", env.draft(steps=[step(0, ["s1"]), step(1, ["s0"])])]


def create_with(content: bytes) -> Callable[[Env], list[Any]]:
    """create new.jsonl from a draft file holding ``content``."""
    return lambda env: ["create", env.tmp / "new.jsonl", "--plan", env.file("draft.json", content)]


def create_with_draft(**changes: Any) -> Callable[[Env], list[Any]]:
    """create new.jsonl from the login draft with ``changes``."""
    return lambda env: ["create", env.tmp / "new.jsonl", "--plan", env.draft(**changes)]


def on_log(*args: str) -> Callable[[Env], list[Any]]:
    """A command on the valid log: the first argument is the command, the log goes second; ``{fifo}`` stands
    for a FIFO no one writes to."""
    return lambda env: [args[0], env.log, *(fifo(env) if a == "{fifo}" else a for a in args[1:])]


def bad_step_id(text: str) -> Callable[[Env], list[Any]]:
    """A draft whose first step has id ``text``."""

    def args(env: Env) -> list[Any]:
        steps = copy.deepcopy(LOGIN_DRAFT["steps"])
        steps[0]["id"] = text
        steps[1]["dependsOn"] = [text]
        return ["create", env.tmp / "new.jsonl", "--plan", env.draft(steps=steps)]

    return args


def sparse(path: Path, size: int) -> str:
    """A file of ``size`` NUL bytes that takes no room on disk (a hole)."""
    with path.open("wb") as f:
        f.truncate(size)
    return str(path)


def on_log_with(*args: str) -> Callable[[Env], list[Any]]:
    """A command on the valid log where ``{big}`` stands for a 16 MiB + 1 byte input file."""
    return lambda env: [
        args[0],
        env.log,
        *(sparse(env.tmp / "big.json", 16 * 2**20 + 1) if a == "{big}" else a for a in args[1:]),
    ]


def short_key(env: Env) -> list[Any]:
    """checkpoint with a 5-byte key file."""
    return ["checkpoint", env.log, "--key-file", env.file("k", b"short")]


DRAFT = orjson.dumps(LOGIN_DRAFT)

#: Bad drafts, ids, paths and arguments: (arguments, code, exit status).
CLI_CASES: dict[str, tuple[Callable[[Env], list[Any]], str, int]] = {
    "draft: not JSON": (create_with(b"{goal: nope"), "DRAFT_INVALID", 1),
    "draft: a JSON array": (create_with(b"[]"), "DRAFT_INVALID", 1),
    "draft: NaN": (create_with(DRAFT.replace(b'"steps"', b'"x":NaN,"steps"')), "DRAFT_INVALID", 1),
    "draft: byte order mark": (create_with(b"\xef\xbb\xbf" + DRAFT), "DRAFT_INVALID", 1),
    "draft: invalid UTF-8": (create_with(DRAFT.replace(b"login", b"l\xffgin")), "DRAFT_INVALID", 1),
    "draft: lone surrogate": (create_with(DRAFT.replace(b"Fix the", b"Fix \\udc00the")), "DRAFT_INVALID", 1),
    "draft: 100,000-deep nesting": (create_with(b"[" * 100_000 + b"]" * 100_000), "DRAFT_INVALID", 1),
    "draft: 5,000-digit number": (
        create_with(DRAFT.replace(b'"steps"', b'"x":' + b"9" * 5000 + b',"steps"')),
        "DRAFT_INVALID",
        1,
    ),
    "draft: maxAttempts: true": (create_with_draft(steps=[step(0, []) | {"maxAttempts": True}]), "DRAFT_INVALID", 1),
    "draft: unknown key": (create_with_draft(surprise=1), "DRAFT_INVALID", 1),
    "draft: no goal": (create_with_draft(goal="  "), "BLANK_FIELD", 1),
    "draft: a cycle": (cyclic, "DEPENDENCY_CYCLE", 1),
    "draft: 10,000 steps closing a cycle": (
        create_with_draft(steps=steps_in_a_chain(10_000, closed=True)),
        "DEPENDENCY_CYCLE",
        1,
    ),
    "id with a newline": (bad_step_id("step\none"), "INVALID_ID", 1),
    "id with a control character": (bad_step_id("step\x07"), "INVALID_ID", 1),
    "run id trying path traversal": (
        lambda env: ["create", env.tmp / "new.jsonl", "--plan", env.draft(), "--run", "../../etc/passwd"],
        "INVALID_ID",
        1,
    ),
    "draft file missing": (
        lambda env: ["create", env.tmp / "new.jsonl", "--plan", env.tmp / "nope.json"],
        "FILE_NOT_FOUND",
        4,
    ),
    "draft path is a directory": (lambda env: ["create", env.tmp / "new.jsonl", "--plan", env.tmp], "NOT_A_FILE", 4),
    "log path with a NUL byte": (lambda env: ["status", str(env.log) + "\0x"], "USAGE", 2),
    "log path is a directory": (lambda env: ["start", env.tmp, "reproduce"], "NOT_A_FILE", 4),
    "log path missing": (lambda env: ["start", env.tmp / "missing.jsonl", "reproduce"], "LOG_NOT_FOUND", 4),
    "create over an existing log": (lambda env: ["create", env.log, "--plan", env.draft()], "LOG_EXISTS", 1),
    "negative --expected-seq": (on_log("start", "reproduce", "--expected-seq", "-1"), "USAGE", 2),
    "stale --expected-seq": (on_log("start", "reproduce", "--expected-seq", "1"), "STALE_EXPECTED_SEQ", 1),
    "blank evidence": (
        on_log("criterion", "login-test-passes", "--passed", "--evidence", " \t "),
        "EVIDENCE_REQUIRED",
        1,
    ),
    "undecodable argument (lone surrogate)": (
        on_log("criterion", "login-test-passes", "--passed", "--evidence", "bad \udcff byte"),
        "INVALID_TEXT",
        1,
    ),
    "a 20 MB event": (
        on_log("criterion", "login-test-passes", "--passed", "--evidence", "x" * 20_000_000),
        "EVENT_TOO_LARGE",
        1,
    ),
    "step id with a newline": (on_log("start", "reproduce\n"), "STEP_NOT_FOUND", 1),
    "unknown option": (on_log("start", "reproduce", "--bogus"), "USAGE", 2),
    "malformed --anchor": (on_log("verify", "--anchor", "12:xyz"), "USAGE", 2),
    "malformed --acked": (on_log("repair", "--acked", "latest"), "USAGE", 2),
    "--anchor with a superscript digit": (on_log("verify", "--anchor", "\u00b2:" + "a" * 64), "USAGE", 2),
    "--anchor with Arabic-Indic digits": (on_log("verify", "--anchor", "\u0663:" + "a" * 64), "USAGE", 2),
    "--anchor with a 5,000-digit seq": (on_log("verify", "--anchor", "9" * 5000 + ":" + "a" * 64), "USAGE", 2),
    "--acked with a superscript digit": (on_log("repair", "--acked", "\u00b2:" + "a" * 64), "USAGE", 2),
    "--acked with a 5,000-digit seq": (on_log("repair", "--acked", "7" * 5000 + ":" + "a" * 64), "USAGE", 2),
    "draft over its 16 MiB cap": (
        lambda env: ["create", env.tmp / "new.jsonl", "--plan", sparse(env.tmp / "big.json", 16 * 2**20 + 1)],
        "INPUT_TOO_LARGE",
        1,
    ),
    "patch over its 16 MiB cap": (
        on_log_with("replan", "--patch", "{big}", "--reason", "user_request", "--why", "a huge patch"),
        "INPUT_TOO_LARGE",
        1,
    ),
    "key file over its 64 KiB cap": (
        lambda env: ["checkpoint", env.log, "--key-file", sparse(env.tmp / "key", 64 * 1024 + 1)],
        "INPUT_TOO_LARGE",
        1,
    ),
    "checkpoint key too short": (short_key, "CHECKPOINT_KEY_INVALID", 2),
    "replan with --plan and --patch": (
        on_log("replan", "--plan", "a.json", "--patch", "b.json", "--reason", "user_request", "--why", "both"),
        "USAGE",
        2,
    ),
    "draft: scope not an object": (create_with_draft(scope=["src/**"]), "DRAFT_INVALID", 1),
    "draft: an absolute scope glob": (create_with_draft(scope={"writes": ["/etc/**"]}), "SCOPE_INVALID", 1),
    "draft: a step write outside the task scope": (
        create_with_draft(
            scope={"writes": ["src/**"]}, steps=[{**LOGIN_DRAFT["steps"][0], "writes": ["package.json"]}]
        ),
        "SCOPE_OUTSIDE_TASK",
        1,
    ),
    "approve an unknown request": (on_log("approve", "nope"), "APPROVAL_NOT_FOUND", 1),
    "deny an unknown request": (on_log("deny", "nope", "--why", "no"), "APPROVAL_NOT_FOUND", 1),
    "request-approval of an unknown step": (
        on_log("request-approval", "r1", "--steps", "ghost", "--question", "go?"),
        "STEP_NOT_FOUND",
        1,
    ),
    "request-approval with a .. glob": (
        on_log("request-approval", "r1", "--steps", "reproduce", "--question", "go?", "--writes", "../x"),
        "SCOPE_INVALID",
        1,
    ),
    "request-approval with a blank question": (
        on_log("request-approval", "r1", "--steps", "reproduce", "--question", " "),
        "REASON_REQUIRED",
        1,
    ),
}


class Isolated(NamedTuple):
    """A bad input that hung or exhausted memory: the arguments, the code and exit status it must get, the
    environment it runs with and the file on standard input."""

    args: Callable[[Env], list[Any]]
    code: str
    exit_status: int
    environ: tuple[tuple[str, str], ...] = ()
    stdin: str | None = None


MEMORY_LIMIT = 512 * 2**20  # address space of the child (the CLI needs about 250 MiB of it)
HANG_TIMEOUT = 30  # seconds: every case ends in well under one


def fifo(env: Env) -> str:
    """A FIFO no one writes to: opening it to read blocks until a writer comes."""
    path = env.tmp / "fifo"
    if not path.exists():
        os.mkfifo(path)
    return str(path)


def damaged_before_zeros(env: Env) -> str:
    """The valid log with line 3 damaged and then 768 MiB of NUL bytes (a hole: no room on disk)."""
    lines = lines_of(env.log)
    env.log.write_bytes(join([*lines[:2], b"damaged line"]))
    with env.log.open("r+b") as f:
        f.truncate(env.log.stat().st_size + 768 * 2**20)
    return str(env.log)


TRANSCRIPT = Path(__file__).parents[1] / "fixtures" / "transcripts" / "codex_rollout.jsonl"

#: Inputs that hung a reader or exhausted memory; each runs in a child process under MEMORY_LIMIT of address
#: space and HANG_TIMEOUT seconds, so that a regression fails instead of taking the machine down.
ISOLATED_CASES: dict[str, Isolated] = {
    "log is a FIFO: status": Isolated(lambda env: ["status", fifo(env)], "NOT_A_FILE", 4),
    "log is a FIFO: verify": Isolated(lambda env: ["verify", fifo(env)], "NOT_A_FILE", 4),
    "log is a FIFO: log": Isolated(lambda env: ["log", fifo(env)], "NOT_A_FILE", 4),
    "log is a FIFO: resume": Isolated(lambda env: ["resume", fifo(env)], "NOT_A_FILE", 4),
    "log is a FIFO: salvage": Isolated(lambda env: ["salvage", fifo(env)], "NOT_A_FILE", 4),
    "log is a FIFO: start": Isolated(lambda env: ["start", fifo(env), "reproduce"], "NOT_A_FILE", 4),
    "log is a FIFO: repair": Isolated(lambda env: ["repair", fifo(env)], "NOT_A_FILE", 4),
    "draft is a FIFO": Isolated(lambda env: ["create", env.tmp / "new.jsonl", "--plan", fifo(env)], "NOT_A_FILE", 4),
    "draft is /dev/zero": Isolated(
        lambda env: ["create", env.tmp / "new.jsonl", "--plan", "/dev/zero"], "NOT_A_FILE", 4
    ),
    "draft on standard input from /dev/zero": Isolated(
        lambda env: ["create", env.tmp / "new.jsonl", "--plan", "-"], "INPUT_TOO_LARGE", 1, stdin="/dev/zero"
    ),
    "patch is /dev/zero": Isolated(
        on_log("replan", "--patch", "/dev/zero", "--reason", "user_request", "--why", "zeros"), "NOT_A_FILE", 4
    ),
    "key file is /dev/zero": Isolated(on_log("checkpoint", "--key-file", "/dev/zero"), "NOT_A_FILE", 4),
    "key file is a FIFO": Isolated(lambda env: ["verify", env.log, "--key-file", fifo(env)], "NOT_A_FILE", 4),
    "evidence file is a FIFO": Isolated(
        on_log("criterion", "login-test-passes", "--passed", "--evidence-file", "{fifo}"), "NOT_A_FILE", 4
    ),
    "evidence file is /dev/zero": Isolated(
        on_log("criterion", "login-test-passes", "--passed", "--evidence-file", "/dev/zero"), "NOT_A_FILE", 4
    ),
    "reason file is a FIFO": Isolated(on_log("block", "reproduce", "--reason-file", "{fifo}"), "NOT_A_FILE", 4),
    "transcript is /dev/zero": Isolated(
        lambda env: ["import", "/dev/zero", "-o", env.tmp / "new.jsonl"], "TRANSCRIPT_UNREADABLE", 4
    ),
    "transcript is a FIFO": Isolated(
        lambda env: ["import", fifo(env), "-o", env.tmp / "new.jsonl"], "TRANSCRIPT_UNREADABLE", 4
    ),
    "transcript over its 1 GiB cap": Isolated(
        lambda env: ["import", sparse(env.tmp / "t.jsonl", 2**30 + 1), "-o", env.tmp / "new.jsonl"],
        "INPUT_TOO_LARGE",
        1,
    ),
    "transcript over a cap set in the environment": Isolated(
        lambda env: ["import", TRANSCRIPT, "-o", env.tmp / "new.jsonl"],
        "INPUT_TOO_LARGE",
        1,
        (("PLANTRAIL_MAX_TRANSCRIPT_BYTES", "100"),),
    ),
    "draft over a cap set in the environment": Isolated(
        lambda env: ["create", env.tmp / "new.jsonl", "--plan", env.draft()],
        "INPUT_TOO_LARGE",
        1,
        (("PLANTRAIL_MAX_DRAFT_BYTES", "10"),),
    ),
    "a cap in the environment that is no number": Isolated(
        lambda env: ["create", env.tmp / "new.jsonl", "--plan", env.draft()],
        "USAGE",
        2,
        (("PLANTRAIL_MAX_DRAFT_BYTES", "\u00b2"),),
    ),
    "diff up to version 10^26": Isolated(on_log("diff", "1", "1" + "0" * 26), "UNKNOWN_PLAN_VERSION", 1),
    "a damaged line before 768 MiB: verify": Isolated(
        lambda env: ["verify", damaged_before_zeros(env)], "TORN_TAIL", 3
    ),
    "a damaged line before 768 MiB: status": Isolated(
        lambda env: ["status", damaged_before_zeros(env)], "TORN_TAIL", 3
    ),
    "a damaged line before 768 MiB: start": Isolated(
        lambda env: ["start", damaged_before_zeros(env), "reproduce"], "TORN_TAIL", 3
    ),
}


def run_isolated(case: Isolated, env: Env) -> CliResult:
    """Run the CLI in a child process under MEMORY_LIMIT and HANG_TIMEOUT."""
    import resource
    import subprocess

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    args = [sys.executable, "-m", "plantrail", *map(os.fspath, case.args(env))]
    with open(case.stdin or os.devnull, "rb") as stdin:
        done = subprocess.run(
            args,
            stdin=stdin,
            capture_output=True,
            timeout=HANG_TIMEOUT,
            preexec_fn=limit,
            env=os.environ | dict(case.environ),
            check=False,
        )
    return CliResult(done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"))


def check_refusal(result: CliResult, code: str, exit_status: int) -> None:
    """The CLI printed error[code], exited with ``exit_status`` and showed no traceback."""
    assert "Traceback" not in result.err + result.out
    assert result.err.splitlines()[-1].startswith(f"error[{code}]"), result.err[:300]
    assert result.code == exit_status
    assert len(result.err) < 2_000, "an error message should be one line for people"


@pytest.mark.parametrize("case", list(LOG_CASES))
def test_damaged_log_is_refused_by_readers_and_writers(env: Env, run_cli: Callable[..., CliResult], case: str) -> None:
    """A damaged log gives its documented code (exit 3) to verify and to start, and stays byte for byte; a line a
    newer plantrail wrote is no damage: FORMAT_TOO_NEW, exit 4."""
    damage, code = LOG_CASES[case]
    env.log.write_bytes(damage(lines_of(env.log)))
    before = env.log.read_bytes()
    for args in (["verify", env.log], ["start", env.log, "reproduce"]):
        check_refusal(run_cli(*args), code, 4 if code == "FORMAT_TOO_NEW" else 3)
        assert env.log.read_bytes() == before


@pytest.mark.parametrize("case", list(CLI_CASES))
def test_bad_argument_or_file_is_refused(env: Env, run_cli: Callable[..., CliResult], case: str) -> None:
    """A bad draft, id, path or argument gives its documented code and exit status and writes nothing."""
    args, code, exit_status = CLI_CASES[case]
    before = env.log.read_bytes()
    check_refusal(run_cli(*args(env)), code, exit_status)
    assert env.log.read_bytes() == before
    assert not (env.tmp / "new.jsonl").exists()


@pytest.mark.parametrize("case", list(ISOLATED_CASES))
def test_input_that_hung_or_exhausted_memory_is_refused(env: Env, case: str) -> None:
    """A FIFO, an endless or oversized input, a huge version number or damage before gigabytes gets its code
    at once, within a memory limit, and leaves the log as it was (a case that damages the log excepted)."""
    isolated = ISOLATED_CASES[case]
    before = env.log.read_bytes()
    result = run_isolated(isolated, env)
    check_refusal(result, isolated.code, isolated.exit_status)
    if "damaged" not in case:
        assert env.log.read_bytes() == before
    assert not (env.tmp / "new.jsonl").exists()


def test_unreadable_log_is_permission_denied(env: Env, capfd: pytest.CaptureFixture[str]) -> None:
    """A log the user may not read gives PERMISSION_DENIED (exit 4); as root, the check runs as nobody."""
    env.log.chmod(0)
    result = run_cli_unprivileged(capfd, ["status", str(env.log)])
    check_refusal(result, "PERMISSION_DENIED", 4)


def run_cli_unprivileged(capfd: pytest.CaptureFixture[str], args: list[str]) -> CliResult:
    """Run the CLI in a child process that has dropped root, so that file permissions apply."""
    import plantrail.cli.inspect  # noqa: F401 - loaded before privileges drop; the child may not read the sources
    from plantrail.cli.main import main

    capfd.readouterr()
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            if os.getuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            code = main(args)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    captured = capfd.readouterr()
    return CliResult(os.waitstatus_to_exitcode(status), captured.out, captured.err)


@pytest.mark.parametrize("depends", [b'["nowhere"]', b'["diagnose"]'], ids=["unknown-dependency", "cycle"])
def test_a_stored_plan_that_never_validated_is_reported_not_crashed_on(
    env: Env, run_cli: Callable[..., CliResult], depends: bytes
) -> None:
    """A hand-made, correctly hashed plan that would never validate: verify names it, status still reads."""
    lines = lines_of(env.log)
    env.log.write_bytes(
        join(rechain([lines[0], lines[1].replace(b'"depends_on":[]', b'"depends_on":' + depends, 1), *lines[2:]], 1))
    )
    check_refusal(run_cli("verify", env.log), "ILLEGAL_EVENT", 3)
    assert "line 2" in run_cli("verify", env.log).err
    assert run_cli("status", env.log, "--json").code == 0


def test_a_10000_step_chain_is_accepted(env: Env, run_cli: Callable[..., CliResult]) -> None:
    """A 10,000-step chain of dependencies is a valid draft: no recursion limit, no slowness."""
    result = run_cli("create", env.tmp / "big.jsonl", "--plan", env.draft(steps=steps_in_a_chain(10_000, False)))
    assert result.code == 0, result.err


def readable(data: bytes, tmp: Path) -> None:
    """Read ``data`` as a log: only documented errors naming a line or offset; then open it as a writer."""
    path = tmp / "fuzz.jsonl"
    path.write_bytes(data)
    try:
        with LogReader(path) as reader:
            for _ in reader.records():
                pass
    except PlantrailError as exc:
        assert "line" in exc.fields or "offset" in exc.fields, exc.as_dict()
    try:
        Ledger.open(path).close()
    except PlantrailError as exc:
        assert "line" in exc.fields or "offset" in exc.fields, exc.as_dict()
    assert path.read_bytes() == data


@pytest.fixture(scope="module")
def valid_lines(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """The lines of a valid log to mutate."""
    path = tmp_path_factory.mktemp("fuzz") / "valid.jsonl"
    with Ledger.create(path, copy.deepcopy(LOGIN_DRAFT), fsync="none", nonce="0" * 32, clock=Clock()) as ledger:
        ledger.start("reproduce")
        ledger.complete("reproduce", ["saved the failing output"])
        ledger.checkpoint(b"a fuzzing key of sixteen bytes+")
    return lines_of(path)


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One random edit: replace, insert or delete a few bytes, or cut the end."""
    at = rng.randrange(len(data) + 1)
    junk = rng.randbytes(rng.randint(1, 8))
    match rng.randrange(4):
        case 0:
            return data[:at] + junk + data[at + len(junk) :]
        case 1:
            return data[:at] + junk + data[at:]
        case 2:
            return data[:at] + data[at + rng.randint(1, 64) :]
        case _:
            return data[:at]


@pytest.mark.slow
def test_fuzzed_bytes_only_raise_documented_errors(
    tmp_path_factory: pytest.TempPathFactory, full: bool, valid_lines: list[bytes], figures: Callable[[str], None]
) -> None:
    """Arbitrary bytes, mutated logs and re-sealed mutated lines raise only PlantrailErrors naming a line or offset."""
    tmp = tmp_path_factory.mktemp("fuzzing")
    valid = join(valid_lines)
    examples = FUZZ_EXAMPLES[full]

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        st.one_of(
            st.binary(max_size=2048),
            st.randoms(use_true_random=False).map(lambda rng: mutate(valid, rng)),
            st.tuples(st.integers(0, len(valid_lines) - 1), st.randoms(use_true_random=False)).map(
                lambda pick: join(
                    [
                        *valid_lines[: pick[0]],
                        reseal(mutate(valid_lines[pick[0]][:-72], pick[1]) + valid_lines[pick[0]][-72:]),
                        *valid_lines[pick[0] + 1 :],
                    ]
                )
            ),
        )
    )
    def check(data: bytes) -> None:
        readable(data, tmp)

    check()
    figures(
        f"fuzz: {examples} inputs (random bytes, mutated logs, re-sealed mutated lines): only documented "
        "errors, each naming a line or byte offset; no input changed by a reader or a non-repairing writer"
    )


@pytest.mark.parametrize("start", [10**20, -(10**20), 253_402_300_800_000, 2**63], ids=str)
def test_an_opencode_time_no_calendar_holds_imports_without_it(
    tmp_path: Path, run_cli: Callable[..., CliResult], start: int
) -> None:
    """An OpenCode export whose todowrite call started at a time outside the years 1-9999 imports (the
    update is stamped like one without a time), instead of crashing."""
    fixture = Path(__file__).parents[1] / "fixtures" / "transcripts" / "opencode_export.json"
    text = fixture.read_text()
    first = '"time": {"start": 1769203365000'
    assert first in text
    export = tmp_path / "export.json"
    export.write_text(text.replace(first, f'"time": {{"start": {start}', 1))
    result = run_cli("import", export, "-o", tmp_path / "out.jsonl")
    assert result.code == 0, result.err
    created = orjson.loads(lines_of(tmp_path / "out.jsonl")[1])
    assert created["type"] == "plan.created" and created["ts"].startswith("1970-01-01T")
    assert run_cli("verify", tmp_path / "out.jsonl").code == 0
