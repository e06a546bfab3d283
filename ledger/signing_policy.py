"""A signing policy handed from a front door to the ledgers it opens: which key signs checkpoints, and when.

The front doors (the recording commands' ``--sign-key`` / ``--sign-every``, ``plantrail mcp``, the hooks) read
the policy from their options or from ``$PLANTRAIL_SIGN_KEY`` / ``$PLANTRAIL_SIGN_EVERY`` and run their work
inside :func:`signing`; every :class:`plantrail.ledger.api.Ledger` opened or created inside signs on it
(:meth:`~plantrail.ledger.api.Ledger.sign_on`). Kept apart from :mod:`ledger.signing` so that a command run
without a policy imports nothing of the signing machinery.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from plantrail.ledger.vocabulary.errors import PlantrailError, error

if TYPE_CHECKING:
    from plantrail.ledger.signing import Signer

__all__ = [
    "SIGN_EVERY_ENV",
    "SIGN_KEY_ENV",
    "SigningPolicy",
    "current_policy",
    "policy_from_env",
    "signing",
    "signing_policy",
]

#: The signing key file every front door signs with when it is set (``--sign-key``).
SIGN_KEY_ENV: Final = "PLANTRAIL_SIGN_KEY"
#: Sign after every N records as well (``--sign-every``); without it, at the run's finish only.
SIGN_EVERY_ENV: Final = "PLANTRAIL_SIGN_EVERY"


@dataclass(frozen=True, slots=True)
class SigningPolicy:
    """When a writer signs checkpoints (:meth:`plantrail.ledger.api.Ledger.sign_on`): with ``signer``, after
    every ``every`` records (None: never on a count) and after the turn that finishes the run."""

    signer: Signer
    every: int | None = None
    at_finish: bool = True


def signing_policy(key: str | None, every: str | int | None) -> SigningPolicy | None:
    """The policy a front door's ``--sign-key FILE`` / ``--sign-every N`` (or ``$PLANTRAIL_SIGN_KEY`` /
    ``$PLANTRAIL_SIGN_EVERY``) give: None without a key; USAGE for an N that is no positive whole number in
    decimal digits, or an N without a key; SIGNING_KEY_INVALID for a key file that holds no private key."""
    count: int | None = None
    if every is not None and every != "":
        text = str(every) if type(every) is int else every
        if not isinstance(text, str) or not text.isascii() or not text.isdigit() or int(text) < 1 or len(text) > 9:
            raise error(
                "USAGE", f"sign every N records: N is a positive whole number (at most 9 digits), not {every!r}"
            )
        count = int(text)
    if key is None or key == "":
        if count is not None:
            raise error("USAGE", f"signing every {count} records needs a signing key, and none was given")
        return None
    from plantrail.ledger.signing import load_signer

    return SigningPolicy(load_signer(key), count)


def policy_from_env(env: Mapping[str, str]) -> SigningPolicy | None:
    """The policy ``$PLANTRAIL_SIGN_KEY`` and ``$PLANTRAIL_SIGN_EVERY`` in ``env`` give (see :func:`signing_policy`)."""
    return signing_policy(env.get(SIGN_KEY_ENV), env.get(SIGN_EVERY_ENV))


_POLICY: ContextVar[SigningPolicy | PlantrailError | None] = ContextVar("plantrail_signing", default=None)


@contextmanager
def signing(policy: SigningPolicy | PlantrailError | None) -> Iterator[None]:
    """Every ledger opened or created inside the block signs on ``policy`` (what a front door read from its
    options or environment). A refusal a front door cannot report itself (a hook never fails its agent) is
    passed instead, and every ledger the block opens raises it before writing anything."""
    token = _POLICY.set(policy)
    try:
        yield
    finally:
        _POLICY.reset(token)


def current_policy() -> SigningPolicy | None:
    """The policy of the innermost :func:`signing` block (None outside one); raises the refusal it holds."""
    policy = _POLICY.get()
    if isinstance(policy, PlantrailError):
        raise policy
    return policy
