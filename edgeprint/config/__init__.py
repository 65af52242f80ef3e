"""Configuration: a TOML file validated by pydantic (frozen, unknown keys refused).

Load with :func:`load_config`; every problem raises :class:`errors.ConfigError`
naming the bad key in dotted form (``printers[1].pool``).

The sections live by kind (:mod:`.appliance`: how the appliance runs; :mod:`.peers`:
printers, tokens, webhooks, IPP, event, metrics) and the whole file in :mod:`.file`;
this package re-exports every public name.
"""

from __future__ import annotations

from edgeprint.config.appliance import (
    ClusterConfig,
    DispatchConfig,
    ReleaseConfig,
    RetentionConfig,
    ServerConfig,
    StoreConfig,
)
from edgeprint.config.base import (
    NAME_PATTERN,
    Frozen,
    MediaName,
    Name,
)
from edgeprint.config.file import (
    SELF_SIGNED_CERT,
    SELF_SIGNED_KEY,
    Config,
    load_config,
    parse_config,
)
from edgeprint.config.peers import (
    BADGE_SIDE_HMM,
    DEFAULT_IPP_NETWORKS,
    EventConfig,
    IppConfig,
    MetricsConfig,
    PrinterConfig,
    TokenConfig,
    WebhookConfig,
    WebhookEvent,
)

__all__ = [
    "BADGE_SIDE_HMM",
    "DEFAULT_IPP_NETWORKS",
    "NAME_PATTERN",
    "SELF_SIGNED_CERT",
    "SELF_SIGNED_KEY",
    "ClusterConfig",
    "Config",
    "DispatchConfig",
    "EventConfig",
    "Frozen",
    "IppConfig",
    "MediaName",
    "MetricsConfig",
    "Name",
    "PrinterConfig",
    "ReleaseConfig",
    "RetentionConfig",
    "ServerConfig",
    "StoreConfig",
    "TokenConfig",
    "WebhookConfig",
    "WebhookEvent",
    "load_config",
    "parse_config",
]
