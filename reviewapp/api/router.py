"""The router every part of the API declares its operations on, so that each keeps the same conventions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ninja import Router

from reviewapp.api.schemas import ERRORS


class ApiRouter(Router):
    """A ninja Router whose operations are named after their view and may answer every JSON error.

    An operation declares only its own answers (`response={200: ...}`, a 409 where it has one); the
    error statuses of schemas.ERRORS are added to them. The view `sweep_gate` is the URL name
    `api_sweep_gate` (for reverse()) and the OpenAPI operation id `sweepGate`.
    """

    def add_api_operation(self, path: str, methods: list[str], view_func: Callable, **options: Any) -> None:
        name = view_func.__name__
        first, *rest = name.split("_")
        options["response"] = {**options["response"], **ERRORS}
        options.update(url_name=f"api_{name}", operation_id=first + "".join(word.title() for word in rest))
        super().add_api_operation(path, methods, view_func, **options)
