"""``plantrail new``: write a commented TOML draft to start a plan from."""

from __future__ import annotations

import os

import click

from plantrail.cli.common import FilePath, emit, json_option

__all__ = ["new"]


@click.command()
@click.argument("draft", type=FilePath(dir_okay=False, path_type=str), metavar="DRAFT.toml")
@json_option
def new(draft: str, as_json: bool) -> None:
    """Write a commented TOML plan draft to edit: a goal, one criterion and two steps, with the contract's
    optional terms (checks, scopes, budgets, approvals, policy) as comments where they go.

    The draft as written is a valid plan: check it, edit it, and create a run from it. An existing file is
    never overwritten (DRAFT_EXISTS); the name must end in .toml.

    \b
    Example:
      plantrail new plan.toml
      plantrail create run.jsonl --plan plan.toml
    """
    from plantrail.ledger.stores.owned import Folder
    from plantrail.ledger.vocabulary.draft_template import TEMPLATE
    from plantrail.ledger.vocabulary.draft_toml import is_toml
    from plantrail.ledger.vocabulary.errors import error

    if not is_toml(draft):
        raise error("USAGE", f"new writes a TOML draft: name it *.toml, not {draft}")
    parent, name = os.path.split(draft)
    with Folder.open(parent or ".", what="folder") as folder:
        if folder.lstat(name) is not None:
            raise error("DRAFT_EXISTS", f"{draft} already exists; new never overwrites a file", path=draft)
        fd = folder.open_file(name, write=True, create=True, what="draft")
        with os.fdopen(fd, "wb") as out:
            out.write(TEMPLATE.encode())
    emit(
        as_json,
        {"ok": True, "draft": draft},
        lambda: f"wrote {draft}: edit it, then plantrail create run.jsonl --plan {draft}",
    )
