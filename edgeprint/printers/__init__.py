"""Printers: the typed IPP client (the only home of pyipp)."""
