"""A database append of one record is one statement after its catch-up read: one round trip and one
transaction for the insert and its wake-up, not a BEGIN, an insert, a notify and a COMMIT."""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest

from plantrail.ledger.api import Ledger
from tests.conftest import LOGIN_DRAFT, Clock
from tests.helpers.stores import postgres_url, unique_run

psycopg = __import__("psycopg") if os.environ.get("CI") == "true" else pytest.importorskip("psycopg")


@pytest.mark.parametrize("notify", ["on", "off"])
def test_an_append_of_one_record_is_one_statement_after_its_read(monkeypatch: pytest.MonkeyPatch, notify: str) -> None:
    """Starting a step sends the catch-up read and one statement (with NOTIFY on, the wake-up in it), opens no
    explicit transaction, and the record and its wake-up land as before."""
    server = postgres_url()
    url = f"{server}{'&' if '?' in server else '?'}notify={notify}#{unique_run('turns')}"
    sent: list[str] = []
    transactions: list[int] = []
    execute, transaction = psycopg.Connection.execute, psycopg.Connection.transaction

    def counting_execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(query))
        return execute(self, query, *args, **kwargs)

    def counting_transaction(self: Any, *args: Any, **kwargs: Any) -> Any:
        transactions.append(1)
        return transaction(self, *args, **kwargs)

    with Ledger.create(url, copy.deepcopy(LOGIN_DRAFT), clock=Clock()) as ledger:
        listener = psycopg.connect(server, autocommit=True)
        try:
            listener.execute("LISTEN plantrail_records")
            monkeypatch.setattr(psycopg.Connection, "execute", counting_execute)
            monkeypatch.setattr(psycopg.Connection, "transaction", counting_transaction)
            ack = ledger.start("reproduce")
            monkeypatch.undo()
            inserts = [q for q in sent if "INSERT" in q]
            assert len(inserts) == 1 and transactions == []
            assert ("pg_notify" in inserts[0]) == (notify == "on")
            woken = list(listener.notifies(timeout=2, stop_after=1)) if notify == "on" else []
            assert [n.payload for n in woken] == ([ledger.state.run] if notify == "on" else [])
        finally:
            listener.close()
        assert ledger.refresh().last_seq == ack.seq
