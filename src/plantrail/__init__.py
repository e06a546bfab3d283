"""plantrail: an event-sourced plan ledger for AI agents.

``from plantrail import Ledger`` is the front door: it records a run's plan and steps as an append-only,
hash-chained log and answers from that log. The installed package holds three sub-packages:

- ``plantrail.ledger``: plan drafts, events, decisions, and the stores that keep a run's log;
- ``plantrail.projections``: pure reducers from events to state, and the views built on them;
- ``plantrail.cli``: the ``plantrail`` command.

The names below are ``plantrail.ledger``'s public API; they load on first use, so ``import plantrail`` is
cheap and the CLI starts fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from plantrail import ledger as _ledger  # cheap: ledger's names load on first use too
from plantrail._moved import install as _install_moved
from plantrail._version import __version__ as __version__

_install_moved()  # the old names of moved modules keep working

__all__: list[str] = list(_ledger.__all__)


def __getattr__(name: str) -> Any:
    if name not in _ledger.__all__:
        raise AttributeError(f"module 'plantrail' has no attribute {name!r}")
    return getattr(_ledger, name)


if TYPE_CHECKING:
    from plantrail.ledger import *  # noqa: F403
