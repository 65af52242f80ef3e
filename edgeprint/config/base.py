"""Shared pieces of every section: names, media names, the frozen model."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

NAME_PATTERN = r"^[a-z0-9-]{1,40}$"
Name = Annotated[str, Field(pattern=NAME_PATTERN)]
_MEDIA_NAME_PATTERN = r"^[a-z0-9-]+_[a-z0-9.-]+_[0-9]+(\.[0-9]+)?x[0-9]+(\.[0-9]+)?(in|mm)$"
#: A PWG 5101.1 self-describing media name that states its size (``oe_4x3-label_4x3in``).
MediaName = Annotated[str, Field(pattern=_MEDIA_NAME_PATTERN, max_length=80)]


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
