"""edgeprint: a print-job appliance that prints every accepted job exactly once."""

__version__ = "0.1.0"
