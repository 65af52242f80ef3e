"""Which bearer token the CLI sends, and where it came from (issue 25).

In order: ``--token``, ``--token-file PATH``, ``$EDGEPRINT_TOKEN``, ``$EDGEPRINT_TOKEN_FILE``,
then ``tech.token`` next to the config the URL came from (``/etc/edgeprint/tech.token``
written by ``edgeprint setup``, ``.quickstart/tech.token`` by the quick start) when it can
be read. A file keeps the token out of shell history and ``ps``. The default file is only
read for the appliance its config names (a URL typed by hand finds the config that names
the same appliance: cli/locate.py), so a token never travels to another URL unasked.
A file's content is never echoed, even when it is wrong.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from edgeprint.cli.errors import UsageError
from edgeprint.cli.locate import Where

TOKEN_ENV = "EDGEPRINT_TOKEN"
TOKEN_FILE_ENV = "EDGEPRINT_TOKEN_FILE"
#: The token file's name next to a config (``edgeprint setup`` writes it there).
TOKEN_FILE_NAME = "tech.token"
#: A bearer token as it may travel in a header: printable ASCII, no spaces.
TOKEN_RE = re.compile(r"^[\x21-\x7e]{1,4096}$")
_MAX_FILE_BYTES = 8192


@dataclass(frozen=True)
class Token:
    """A bearer token and where it came from (``--token``, ``$EDGEPRINT_TOKEN``, a path)."""

    value: str
    source: str


def bearer_token(
    token_flag: str | None,
    file_flag: str | None,
    where: Where,
    env: Mapping[str, str] | None = None,
) -> Token | None:
    """The token to send (None: none anywhere); raises UsageError for a bad one."""
    env = os.environ if env is None else env
    if token_flag is not None:
        return _checked(token_flag, "--token")
    if file_flag is not None:
        return Token(read_token_file(Path(file_flag), "--token-file"), str(file_flag))
    if env.get(TOKEN_ENV, "").strip():
        return _checked(env[TOKEN_ENV], f"${TOKEN_ENV}")
    if env.get(TOKEN_FILE_ENV):
        path = Path(env[TOKEN_FILE_ENV])
        return Token(read_token_file(path, f"${TOKEN_FILE_ENV}"), str(path))
    path_ = default_file(where)
    if path_ is not None and _readable(path_):
        return Token(read_token_file(path_, "beside the config"), str(path_))
    return None


def default_file(where: Where) -> Path | None:
    """``tech.token`` next to the config the URL came from (None: the URL is not from one)."""
    return None if where.config is None else where.config.parent / TOKEN_FILE_NAME


def missing_hint(where: Where) -> str:
    """Why no token was found for ``where.url``, and what to give; a token file beside a
    config of another appliance is named with the URL it is for (never sent elsewhere)."""
    path = default_file(where)
    if path is None:
        elsewhere = [
            f"the {TOKEN_FILE_NAME} beside {config} is for {url}"
            for config, url in where.others
            if os.path.lexists(config.parent / TOKEN_FILE_NAME)
        ]
        extra = f" ({'; '.join(elsewhere)})" if elsewhere else ""
    elif not os.path.lexists(path):
        extra = f" ({path} is not there: edgeprint setup writes it)"
    elif not _readable(path):
        extra = f" ({path} is there but not readable by you: sudo)"
    else:
        extra = ""
    return (
        f"no token for {where.url} ({where.origin}): give --token-file PATH, or set "
        f"${TOKEN_FILE_ENV} or ${TOKEN_ENV}, to a tech token (edgeprint token new --role tech)"
        f"{extra}"
    )


def _readable(path: Path) -> bool:
    return os.access(path, os.R_OK)


def _checked(raw: str, where: str) -> Token | None:
    token = raw.strip()
    if not token:
        return None
    if not TOKEN_RE.fullmatch(token):
        raise UsageError(f"{where} holds characters a token cannot have (spaces, non-ASCII)")
    return Token(token, where)


def read_token_file(path: Path, named_by: str) -> str:
    """The one token in ``path`` (surrounding whitespace and a final newline dropped);
    raises UsageError saying what is wrong with the file, never what it holds."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except PermissionError:
        raise UsageError(
            f"cannot read the token file {path} ({named_by}): permission denied "
            "(it is root's: run with sudo, or give a token file you can read)"
        ) from None
    except FileNotFoundError:
        raise UsageError(f"the token file {path} ({named_by}) does not exist") from None
    except OSError as exc:
        raise UsageError(
            f"cannot read the token file {path} ({named_by}): {exc.strerror or exc}"
        ) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError(f"the token file {path} ({named_by}) is not a regular file")
        raw = os.read(fd, _MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise UsageError(
            f"cannot read the token file {path} ({named_by}): {exc.strerror or exc}"
        ) from None
    finally:
        os.close(fd)
    bad = f"the token file {path} ({named_by})"
    if len(raw) > _MAX_FILE_BYTES:
        raise UsageError(f"{bad} is too big for a token (over {_MAX_FILE_BYTES} bytes)")
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise UsageError(f"{bad} does not hold a token: it is not plain ASCII text") from None
    token = text.strip()
    if not token:
        raise UsageError(f"{bad} is empty: put the tech token in it, on one line")
    if not TOKEN_RE.fullmatch(token):
        raise UsageError(
            f"{bad} does not hold one token: a token is one line of printable characters, "
            "no spaces or control characters"
        )
    return token
