"""The JSON API for CI and scripts, on django-ninja: sweeps, their gate, export snapshots.

site.py builds the API object; sweeps.py and snapshots.py hold the operations; schemas.py their
request and response shapes; auth.py the token check; errors.py the one JSON error shape.
"""
