"""The ``edgeprint`` command: the appliance (serve, check-config, token new, setup,
discover) and the technicians' commands that talk to a running appliance's local API.

``parser`` is the command line, ``commands`` runs one (serve, check-config and token are
there), ``tech`` holds the technicians' commands, ``client`` the HTTP client, ``render``
the tables, ``setup`` and ``discover`` their own commands.

Technician commands (DESIGN §8)::

    edgeprint status                      one screen: printers, pools, jobs by state, dead letter
    edgeprint printers                    every printer in full, and the pools
    edgeprint printers sticker PRINTER [--out FILE] [--print] [--base URL]   its QR sticker
    edgeprint jobs [--state S] [--owner O] [--printer P] [--limit N] [--cursor C]
    edgeprint dead-letter [--limit N] [--cursor C]
    edgeprint replay JOB_ID               DEAD → RELEASED (once)
    edgeprint release JOB_ID [--printer P | --pool Q] [--pin PIN]   HELD → RELEASED
    edgeprint cancel JOB_ID [--pin PIN]
    edgeprint pause|resume|drain PRINTER
    edgeprint preflight [--badge FILE] [--no-print] [--wait S]   every printer, before the doors
    edgeprint rehearsal|go-live|event     the event's mode (new jobs are tests until go-live)
    edgeprint audit [--since T] [--limit N] [--actor A] [--action X]   who did what, newest first
    edgeprint tls fingerprint             what kiosks pin: the certificate's SHA-256, the key's pin

They find the appliance by themselves (``locate``: ``--url``, ``--config``,
``$EDGEPRINT_URL``, ``$EDGEPRINT_CONFIG``, /etc/edgeprint/config.toml,
.quickstart/config.toml, http://127.0.0.1:8631) and its token (``credentials``:
``--token``, ``--token-file``, ``$EDGEPRINT_TOKEN``, ``$EDGEPRINT_TOKEN_FILE``,
``tech.token`` beside the config found), pin an https:// appliance's certificate
(``trust``: ``--fingerprint``, ``$EDGEPRINT_TLS_FINGERPRINT``, the config's cert file), and
take ``--json`` (the API's JSON as-is,
for scripts). The HTTP client is the standard library's, so the command starts fast
and needs no event loop.

Exit codes: 0 ok; 1 the appliance answered with an error (its ``detail`` is
printed), or a runtime failure of ``serve``; 2 bad usage or bad config; 3 the
appliance cannot be reached (the URL and where it came from are named); 4
preflight: a printer would fail the morning.
"""

from edgeprint.cli import client, render
from edgeprint.cli.commands import main

__all__ = ["client", "main", "render"]
