"""Dispatch: one worker task per printer, all owned by one TaskGroup (DESIGN §3–§4)."""
