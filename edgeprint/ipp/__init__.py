"""IPP, said once: the codec (RFC 8010) and the names (RFC 8011, PWG 5100.x) that the client
in ``printers/`` and the server in ``ipp_server/`` share."""
