"""The context benchmark's main table (bench.context): the model calls and times of cold contexts, and the
scheduler's and the caches' cost."""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from bot.memory.summaries.scheduler import Pass
from bot.settings import Settings


def rows(
    args: argparse.Namespace,
    first: dict[str, Any],
    imported: Pass,
    normal: dict[str, Any],
    *,
    backlog_calls: int,
    warmed: int,
) -> list[list[str]]:
    """The main table: cold contexts first, then what the scheduler and the caches cost."""
    return [
        *_cold_rows(first, normal),
        *_cost_rows(args, imported, normal, backlog_calls, warmed),
    ]


def _cold_rows(first: dict[str, Any], normal: dict[str, Any]) -> list[list[str]]:
    cold_calls, cold_times, _ = normal["cold"]
    eve_calls, eve_times, _ = normal["eve"]
    patient_calls, patient_times, patient_behind = first["patient"]
    return [
        [
            "cold context, past days summarised by the scheduler (first of the day / another member)",
            f"{cold_calls[0]} / {max(cold_calls[1:])} calls",
            f"{cold_times[0] * 1000:.0f} / {statistics.median(cold_times[1:]) * 1000:.0f} ms",
            "target ≤ 3 calls and ≤ 1 s; today's batch beside the history, then the merge",
        ],
        [
            "cold context, yesterday not summarised (no scheduler)",
            f"{eve_calls[0]} calls",
            f"{eve_times[0] * 1000:.0f} ms",
            "yesterday's batch inside the history",
        ],
        [
            "cold context, nothing summarised (day one), waiting for all of it",
            f"{patient_calls[0]} calls",
            f"{patient_times[0] * 1000:.0f} ms",
            f"today beside 6 past days (4 at once) → history → merge; {patient_behind} more meanwhile for rollups",
        ],
        [
            "day one within the guard (MEMORY_WAIT_SECONDS = 1 s)",
            ", ".join(f"{name} {'yes' if ok else 'NO'}" for name, ok in first["has"].items()),
            f"{first['answered'] * 1000:.0f} ms",
            "facts + offline extract while the model works",
        ],
        [
            "day one, once the backlog landed",
            f"{first['after'][0]} calls",
            "-",
            "the merged context: " + ("yes" if first["after"][1] else "NO"),
        ],
    ]


def _cost_rows(
    args: argparse.Namespace, imported: Pass, normal: dict[str, Any], backlog_calls: int, warmed: int
) -> list[list[str]]:
    warm = normal["warm"]
    concurrency = Settings(_env_file=None).summary_concurrency  # type: ignore[call-arg]
    return [
        [
            "scheduler at midnight: the day that ended",
            f"{normal['midnight'][0]} call",
            f"{normal['midnight'][1] * 1000:.0f} ms",
            f"{args.per_day:,} messages, {args.users} members",
        ],
        [
            f"scheduler backlog after an import ({args.days} days)",
            f"{backlog_calls / max(imported.built, 1):.1f} calls per guild-day",
            f"{imported.seconds / max(imported.built, 1) * 1000:.0f} ms per guild-day",
            f"{imported.built} days in {imported.seconds:.1f} s, SUMMARY_CONCURRENCY={concurrency}",
        ],
        [
            "background calls after the cold contexts",
            str(normal["background"]),
            "-",
            "these members' rollups were built on the days before",
        ],
        [
            "warm get_memories p50 / p99",
            "-",
            f"{_pct(warm, 50) * 1000:.3f} / {_pct(warm, 99) * 1000:.3f} ms",
            f"{len(warm)} calls; target p99 < 1 ms",
        ],
        ["cache bytes per member (approx.)", f"{normal['bytes']:,.0f}", "-", f"tracemalloc, {warmed} members warmed"],
    ]


def _pct(values: list[float], pct: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]
