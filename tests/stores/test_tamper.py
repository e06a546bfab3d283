"""Tamper evidence: verify finds every flipped byte or bit, edited value, deleted, duplicated, swapped or
inserted line, at its line; an anchor finds a cut-off tail and the checkpoint key a re-chained history,
which the chain alone cannot (that 0 % is published too).

The log has 200 records with a keyed checkpoint every 50 and one at the end. Each kind of tampering is
applied at random positions (fixed seed): 50 times by default, 2,000 times under --full.
"""

from __future__ import annotations

import collections
import random
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import orjson
import pytest

from plantrail.ledger.api import Ledger
from plantrail.ledger.verify import verify_log
from plantrail.ledger.vocabulary.errors import LogDamaged
from tests.conftest import LOGIN_DRAFT, CliResult, Clock
from tests.helpers.logs import lines_of, rechain, reseal

PER_KIND = (50, 2_000)
KEY = b"the auditor's key, kept off this host"


class Tampered(NamedTuple):
    """A tampered log and the line (1-based) where the first difference is."""

    data: bytes
    line: int


Tamper = Callable[[list[bytes], random.Random], Tampered]


def join(lines: list[bytes]) -> bytes:
    """Lines back into file bytes."""
    return b"".join(line + b"\n" for line in lines)


def line_at(lines: list[bytes], offset: int) -> int:
    """The 1-based line holding byte ``offset`` (a newline belongs to the line it ends)."""
    end = 0
    for number, line in enumerate(lines, 1):
        end += len(line) + 1
        if offset < end:
            return number
    raise AssertionError(offset)


def flip(lines: list[bytes], rng: random.Random, mask: int, start: int = 0) -> Tampered:
    """XOR one random byte of the file, at or after ``start``, with ``mask``."""
    data = bytearray(join(lines))
    offset = rng.randrange(start, len(data))
    data[offset] ^= mask
    return Tampered(bytes(data), line_at(lines, offset))


def byte_flip(lines: list[bytes], rng: random.Random) -> Tampered:
    """Replace one byte with any other value."""
    return flip(lines, rng, rng.randrange(1, 256))


def bit_flip(lines: list[bytes], rng: random.Random) -> Tampered:
    """Flip one bit."""
    return flip(lines, rng, 1 << rng.randrange(8))


def last_line_byte_flip(lines: list[bytes], rng: random.Random) -> Tampered:
    """Replace one byte of the last line: the one place a flip (of its newline) can pass for a torn write."""
    return flip(lines, rng, rng.randrange(1, 256), start=len(join(lines[:-1])))


def edit_value(lines: list[bytes], rng: random.Random) -> Tampered:
    """Change one value (a timestamp, the actor, or the first field of the event) and re-encode the line."""
    k = rng.randrange(len(lines))
    record = orjson.loads(lines[k])
    field = rng.choice(["ts", "actor", "data"])
    if field == "data":
        name, value = next(iter(record["data"].items()))
        record["data"][name] = value + 1 if isinstance(value, int) else f"{value}!"
    else:
        record[field] = "user" if field == "actor" and record[field] != "user" else f"{record[field]}0"
    edited = [*lines[:k], orjson.dumps(record), *lines[k + 1 :]]
    return Tampered(join(edited), k + 1)


def delete_line(lines: list[bytes], rng: random.Random) -> Tampered:
    """Delete one line other than the last (deleting the last is a truncation)."""
    k = rng.randrange(len(lines) - 1)
    return Tampered(join(lines[:k] + lines[k + 1 :]), k + 1)


def duplicate_line(lines: list[bytes], rng: random.Random) -> Tampered:
    """Repeat one line right after itself."""
    k = rng.randrange(len(lines))
    return Tampered(join(lines[: k + 1] + lines[k:]), k + 2)


def swap_lines(lines: list[bytes], rng: random.Random) -> Tampered:
    """Swap two lines."""
    k, j = sorted(rng.sample(range(len(lines)), 2))
    swapped = list(lines)
    swapped[k], swapped[j] = swapped[j], swapped[k]
    return Tampered(join(swapped), k + 1)


def insert_line(lines: list[bytes], rng: random.Random) -> Tampered:
    """Insert a forged record (a copy of another with a new time, its own hash recomputed).

    A forgery of the very record it is inserted before links perfectly (same seq and prev), so the break
    shows on the next line: the displaced original no longer links. Either way verify names where it breaks.
    """
    k = rng.randrange(len(lines) + 1)
    j = rng.randrange(1, len(lines))
    forged = reseal(lines[j].replace(b'"ts":"2026', b'"ts":"2027'))
    return Tampered(join([*lines[:k], forged, *lines[k:]]), k + 2 if j == k else k + 1)


KINDS: dict[str, Tamper] = {
    "byte flips": byte_flip,
    "bit flips": bit_flip,
    "byte flips in the last line": last_line_byte_flip,
    "edited values": edit_value,
    "deleted lines": delete_line,
    "duplicated lines": duplicate_line,
    "swapped lines": swap_lines,
    "inserted lines": insert_line,
}


class Finding(NamedTuple):
    """What verify reported: the line it names (0 for none), and whether it was a torn tail."""

    line: int
    torn: bool


def found(path: Path, anchor: tuple[int, str] | None = None, key: bytes | None = None) -> Finding | None:
    """What verify finds in the log, or None when it passes."""
    try:
        report = verify_log(path, anchor=anchor, key=key)
    except LogDamaged as exc:
        return Finding(int(exc.fields.get("line", 0)), torn=False)
    return None if report.torn is None else Finding(report.torn.line, torn=True)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """A 200-record log: a plan, verdicts, a keyed checkpoint every 50 records and one at the end."""
    path = tmp_path_factory.mktemp("tamper") / "run.jsonl"
    with Ledger.create(path, LOGIN_DRAFT, fsync="none", nonce="0" * 32, clock=Clock()) as ledger:
        ledger.start("reproduce")
        while ledger.state.last_seq < 199:
            if ledger.state.last_seq % 50 == 48:
                ledger.checkpoint(KEY)
            else:
                n = ledger.state.last_seq
                ledger.verify_criterion("login-test-passes", n % 3 != 0, f"run {n}: {n % 7} warnings")
    lines = lines_of(path)
    assert len(lines) == 200 and b'"type":"log.checkpoint"' in lines[-1]
    assert verify_log(path, key=KEY).checkpoints == 4
    return lines


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_verify_finds_every_tampering_at_its_line(
    pristine: list[bytes], tmp_path: Path, full: bool, kind: str, figures: Callable[[str], None]
) -> None:
    """Every tampering of this kind is detected, and verify names the first line that differs."""
    rng = random.Random(f"tamper {kind}")
    path = tmp_path / "tampered.jsonl"
    counts: collections.Counter[str] = collections.Counter()
    for _ in range(PER_KIND[full]):
        tampered = KINDS[kind](pristine, rng)
        path.write_bytes(tampered.data)
        finding = found(path)
        assert finding is not None and finding.line == tampered.line, f"{kind} at line {tampered.line}: {finding}"
        counts.update(trials=1, torn=finding.torn)
    figures(
        f"tamper {kind}: {counts['trials']}/{counts['trials']} detected at the right line ({counts['torn']} "
        "of them as a torn tail: the last line lost its newline, which only an anchor tells from a crash)"
    )


@pytest.mark.slow
def test_a_cut_off_tail_passes_the_chain_and_fails_the_anchor(
    pristine: list[bytes], tmp_path: Path, full: bool, figures: Callable[[str], None]
) -> None:
    """Cutting off the last k lines leaves a valid chain; the head the auditor kept as an anchor catches it."""
    rng = random.Random("truncate")
    path = tmp_path / "cut.jsonl"
    anchor = (len(pristine) - 1, pristine[-1][-66:-2].decode())
    chain_only = anchored = 0
    trials = PER_KIND[full]
    for _ in range(trials):
        path.write_bytes(join(pristine[: -rng.randint(1, 20)]))
        chain_only += found(path) is not None
        anchored += found(path, anchor=anchor) is not None
    assert (chain_only, anchored) == (0, trials)
    figures(
        f"tamper cut-off tail (1-20 lines): chain alone {chain_only}/{trials} detected (the known limit); "
        f"with the anchor {anchored}/{trials}"
    )


@pytest.mark.slow
def test_a_rechained_history_passes_the_chain_and_fails_the_key(
    pristine: list[bytes], tmp_path: Path, full: bool, figures: Callable[[str], None]
) -> None:
    """An edit re-chained by someone without the key fools the chain; the checkpoint MACs catch it."""
    rng = random.Random("rechain")
    path = tmp_path / "rechained.jsonl"
    chain_only = keyed = 0
    trials = PER_KIND[full]
    for _ in range(trials):
        k = rng.randrange(1, len(pristine) - 1)  # any record the final checkpoint covers
        edited = [*pristine[:k], pristine[k].replace(b'"ts":"2026', b'"ts":"2027'), *pristine[k + 1 :]]
        path.write_bytes(join(rechain(edited, k)))
        chain_only += found(path) is not None
        keyed += found(path, key=KEY) is not None
    assert (chain_only, keyed) == (0, trials)
    figures(
        f"tamper edit + full re-chain: chain alone {chain_only}/{trials} detected (the known limit); "
        f"with the checkpoint key {keyed}/{trials}"
    )


@pytest.mark.slow
def test_a_rechain_that_drops_checkpoints_needs_the_anchor(
    pristine: list[bytes], tmp_path: Path, full: bool, figures: Callable[[str], None]
) -> None:
    """Dropping the checkpoints after an edit escapes the key unless none are left; the anchor catches all."""
    rng = random.Random("drop checkpoints")
    path = tmp_path / "dropped.jsonl"
    anchor = (len(pristine) - 1, pristine[-1][-66:-2].decode())
    keyed = anchored = none_left = 0
    trials = PER_KIND[full]
    for _ in range(trials):
        k = rng.randrange(1, len(pristine) - 1)
        kept = [line for n, line in enumerate(pristine) if n < k or b'"type":"log.checkpoint"' not in line]
        kept[k] = kept[k].replace(b'"ts":"2026', b'"ts":"2027')
        path.write_bytes(join(rechain(kept, k)))
        none_left += not any(b'"type":"log.checkpoint"' in line for line in kept)
        keyed += found(path, key=KEY) is not None
        anchored += found(path, anchor=anchor, key=KEY) is not None
    assert (keyed, anchored) == (none_left, trials)
    figures(
        f"tamper edit + re-chain + checkpoints after the edit dropped: key alone {keyed}/{trials} detected "
        f"(exactly those with no checkpoint left); key with the anchor {anchored}/{trials}"
    )


@pytest.mark.parametrize("kind", list(KINDS))
def test_plantrail_verify_names_the_line_and_exits_3(
    pristine: list[bytes], tmp_path: Path, run_cli: Callable[..., CliResult], kind: str
) -> None:
    """Through the CLI, a tampered log exits 3 with `error[CODE]` naming the line, never a traceback."""
    tampered = KINDS[kind](pristine, random.Random(f"cli {kind}"))
    path = tmp_path / "tampered.jsonl"
    path.write_bytes(tampered.data)
    result = run_cli("verify", path)
    assert result.code == 3 and result.err.startswith("error[")
    assert f"line {tampered.line}" in result.err and "Traceback" not in result.err
