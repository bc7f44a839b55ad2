"""Fixtures that build real things: a migrated SQLite file and a migrated PostgreSQL database per run."""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.llm.client import LLM
from bot.settings import Settings
from db.engine import create_engine
from db.migrate import upgrade
from db.models import Base
from fakes.gemini_stub import GeminiStub
from fakes.model_doubles import scripted_model
from fakes.models import model_stack
from fakes.openai_stub import OpenAIStub

pytest_plugins = [
    "tests.private_postgres",  # `private_postgres`: a server of a test's own, to restart
    "tests.unretrieved",  # asyncio's "exception was never retrieved" fails the test
    "tests.hang_guard",  # a hang past the per-test time-out ends that test's worker, by name
]
PG_BASE_URL = os.environ.get("TEST_DATABASE_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
SNOWFLAKE = 2**60  # real Discord IDs are this large; small test IDs would hide BigInteger mistakes


def _asyncpg_dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _migrate(url: str) -> None:
    engine = create_engine(url)
    try:
        await upgrade(engine)
    finally:
        await engine.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated once per run; each test gets a copy (migrating per test is slow)."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    asyncio.run(_migrate(f"sqlite+aiosqlite:///{path}"))
    return path


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A PostgreSQL database of this run's own, migrated once and dropped at the end."""
    name = f"elefant_test_{uuid.uuid4().hex[:10]}"
    admin_dsn = _asyncpg_dsn(PG_BASE_URL)

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(admin_dsn, timeout=5)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    try:
        asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError) as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL at {PG_BASE_URL} is required in CI but unreachable: {exc!r}")
        pytest.skip(f"PostgreSQL unreachable ({exc!r}); set TEST_DATABASE_URL to test it")
    url = make_url(PG_BASE_URL).set(database=name).render_as_string(hide_password=False)
    asyncio.run(_migrate(url))
    yield url
    asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def _truncate_pg(url: str) -> None:
    tables = ", ".join(t.name for t in Base.metadata.sorted_tables)
    conn = await asyncpg.connect(_asyncpg_dsn(url))
    try:
        await conn.execute(f"TRUNCATE {tables} RESTART IDENTITY CASCADE")
    finally:
        await conn.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated, empty database: a fresh SQLite file, or this run's PostgreSQL database truncated."""
    if request.param == "sqlite":
        path = tmp_path / "elefant.db"
        shutil.copy(request.getfixturevalue("sqlite_template"), path)
        return f"sqlite+aiosqlite:///{path}"
    url = request.getfixturevalue("pg_database")
    asyncio.run(_truncate_pg(url))
    return url


@pytest.fixture
async def engine(db_url: str) -> AsyncIterator[AsyncEngine]:
    """An engine on the test database, disposed afterwards."""
    engine = create_engine(db_url)
    yield engine
    await engine.dispose()


# The OpenAI-compatible stub is a third value a test asks for where it buys coverage (routing, chat, forgetting
# through the whole memory), with `@pytest.mark.parametrize("llm", ALL_MODELS, indirect=True)`: every test run a
# third time would cost the suite half a minute for paths tests/llm/ already covers.
ALL_MODELS = ["offline", "gemini-stub", "openai-stub"]


@pytest.fixture(params=["offline", "gemini-stub"])
async def llm(request: pytest.FixtureRequest) -> AsyncIterator[LLM]:
    """The LLM client twice: offline, and the real google-genai client against the stub over HTTP (or, where a
    test asks, the real openai client against the OpenAI-compatible stub), the scripted model answering."""
    if request.param == "offline":
        yield model_stack()
        return
    stub: GeminiStub | OpenAIStub
    if request.param == "openai-stub":
        stub = await OpenAIStub(responder=scripted_model).start()
    else:
        stub = await GeminiStub(responder=scripted_model).start()
    llm = model_stack(
        stub.base_url,
        api="openai" if request.param == "openai-stub" else "gemini",
        attempts=2,
        timeout_s=5,
        concurrency=4,
        requests_per_minute=10_000,
        breaker_failures=5,
        wait=(0.01, 0.05),
    )
    yield llm
    await llm.close()
    await stub.stop()


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    """Settings for tests: no .env, no keys, the test database."""
    return Settings(_env_file=None, database_url=db_url, gemini_api_key=None, discord_token=None)  # type: ignore[call-arg]


@pytest.fixture
async def stub() -> AsyncIterator[GeminiStub]:
    """The Gemini stub answering as the scripted model does (a test that needs other answers defines its own)."""
    server = await GeminiStub(responder=scripted_model).start()
    yield server
    await server.stop()
