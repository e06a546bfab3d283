"""The ``plantrail`` command's entry point (the installed script and ``python -m plantrail``).

An agent hook call as the hooks are installed, ``plantrail hook claude`` (or ``gemini``, ``opencode``) with
no options, runs once per agent event: it is answered by :func:`plantrail.cli.hook_call.run` without loading
click or the command table (about 15 ms of a hook's start-up). Every other command line, the hooks' with
options included, is :func:`plantrail.cli.main.main`'s, with msgspec loaded first without typing_extensions
(:func:`plantrail.cli.hook_call.load_msgspec`: about 3 ms of every command's start-up).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    from plantrail.cli.hook_call import AGENTS, load_msgspec, run

    if len(args) == 2 and args[0] == "hook" and args[1] in AGENTS:
        return run(args[1])
    load_msgspec()  # without typing_extensions, as a hook call does (a command that needs it imports it later)
    from plantrail.cli.main import main as command_line

    return command_line(args)


if __name__ == "__main__":
    sys.exit(main())
