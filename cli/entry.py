"""The ``plantrail`` command's entry point (the installed script and ``python -m plantrail``).

An agent hook call as the hooks are installed, ``plantrail hook claude`` (or ``gemini``, ``opencode``) with
no options, runs once per agent event: it is answered by :func:`plantrail.cli.hook_call.run` without loading
click or the command table (about 15 ms of a hook's start-up). Every other command line, the hooks' with
options included, is :func:`plantrail.cli.main.main`'s; msgspec, when a command loads it, loads without
typing_extensions (:class:`_WithoutTypingExtensions`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 2 and args[0] == "hook":
        from plantrail.cli.hook_call import AGENTS, run

        if args[1] in AGENTS:
            return run(args[1])
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    from plantrail.cli.main import main as command_line

    return command_line(args)


class _WithoutTypingExtensions:
    """An import finder that refuses typing_extensions while msgspec is being loaded, and leaves every other
    import (typing_extensions' own at any other time included) to the finders after it.

    msgspec imports typing_extensions only for ``get_type_hints``, ``Required`` and ``NotRequired``, and falls back
    to :mod:`typing`'s when it cannot; on Python 3.11+ they resolve the same types
    (:func:`plantrail.cli.hook_call.load_msgspec`, which a hook call uses, says why). A command that records
    loads msgspec when it first needs it, and this saves it about 3 ms of start-up; a command that never loads
    msgspec (``status`` with its snapshot) pays nothing for it."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        """None (the finders after this one find it), or ImportError for typing_extensions while msgspec loads."""
        if fullname == "typing_extensions":
            msgspec = sys.modules.get("msgspec")
            if msgspec is not None and getattr(msgspec.__spec__, "_initializing", False):
                raise ImportError("typing_extensions is left out while msgspec loads", name=fullname)
        return None


_FINDER: Final = _WithoutTypingExtensions()


if __name__ == "__main__":
    sys.exit(main())
