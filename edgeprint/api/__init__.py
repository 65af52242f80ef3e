"""The HTTP API (aiohttp.web): parsing, auth and status codes only (DESIGN §5)."""
