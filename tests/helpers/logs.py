"""Building, editing and re-sealing log lines the way a tamperer, a bad disk or a fuzzer would."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from plantrail.ledger.api import Ledger

__all__ = ["build_log", "lines_of", "rechain", "reseal", "write_lines"]

_H = 72  # ,"h":"<64 hex>"}
_PREV = slice(-_H - 65, -_H - 1)  # the 64 hex digits of "prev"
_CHECKPOINT_HEAD = re.compile(rb'"head":"[0-9a-f]{64}"')
_SEQ = re.compile(rb'^\{"v":(\d+),"seq":\d+,')


def build_log(ledger: Ledger, verdicts: int) -> None:
    """Give a fresh login-plan ledger some history: start a step, then ``verdicts`` criterion verdicts."""
    ledger.start("reproduce")
    for n in range(verdicts):
        ledger.verify_criterion("login-test-passes", n % 3 != 0, f"run {n}: {'ok' if n % 3 else 'one failure'}")


def lines_of(path: Path) -> list[bytes]:
    """The log's lines without their newlines."""
    return path.read_bytes().split(b"\n")[:-1]


def write_lines(path: Path, lines: list[bytes]) -> None:
    """Write lines back, each with its newline."""
    path.write_bytes(b"".join(line + b"\n" for line in lines))


def reseal(line: bytes) -> bytes:
    """Recompute a line's own hash after an edit (what someone with write access would do)."""
    body = line[:-_H] + b"}"
    return line[:-_H] + b',"h":"' + hashlib.sha256(body).hexdigest().encode() + b'"}'


def rechain(lines: list[bytes], start: int) -> list[bytes]:
    """Renumber and re-seal ``lines[start:]`` so that seqs run on and every ``prev`` (and a checkpoint's
    ``head``) links to the line before: what someone who can write the file but lacks the key can do."""
    out = list(lines[:start])
    for line in lines[start:]:
        prev = out[-1][-66:-2] if out else b"0" * 64
        line = _SEQ.sub(lambda m: b'{"v":%s,"seq":%d,' % (m.group(1), len(out)), line, count=1)
        line = _CHECKPOINT_HEAD.sub(b'"head":"' + prev + b'"', line)
        out.append(reseal(line[: _PREV.start] + prev + line[_PREV.stop :]))
    return out
