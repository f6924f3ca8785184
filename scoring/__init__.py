"""Plain-Python scoring: judge specs and rendering, tier-1 signatures, answer parsing, aggregation.

Nothing here imports Django; everything works on dataclasses and plain dicts.
"""
