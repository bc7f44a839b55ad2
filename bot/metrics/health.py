"""What /healthz answers: live (the event loop answers at all) and ready (storage answers, the gateway is connected).

A bot that is up but cannot store or cannot hear Discord is not ready: a supervisor or load balancer should know.
The console has no gateway: it is ready when storage is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from db.engine import ping

STORAGE_SECONDS = 2.0  # a database slower than this to answer SELECT 1 is as good as away for a reply


@dataclass(frozen=True, slots=True)
class Health:
    """Whether the process may take work, and a short word per check (no URLs, no error texts: no secrets)."""

    ready: bool
    checks: dict[str, str]


async def check(
    engine: AsyncEngine, gateway: Callable[[], bool] | None, *, storage_seconds: float = STORAGE_SECONDS
) -> Health:
    """Storage (one SELECT 1 within `storage_seconds`) and, in Discord mode, the gateway connection."""
    storage = await _storage(engine, storage_seconds)
    checks = {"live": "ok", "storage": storage}
    if gateway is None:
        checks["gateway"] = "none (console)"
        gateway_ok = True
    else:
        gateway_ok = gateway()
        checks["gateway"] = "connected" if gateway_ok else "disconnected"
    return Health(storage == "ok" and gateway_ok, checks)


async def _storage(engine: AsyncEngine, seconds: float) -> str:
    try:
        async with asyncio.timeout(seconds):
            await ping(engine)
    except TimeoutError:
        return f"no answer within {seconds:g} s"
    except Exception as exc:  # noqa: BLE001 - whatever the driver raises, the answer is "not ready"
        return f"unreachable ({type(exc).__name__})"  # the type only: a driver's text may carry the host or user
    return "ok"
