"""The RFC 6962 Merkle tree over a log's records: its root, and the inclusion and consistency proofs.

A leaf is a record's line hash (the 32 bytes its ``h`` member spells in hex); the leaf hash is
SHA-256(0x00 || leaf) and an inner node SHA-256(0x01 || left || right), the tree split at the largest power of
two below its size (as RFC 6962 and RFC 9162 define the Merkle tree hash). The proofs are those a transparency log
serves and a witness checks: an inclusion proof shows that one leaf is in a tree of a given root, a consistency
proof that a tree is an append-only extension of an older one.

Pure and small: no I/O, nothing imported from the rest of plantrail.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Final

__all__ = [
    "EMPTY_ROOT",
    "Frontier",
    "consistency_proof",
    "inclusion_proof",
    "leaf_hash",
    "node_hash",
    "root_of",
    "verify_consistency",
    "verify_inclusion",
]

#: The root of the empty tree: SHA-256 of nothing.
EMPTY_ROOT: Final = hashlib.sha256(b"").digest()


def leaf_hash(leaf: bytes) -> bytes:
    """The hash of one leaf: SHA-256(0x00 || leaf)."""
    return hashlib.sha256(b"\x00" + leaf).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """The hash of an inner node: SHA-256(0x01 || left || right)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two smaller than ``n`` (n > 1)."""
    return 1 << ((n - 1).bit_length() - 1)


def _mth(hashes: Sequence[bytes], lo: int, hi: int) -> bytes:
    """The root of the subtree over the leaf hashes ``hashes[lo:hi]`` (hi > lo)."""
    if hi - lo == 1:
        return hashes[lo]
    k = _split(hi - lo)
    return node_hash(_mth(hashes, lo, lo + k), _mth(hashes, lo + k, hi))


def root_of(hashes: Sequence[bytes]) -> bytes:
    """The root of the tree whose leaf hashes are ``hashes`` (:data:`EMPTY_ROOT` for none)."""
    return EMPTY_ROOT if not hashes else _mth(hashes, 0, len(hashes))


class Frontier:
    """A tree grown one leaf at a time, keeping only its perfect subtrees (one per bit of its size): the root
    of every prefix of a long log in one pass, with memory logarithmic in its size."""

    __slots__ = ("_stack", "size")

    def __init__(self) -> None:
        self._stack: list[tuple[int, bytes]] = []
        self.size = 0

    def append(self, leaf_hash_: bytes) -> None:
        """Add one leaf (its leaf hash)."""
        stack = self._stack
        size, value = 1, leaf_hash_
        while stack and stack[-1][0] == size:
            left = stack.pop()[1]
            size, value = size * 2, node_hash(left, value)
        stack.append((size, value))
        self.size += 1

    def root(self) -> bytes:
        """The root of the tree over every leaf added so far."""
        if not self._stack:
            return EMPTY_ROOT
        value = self._stack[-1][1]
        for _, left in reversed(self._stack[:-1]):
            value = node_hash(left, value)
        return value


def inclusion_proof(hashes: Sequence[bytes], index: int) -> list[bytes]:
    """The audit path of the leaf at ``index`` in the tree over ``hashes`` (RFC 6962 PATH)."""
    if not 0 <= index < len(hashes):
        raise ValueError(f"leaf {index} is not in a tree of {len(hashes)} leaves")
    path: list[bytes] = []
    lo, hi = 0, len(hashes)
    while hi - lo > 1:
        k = _split(hi - lo)
        if index < lo + k:
            path.append(_mth(hashes, lo + k, hi))
            hi = lo + k
        else:
            path.append(_mth(hashes, lo, lo + k))
            lo += k
    path.reverse()
    return path


def consistency_proof(hashes: Sequence[bytes], old_size: int) -> list[bytes]:
    """The proof that the tree of the first ``old_size`` leaves is a prefix of the tree over ``hashes``
    (RFC 6962 PROOF; empty when the sizes are equal or the old tree is empty)."""
    if not 0 <= old_size <= len(hashes):
        raise ValueError(f"a tree of {len(hashes)} leaves has no prefix of {old_size}")
    if old_size in (0, len(hashes)):
        return []
    proof: list[bytes] = []
    lo, hi, m, whole = 0, len(hashes), old_size, True
    while m != hi - lo:
        k = _split(hi - lo)
        if m <= k:
            proof.append(_mth(hashes, lo + k, hi))
            hi = lo + k
        else:
            proof.append(_mth(hashes, lo, lo + k))
            lo, m, whole = lo + k, m - k, False
    if not whole:
        proof.append(_mth(hashes, lo, hi))
    proof.reverse()
    return proof


def verify_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes) -> bool:
    """Whether ``proof`` shows the leaf hash ``leaf`` at ``index`` in the tree of ``size`` with ``root``
    (the verification algorithm of RFC 9162)."""
    if not 0 <= index < size:
        return False
    fn, sn, value = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            value = node_hash(p, value)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            value = node_hash(value, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and value == root


def verify_consistency(old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]) -> bool:
    """Whether ``proof`` shows the tree of ``old_size`` with ``old_root`` to be a prefix of the tree of
    ``new_size`` with ``new_root`` (the verification algorithm of RFC 9162; an empty old tree is a prefix of
    every tree)."""
    if not 0 <= old_size <= new_size:
        return False
    if old_size == new_size:
        return not proof and old_root == new_root
    if old_size == 0:
        return not proof
    if not proof:
        return False
    path = list(proof)
    if old_size & (old_size - 1) == 0:  # a power of two: the old root is a node of the new tree
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return fr == old_root and sr == new_root and sn == 0
