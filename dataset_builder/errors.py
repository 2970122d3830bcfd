"""Alias kept for code that imported the error type from here: it lives in ``mmspubench.errors``."""

from mmspubench.errors import MMSpuBenchError, record_error

__all__ = ["MMSpuBenchError", "record_error"]
