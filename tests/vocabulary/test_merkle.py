"""The RFC 6962 tree (ledger.vocabulary.merkle) against the published Certificate Transparency vectors, and
its proofs as properties: every proof it makes verifies, and a changed leaf, size or root fails."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from plantrail.ledger.vocabulary.merkle import (
    EMPTY_ROOT,
    Frontier,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    root_of,
    verify_consistency,
    verify_inclusion,
)

# The leaves and roots of the Certificate Transparency test vectors (trillian merkle/log_verifier_test.go).
LEAVES = [bytes.fromhex(x) for x in ("", "00", "10", "2021", "3031", "40414243", "5051525354555657",
                                     "606162636465666768696a6b6c6d6e6f")]  # fmt: skip
ROOTS = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
HASHES = [leaf_hash(leaf) for leaf in LEAVES]
INCLUSION = {  # (leaf index, tree size): path
    (0, 8): ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
             "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
             "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"],
    (5, 8): ["bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
             "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
             "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"],
    (2, 3): ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"],
    (1, 5): ["6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
             "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
             "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"],
}  # fmt: skip
CONSISTENCY = {  # (old size, new size): proof
    (1, 8): ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
             "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
             "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"],
    (6, 8): ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
             "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
             "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"],
    (2, 5): ["5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
             "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"],
}  # fmt: skip


def root(size: int) -> bytes:
    return bytes.fromhex(ROOTS[size - 1])


def test_roots_match_the_published_vectors() -> None:
    """The root of every prefix of the vector leaves is the published one, by recursion and by frontier."""
    assert (
        root_of([]) == EMPTY_ROOT == bytes.fromhex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    )
    frontier = Frontier()
    for size in range(1, 9):
        frontier.append(HASHES[size - 1])
        assert root_of(HASHES[:size]).hex() == ROOTS[size - 1]
        assert frontier.root().hex() == ROOTS[size - 1] and frontier.size == size


def test_inclusion_proofs_match_the_published_vectors() -> None:
    """The audit paths made are the published ones, and verify; one leaf off or one size off fails."""
    for (index, size), want in INCLUSION.items():
        path = inclusion_proof(HASHES[:size], index)
        assert [p.hex() for p in path] == want
        assert verify_inclusion(index, size, HASHES[index], path, root(size))
        assert not verify_inclusion(index ^ 1, size, HASHES[index], path, root(size))
        assert not verify_inclusion(index, size * 2, HASHES[index], path, root(size))
        assert not verify_inclusion(index, size, leaf_hash(b"other"), path, root(size))


def test_consistency_proofs_match_the_published_vectors() -> None:
    """The consistency proofs made are the published ones, and verify; a wrong root or trimmed proof fails."""
    for (old, new), want in CONSISTENCY.items():
        proof = consistency_proof(HASHES[:new], old)
        assert [p.hex() for p in proof] == want
        assert verify_consistency(old, new, root(old), root(new), proof)
        assert not verify_consistency(old, new, root(new), root(old), proof)
        assert not verify_consistency(old, new, root(old), root(new), proof[:-1])
        assert not verify_consistency(old, new, root(old), root(new), [*proof, EMPTY_ROOT])
        assert not verify_consistency(old, new, root(old), root(new), [])


def test_trivial_consistency() -> None:
    """Equal sizes need an empty proof and equal roots; an empty old tree is a prefix of any; no time travel."""
    assert verify_consistency(3, 3, root(3), root(3), [])
    assert not verify_consistency(3, 3, root(3), root(4), [])
    assert not verify_consistency(3, 3, root(3), root(3), [root(3)])
    assert verify_consistency(0, 5, EMPTY_ROOT, root(5), [])
    assert not verify_consistency(5, 3, root(5), root(3), [])


leaves = st.lists(st.binary(min_size=32, max_size=32), min_size=1, max_size=70)


@given(leaves, st.data())
def test_every_consistency_proof_verifies(data_leaves: list[bytes], data: st.DataObject) -> None:
    """Between any two sizes of a random tree the proof made verifies, and a changed old leaf fails it."""
    hashes = [leaf_hash(leaf) for leaf in data_leaves]
    new = len(hashes)
    old = data.draw(st.integers(1, new))
    proof = consistency_proof(hashes, old)
    frontier = Frontier()
    for h in hashes[:old]:
        frontier.append(h)
    assert frontier.root() == root_of(hashes[:old])
    assert verify_consistency(old, new, root_of(hashes[:old]), root_of(hashes), proof)
    changed = data.draw(st.integers(0, old - 1))
    forged = list(hashes)
    forged[changed] = leaf_hash(hashlib.sha256(data_leaves[changed]).digest())
    assert not verify_consistency(old, new, root_of(forged[:old]), root_of(hashes), proof)


@given(leaves, st.data())
def test_every_inclusion_proof_verifies(data_leaves: list[bytes], data: st.DataObject) -> None:
    """Every leaf's audit path verifies against the root; another leaf at that index fails."""
    hashes = [leaf_hash(leaf) for leaf in data_leaves]
    index = data.draw(st.integers(0, len(hashes) - 1))
    path = inclusion_proof(hashes, index)
    assert verify_inclusion(index, len(hashes), hashes[index], path, root_of(hashes))
    assert not verify_inclusion(index, len(hashes), leaf_hash(b"x" + data_leaves[index]), path, root_of(hashes))


@settings(max_examples=5, deadline=None)
@given(st.binary(min_size=1, max_size=32))
def test_the_frontier_root_is_the_full_tree_root_at_every_size_to_300(seed: bytes) -> None:
    """A frontier grown one leaf at a time has, after each of 0..300 leaves, the root the whole tree has
    (RFC 6962's recursive definition), and keeps one subtree per bit of its size."""
    hashes = [leaf_hash(hashlib.sha256(seed + n.to_bytes(2, "big")).digest()) for n in range(300)]
    frontier = Frontier()
    assert frontier.root() == root_of([]) == EMPTY_ROOT
    for size in range(1, 301):
        frontier.append(hashes[size - 1])
        assert frontier.size == size and frontier.root() == root_of(hashes[:size])
        assert len(frontier._stack) == bin(size).count("1")
