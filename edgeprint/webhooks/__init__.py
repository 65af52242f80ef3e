"""Webhooks: the outbox reader and signed delivery (Standard Webhooks)."""
