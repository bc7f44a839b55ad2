"""What /metrics serves, in a registry of the app's own (tests start several bots in one process).

Levels (queue depth, spill, embedding backlog, breaker states, change-feed lag) are read at scrape time from the
objects that own them, so nothing has to keep a gauge up to date; events (model calls and tokens, replies and
their latency, deadline misses, recall searches) are counted as they happen through the owners' `observe` hooks.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from bot.llm.breaker import State
from bot.llm.resilience import ResilientProvider
from bot.reply.routing import Route

if TYPE_CHECKING:
    from bot.app import App
    from bot.llm.client import LLM
    from bot.memory.manager import MemoryManager
    from bot.settings import Settings

# Replies: a fast route answers in tens of milliseconds, a model's chat in seconds, REPLY_DEADLINE_SECONDS caps it.
REPLY_BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 30.0, 60.0)
# Recall searches: milliseconds at most sizes (docs/benchmarks.md), a tail while the database is busy.
RECALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class Meters:
    """One app's metrics: event counters and histograms fed by hooks, levels collected at scrape time."""

    def __init__(self, app: App, settings: Settings) -> None:
        # The `_created` twin of every counter and histogram doubles the page, and Prometheus ignores it unless
        # created-timestamp ingestion is switched on (a process-wide switch of the library).
        disable_created_metrics()
        self.registry = CollectorRegistry(auto_describe=False)
        self.model_calls = Counter(
            "elefant_model_calls",
            "Model calls by kind (operation) and outcome: ok, fallback (answered offline), error, skipped (breaker).",
            ["operation", "outcome"],
            registry=self.registry,
        )
        self.model_tokens = Counter(
            "elefant_model_tokens",
            "Model tokens by kind (operation) and direction (in: prompt, out: answer).",
            ["operation", "direction"],
            registry=self.registry,
        )
        self.reply_seconds = Histogram(
            "elefant_reply_seconds",
            "Seconds from a message addressed to the bot to its answer, by route.",
            ["route"],
            buckets=REPLY_BUCKETS,
            registry=self.registry,
        )
        self.deadline_misses = Counter(
            "elefant_reply_deadline_misses",
            "Replies that passed REPLY_DEADLINE_SECONDS and were answered from memory alone, by route.",
            ["route"],
            registry=self.registry,
        )
        self.recall_seconds = Histogram(
            "elefant_recall_seconds",
            "Seconds one recall search took (words, vectors, ranking).",
            buckets=RECALL_BUCKETS,
            registry=self.registry,
        )
        for route in Route:  # every route's series exists from the start, so rates and ratios need no guessing
            self.reply_seconds.labels(route.value)
            self.deadline_misses.labels(route.value)
        self.registry.register(_Levels(app.memory, app.llm, settings))
        if app.llm.usage is not None:
            app.llm.usage.observe(self._model_call)
        app.responder.deadline.observe(self._reply)
        app.memory.recall.observe(self.recall_seconds.observe)

    def _model_call(self, row: Mapping[str, Any]) -> None:
        operation = str(row["operation"])
        self.model_calls.labels(operation, str(row["outcome"])).inc()
        if tokens_in := row["tokens_in"]:
            self.model_tokens.labels(operation, "in").inc(tokens_in)
        if tokens_out := row["tokens_out"]:
            self.model_tokens.labels(operation, "out").inc(tokens_out)

    def _reply(self, route: Route, seconds: float, late: bool) -> None:
        self.reply_seconds.labels(route.value).observe(seconds)
        if late:
            self.deadline_misses.labels(route.value).inc()


class _Levels(Collector):
    """Reads the levels from their owners at each scrape: the queue, the embedding worker, breakers, the feed."""

    def __init__(self, memory: MemoryManager, llm: LLM, settings: Settings) -> None:
        self._memory = memory
        self._llm = llm
        self._models = tuple(settings.role_models.values())

    def collect(self) -> Iterator[Metric]:
        yield from self._ingest()
        yield from self._embedding()
        yield self._breakers()
        lag = GaugeMetricFamily(
            "elefant_change_feed_lag_seconds",
            "Seconds since the change log (other processes' changes) was last read to its end; polled every 0.5 s.",
        )
        if (caught_up := self._memory.changes.feed.caught_up_at) is not None:
            lag.add_metric([], time.monotonic() - caught_up)
        yield lag

    def _ingest(self) -> Iterator[Metric]:
        queue = self._memory.queue
        stats = queue.stats
        yield GaugeMetricFamily(
            "elefant_ingest_queue_depth",
            "Operations accepted and held in memory, not yet written (the write-behind queue).",
            value=queue.pending - queue.on_disk,
        )
        yield GaugeMetricFamily(
            "elefant_ingest_spilled",
            "Operations kept in spill files on disk because the queue was full, waiting for storage.",
            value=queue.on_disk,
        )
        for name, value, what in (
            ("accepted", stats.accepted, "Operations accepted by the write-behind queue."),
            ("written", stats.written, "Operations written to the database."),
            ("overflowed", stats.overflowed, "Operations that went to a spill file because the queue was full."),
            ("dead_letters", stats.dead_letters, "Records the database refused, kept as dead letters."),
        ):
            yield CounterMetricFamily(f"elefant_ingest_{name}", what, value=value)

    def _embedding(self) -> Iterator[Metric]:
        worker = self._memory.embedding
        if worker is None:  # EMBEDDING_MODEL=none: recall by words only, nothing to embed
            return
        yield GaugeMetricFamily(
            "elefant_embedding_backlog",
            "Messages the embedding worker knows are waiting for a vector (noted, and the batch in hand).",
            value=worker.backlog,
        )
        yield CounterMetricFamily("elefant_embedded", "Messages embedded by this process.", value=worker.embedded)

    def _breakers(self) -> Metric:
        family = GaugeMetricFamily(
            "elefant_model_breaker_state",
            "Each model's circuit breaker: 1 for its current state (closed, open, half-open), 0 for the others.",
            labels=["model", "state"],
        )
        provider = self._llm.primary
        if not isinstance(provider, ResilientProvider):  # offline: no model to break
            return family
        states = {model: State.CLOSED for model in self._models}  # a model not called yet has a closed breaker
        states |= {model: lane.breaker.state for model, lane in provider.lanes.items()}
        for model, now in sorted(states.items()):
            for state in State:
                family.add_metric([model, state.value], 1.0 if state is now else 0.0)
        return family
