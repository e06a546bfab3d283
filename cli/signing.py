"""``plantrail keygen``: an Ed25519 key pair for signed checkpoints (checkpoint --sign-key, verify --pubkey)."""

from __future__ import annotations

import click

from plantrail.cli.common import emit, json_option

__all__ = ["keygen"]


@click.command()
@click.argument("name", metavar="NAME")
@json_option
def keygen(name: str, as_json: bool) -> None:
    """Make an Ed25519 key pair for signed checkpoints: NAME.key, the private key (mode 0600), and NAME.pub,
    the public verifier key in the C2SP signed-note form (<name>+<key id>+<key>) to give auditors and
    witnesses. Both are created exclusive: when anything by either name exists, an empty file too, nothing is
    written (KEY_EXISTS). The key's name is NAME's last part. Needs the
    cryptography package (pip install 'plantrail[sign]').

    \b
    JSON: {"ok", "private", "public" (the two paths), "verifier_key"}

    \b
    Example:
      plantrail keygen ~/.plantrail/audit
      plantrail checkpoint run.jsonl --sign-key ~/.plantrail/audit.key
      plantrail verify run.jsonl --pubkey ~/.plantrail/audit.pub
    """
    from plantrail.ledger.signing import keygen as make_keys

    private, public, vkey = make_keys(name)
    data = {"ok": True, "private": private, "public": public, "verifier_key": vkey}
    emit(
        as_json,
        data,
        lambda: f"private key: {private} (keep it secret)\npublic key: {public}\nverifier key: {vkey}",
    )
