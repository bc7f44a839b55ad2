"""Scraping the metrics server as Prometheus would, and reading samples out of the text format."""

from __future__ import annotations

import aiohttp
from prometheus_client.parser import text_string_to_metric_families


async def scrape(port: int, path: str) -> tuple[int, str]:
    """The status and body of GET `path` on the metrics port."""
    timeout = aiohttp.ClientTimeout(total=10)  # a hang guard
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.get(f"http://127.0.0.1:{port}{path}") as response,
    ):
        return response.status, await response.text()


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a /metrics page by name and labels (the parser fails on a page Prometheus would refuse)."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(page: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float | None:
    """One sample's value, None when the page does not have it."""
    return page.get((name, frozenset(labels.items())))


def names(page: dict[tuple[str, frozenset[tuple[str, str]]], float]) -> set[str]:
    """The sample names on a page."""
    return {name for name, _ in page}
