"""An immutable mapping with a fixed key order whose updates share structure.

A plan version fixes its step ids and their order, so the state keeps steps in a :class:`Table`: a shared
id -> position index plus values in chunks of 32. ``set`` copies one chunk and the chunk list, not the
whole table, so :func:`projections.state.evolve` stays pure without copying a 10,000-step plan per event.

A table also answers how many of its values fall in each class of a function (:meth:`Table.tally`, e.g. steps
by status): counted once, then carried through every ``set`` by looking at the one value replaced, so a
question asked on every event costs what the event changed, not the size of the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, ValuesView
from itertools import chain
from typing import Final, Generic, TypeVar, overload

__all__ = ["Table"]

V = TypeVar("V")
T = TypeVar("T")
_BITS: Final = 5
_CHUNK: Final = 1 << _BITS
_MASK: Final = _CHUNK - 1


#: A tally: the function that classes the values, and how many values fall in each class.
_Tally = tuple[Callable[[V], Hashable], dict[Hashable, int]]


class Table(Mapping[str, V], Generic[V]):
    """An ordered, immutable ``str -> V`` mapping; ``set`` returns a new table sharing unchanged chunks."""

    __slots__ = ("_chunks", "_index", "_keys", "_tally")

    def __init__(self, keys: tuple[str, ...], values: Iterable[V]) -> None:
        items = tuple(values)
        if len(items) != len(keys):
            raise ValueError("a table needs exactly one value per key")
        self._keys = keys
        self._index = {k: i for i, k in enumerate(keys)}
        self._chunks = tuple(items[i : i + _CHUNK] for i in range(0, len(items), _CHUNK))
        self._tally: _Tally[V] | None = None

    @classmethod
    def _share(
        cls,
        keys: tuple[str, ...],
        index: dict[str, int],
        chunks: tuple[tuple[V, ...], ...],
        tally: _Tally[V] | None = None,
    ) -> Table[V]:
        table: Table[V] = cls.__new__(cls)
        table._keys = keys
        table._index = index
        table._chunks = chunks
        table._tally = tally
        return table

    def __getitem__(self, key: str) -> V:
        i = self._index[key]
        return self._chunks[i >> _BITS][i & _MASK]

    @overload
    def get(self, key: str, /) -> V | None: ...
    @overload
    def get(self, key: str, /, default: V | T) -> V | T: ...
    def get(self, key: str, default: object = None) -> object:
        """The value bound to ``key``, or ``default`` (one index lookup, not Mapping's try/except around [])."""
        i = self._index.get(key)
        return default if i is None else self._chunks[i >> _BITS][i & _MASK]

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Table):
            return self._keys == other._keys and self._chunks == other._chunks
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # a mapping is not hashable

    def __repr__(self) -> str:
        return f"Table({dict(self.items())!r})"

    def values(self) -> ValuesView[V]:
        """The values, in the table's order (iterated chunk by chunk, not looked up key by key)."""
        return _Values(self)

    def values_in_order(self) -> Iterator[V]:
        """The values, in the table's order."""
        return chain.from_iterable(self._chunks)

    def to_dict(self) -> dict[str, V]:
        """A mutable copy as a plain dict, in the table's order."""
        return dict(zip(self._keys, chain.from_iterable(self._chunks), strict=True))

    def tally(self, of: Callable[[V], Hashable]) -> Mapping[Hashable, int]:
        """How many values ``of`` puts in each class (classes with none are absent). Counted over every value
        the first time it is asked with this function; a table made from this one by :meth:`set` carries the
        tally on, changed by the one value replaced, until it is asked with another function. Read it, never
        change it."""
        tally = self._tally
        if tally is None or tally[0] is not of:
            counts: dict[Hashable, int] = {}
            for value in chain.from_iterable(self._chunks):
                cls = of(value)
                counts[cls] = counts.get(cls, 0) + 1
            tally = self._tally = (of, counts)
        return tally[1]

    def set(self, key: str, value: V) -> Table[V]:
        """A new table with ``key`` bound to ``value``; the key must already exist."""
        i = self._index[key]
        c = i >> _BITS
        chunk = list(self._chunks[c])  # copying through lists is twice as fast as slicing and unpacking
        old = chunk[i & _MASK]
        chunk[i & _MASK] = value
        chunks = list(self._chunks)
        chunks[c] = tuple(chunk)
        tally = self._tally
        if tally is not None:
            of, counts = tally
            was, now = of(old), of(value)
            if was != now:
                counts = dict(counts)
                counts[now] = counts.get(now, 0) + 1
                if counts[was] == 1:
                    del counts[was]
                else:
                    counts[was] -= 1
                tally = (of, counts)
        return Table._share(self._keys, self._index, tuple(chunks), tally)


class _Values(ValuesView[V]):
    """A table's values view, iterated straight from its chunks."""

    __slots__ = ()
    _mapping: Table[V]

    def __iter__(self) -> Iterator[V]:
        return chain.from_iterable(self._mapping._chunks)
