"""edgeprint as a printer: IPP queues for every printer and pool, advertised with DNS-SD."""
