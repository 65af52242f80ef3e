"""Where the release credentials' lookup key lives (issue 24).

The lookup digest of a code or card is HMAC-SHA256 under one random key. Beside the
digests, that key gives every credential away to whoever tries the values (a 6-digit
code: 10^6 HMACs), so with the embedded SQLite store it is kept **outside** the
database: ``<data_dir>/release.key`` (64 hex characters and a newline, mode 0600,
linked in place whole). A copy of the database alone then holds digests no one can test guesses
against. With PostgreSQL every appliance must use the same key, so it stays in the
shared database's ``release_key`` row (docs/decisions/0073).

An existing store's key (in ``release_key``, from before) is **adopted**: written to
the file, then deleted from the database, so the codes and cards set before still
open. A key is never made anew while credentials exist without one (a database
restored without its key file): that would turn every code into a wrong one, so it is
errors.ReleaseKeyMissing until the file is restored or the credentials are removed.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
from pathlib import Path

from edgeprint import errors
from edgeprint.store.owners import Owners

#: The key file's name in data_dir.
KEY_FILE = "release.key"
_KEY_RE = re.compile(r"^[0-9a-f]{64}$")


def _read(path: Path) -> str | None:
    """The key in ``path``; None when there is no file. errors.ReleaseKeyMissing when it
    is not a key (nothing is overwritten)."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise errors.ReleaseKeyMissing(str(path), f"cannot be read ({exc})") from None
    if not _KEY_RE.match(text):
        raise errors.ReleaseKeyMissing(str(path), "is not 64 lowercase hex characters")
    return text


def _write(path: Path, key: str) -> str:
    """Make ``path`` hold ``key`` (0600, synced), never half-written: the key goes to a
    private file first, which is then linked in place (a link does not replace a file).
    The key the file holds afterwards: another writer's, when its link came first."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(8)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        try:
            os.write(fd, (key + "\n").encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(tmp, path)
    except FileExistsError:
        found = _read(path)
        if found is None:  # made and removed meanwhile: not something to guess about
            raise errors.ReleaseKeyMissing(str(path), "vanished while it was made") from None
        return found
    finally:
        tmp.unlink(missing_ok=True)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return key


async def file_key(owners: Owners, path: Path) -> str:
    """The lookup key (hex) kept in ``path``: read, or adopted from the database's
    ``release_key`` row (then that row is deleted), or made when no credential exists.

    Raises errors.ReleaseKeyMissing (credentials exist but no key; the file and the row
    disagree; the file is not a key), errors.StoreError."""
    key = await asyncio.to_thread(_read, path)
    stored = await owners.stored_key()
    if key is not None and stored is not None and stored != key:
        raise errors.ReleaseKeyMissing(
            str(path), "holds another key than the database's release_key row"
        )
    if key is None:
        if stored is None and await owners.any_credentials():
            raise errors.ReleaseKeyMissing(str(path), "is missing, and credentials exist")
        key = await asyncio.to_thread(_write, path, stored or os.urandom(32).hex())
        if stored is not None and key != stored:
            raise errors.ReleaseKeyMissing(
                str(path), "holds another key than the database's release_key row"
            )
    if stored is not None:
        await owners.forget_stored_key()  # it is in the file now: the database keeps none
    return key
