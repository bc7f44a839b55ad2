"""Typed settings read from the environment and `.env`; one object for the whole bot."""

from __future__ import annotations

import os
import zoneinfo
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

DATABASE_FILE = "elefant.db"  # the default database's name, in DATA_DIR

# Plain driver names people copy from hosting dashboards, mapped to the async drivers we ship.
_ASYNC_DRIVERS = {
    "sqlite": "sqlite+aiosqlite",
    "sqlite+aiosqlite": "sqlite+aiosqlite",
    "postgresql": "postgresql+asyncpg",
    "postgres": "postgresql+asyncpg",
    "postgresql+asyncpg": "postgresql+asyncpg",
}


class ConfigError(Exception):
    """A setting has a value the bot cannot start with; the message names the setting."""


class Settings(BaseSettings):
    """Every knob of the bot; documented one by one in `.env.example`."""

    # No infinities or NaN anywhere: `inf` parses as a float and then breaks a timer or a timedelta much later.
    model_config = SettingsConfigDict(
        env_file=".env", env_file_encoding="utf-8", extra="ignore", env_ignore_empty=True, allow_inf_nan=False
    )

    discord_token: SecretStr | None = None
    dev_guild_id: int | None = Field(default=None, gt=0)
    bot_name: str = "Elefant"
    ingest_other_bots: bool = False
    reply_deadline_seconds: float = Field(default=10.0, gt=0, le=600)
    discord_members_intent: bool = False
    shard_count: int | Literal["auto"] | None = None
    shard_ids: str | None = None
    # Relative to the directory the bot starts in (made absolute then), never to where the package is installed.
    data_dir: Path = Path("data")

    database_url: str = Field(default="", validate_default=True)  # empty: default_database_url(data_dir)

    # None: Gemini with GEMINI_API_KEY, else offline (what Elefant did before there was a choice)
    llm_provider: Literal["gemini", "openai", "offline"] | None = None
    gemini_api_key: SecretStr | None = None
    gemini_base_url: str | None = None
    model_batch: str = "gemini-3.5-flash-lite"
    model_fast: str = "gemma-4-26b-a4b-it"
    # An OpenAI-compatible endpoint (Ollama, llama.cpp's server, vLLM, OpenRouter); None: api.openai.com
    openai_base_url: str | None = None
    openai_api_key: SecretStr | None = None  # local servers need none
    openai_model_batch: str | None = None  # None: OPENAI_MODEL_FAST
    openai_model_fast: str | None = None
    llm_timeout_seconds: float = Field(default=30.0, gt=0, le=600)
    llm_max_attempts: int = Field(default=4, ge=1, le=10)
    llm_max_concurrency: int = Field(default=4, ge=1, le=1000)
    llm_batch_requests_per_minute: int = Field(default=10, ge=1, le=1_000_000)
    llm_batch_tokens_per_minute: int = Field(default=250_000, ge=0, le=1_000_000_000)  # 0: not limited here
    llm_fast_requests_per_minute: int = Field(default=30, ge=1, le=1_000_000)
    llm_fast_tokens_per_minute: int = Field(default=15_000, ge=0, le=1_000_000_000)
    llm_breaker_failures: int = Field(default=5, ge=1, le=10_000)
    llm_breaker_cooldown_seconds: float = Field(default=60.0, gt=0, le=86_400)

    default_timezone: str = "UTC"
    retention_days: int = Field(default=0, ge=0, le=36_500)
    # SQLite: how soon after a deletion or edit the file is rewritten without the bytes it left (VACUUM)
    sqlite_compact_seconds: float = Field(default=600.0, ge=0, le=86_400)
    facts_max_chars: int = Field(default=1500, ge=100, le=1_000_000)
    facts_policy: Literal["anyone", "self_and_admins"] = "anyone"
    context_token_budget: int = Field(default=2000, ge=200, le=2_000_000)
    memory_wait_seconds: float = Field(default=1.0, ge=0, le=3600)
    chat_window_tokens: int = Field(default=1500, ge=100, le=2_000_000)
    history_mode: Literal["summary", "daily"] = "summary"
    daily_input_tokens: int = Field(default=200_000, ge=1000, le=100_000_000)
    summary_schedule: bool = True
    summary_concurrency: int = Field(default=2, ge=1, le=64)
    summary_jitter_seconds: float = Field(default=900.0, ge=0, le=6 * 3600)
    summary_lease_seconds: float = Field(default=90.0, ge=1, le=3600)
    recall_half_life_days: float = Field(default=180.0, ge=0, le=36_500)
    recall_token_budget: int = Field(default=2000, ge=200, le=1_000_000)
    recap_token_budget: int = Field(default=3000, ge=300, le=1_000_000)
    recap_max_days: int = Field(default=7, ge=1, le=366)
    embedding_model: str | None = "local"
    embedding_dimensions: int = Field(default=256, ge=128, le=3072)  # what the Gemini API accepts
    embedding_requests_per_minute: int = Field(default=100, ge=1, le=1_000_000)

    ingest_batch_rows: int = Field(default=1000, ge=1, le=100_000)
    ingest_flush_ms: int = Field(default=500, ge=1, le=60_000)
    ingest_queue_max: int = Field(default=20000, ge=1, le=10_000_000)
    ingest_shutdown_seconds: float = Field(default=5.0, ge=0, le=3600)
    catchup_hours: float = Field(default=24.0, ge=0, le=24 * 30)
    # How far before each channel's newest stored message catch-up reads again, to see edits and deletions made
    # while the bot was away (bot/catchup.py; each 100 messages in it cost one more history request a channel).
    catchup_verify_hours: float = Field(default=6.0, ge=0, le=24 * 30)

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    # /healthz and /metrics (Prometheus) for the bot and the console; None: off. 0 picks a free port (logged).
    metrics_port: int | None = Field(default=None, ge=0, le=65535)
    metrics_host: str = "127.0.0.1"

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, value: str, info: ValidationInfo) -> str:
        if not value:
            if "data_dir" not in info.data:  # DATA_DIR itself was refused: that is the error to report
                return value
            value = default_database_url(info.data["data_dir"])
        try:
            url = make_url(value)
        except ArgumentError as exc:
            raise ValueError(f"{value!r} is not a database URL") from exc
        driver = _ASYNC_DRIVERS.get(url.drivername)
        if driver is None:
            raise ValueError(f"unsupported database {url.drivername!r}; use sqlite:/// or postgresql://")
        if driver.startswith("sqlite"):
            _usable_sqlite_file(url.database, url.query)
        return url.set(drivername=driver).render_as_string(hide_password=False)

    @field_validator("data_dir")
    @classmethod
    def _usable_directory(cls, value: Path) -> Path:
        # Checked here: the first write into it (the command tree's hash) comes after Discord accepted the login.
        path = value.expanduser().absolute()
        if path.exists() and not path.is_dir():
            raise ValueError(f"{str(path)!r} is a file; give a directory (it is created when missing)")
        if path.is_dir():
            if not os.access(path, os.W_OK | os.X_OK):
                raise ValueError(f"this user may not write in {str(path)!r}")
            return path
        _creatable(path)
        return path

    @field_validator("default_timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r} (try e.g. Europe/Berlin)") from exc
        return value

    @field_validator("shard_count")
    @classmethod
    def _positive(cls, value: int | str | None) -> int | str | None:
        if isinstance(value, int) and value < 1:
            raise ValueError("use a number of shards of at least 1, or auto")
        return value

    @field_validator("shard_ids")
    @classmethod
    def _shard_list(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = [p.strip() for p in value.split(",") if p.strip()]
        if not parts or not all(p.isdigit() for p in parts):
            raise ValueError(f"{value!r} is not a comma-separated list of shard numbers such as 0,1")
        return ",".join(parts)

    @model_validator(mode="after")
    def _shards_fit(self) -> Settings:
        ids = self.shard_id_list
        if ids is not None:
            if not isinstance(self.shard_count, int):
                raise ValueError("SHARD_IDS needs SHARD_COUNT, the total number of shards (a number)")
            if max(ids) >= self.shard_count:
                raise ValueError(f"SHARD_IDS are numbered from 0 to SHARD_COUNT - 1 ({self.shard_count - 1})")
        return self

    @model_validator(mode="after")
    def _provider_usable(self) -> Settings:
        if self.llm_provider == "gemini" and self.gemini_api_key is None:
            raise ValueError("LLM_PROVIDER=gemini needs GEMINI_API_KEY (or choose LLM_PROVIDER=openai or offline)")
        if self.provider == "openai":
            if not (self.openai_model_fast or self.openai_model_batch):
                raise ValueError(
                    "LLM_PROVIDER=openai needs OPENAI_MODEL_FAST, the model's name as the server knows it "
                    "(e.g. qwen3:8b for Ollama)"
                )
            if (self.embedding_model or "none").strip().lower() not in {"local", "none", "off", ""}:
                raise ValueError(
                    f"EMBEDDING_MODEL={self.embedding_model} is a Gemini embedding model; with LLM_PROVIDER=openai "
                    "use local or none"
                )
        return self

    @property
    def provider(self) -> Literal["gemini", "openai", "offline"]:
        """The model provider in use: LLM_PROVIDER, or (unset) Gemini with a key and offline without one."""
        if self.llm_provider is not None:
            return self.llm_provider
        return "gemini" if self.gemini_api_key is not None else "offline"

    @property
    def model_settings(self) -> dict[str, str]:
        """Each role's model under the setting that names it, batch first: {"MODEL_BATCH": …, "MODEL_FAST": …} or
        the OPENAI_MODEL_* pair (an unset OPENAI_MODEL_BATCH is OPENAI_MODEL_FAST); empty offline."""
        if self.provider == "gemini":
            return {"MODEL_BATCH": self.model_batch, "MODEL_FAST": self.model_fast}
        if self.provider == "openai":
            fast = self.openai_model_fast or self.openai_model_batch or ""
            return {"OPENAI_MODEL_BATCH": self.openai_model_batch or fast, "OPENAI_MODEL_FAST": fast}
        return {}

    @property
    def role_models(self) -> dict[Literal["batch", "fast"], str]:
        """The model each role is sent to by the provider in use; empty offline."""
        if not (named := self.model_settings):
            return {}
        batch, fast = named.values()
        return {"batch": batch, "fast": fast}

    @property
    def shard_id_list(self) -> list[int] | None:
        """SHARD_IDS as numbers, or None (every shard, in this process)."""
        return [int(p) for p in self.shard_ids.split(",")] if self.shard_ids else None

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value


def default_database_url(data_dir: Path) -> str:
    """The database when DATABASE_URL is not set: a SQLite file in DATA_DIR (an absolute path)."""
    return f"sqlite+aiosqlite:///{data_dir.expanduser().absolute() / DATABASE_FILE}"


def _usable_sqlite_file(database: str | None, query: Mapping[str, Any]) -> None:
    """Refuse SQLite databases the bot cannot open as a file it can create or write."""
    if not database or database == ":memory:" or database.startswith("file::memory:") or query.get("mode") == "memory":
        raise ValueError(
            "an in-memory SQLite database cannot be used (the ingest writer opens a second connection, which "
            "would see a different, empty database); give a file, e.g. sqlite:///data/elefant.db"
        )
    path = Path(database).expanduser()
    if path.is_dir():
        raise ValueError(
            f"{str(path)!r} is a directory; give a database file inside it, e.g. {str(path / 'elefant.db')!r}"
        )
    if path.exists():
        if not os.access(path, os.R_OK | os.W_OK):
            raise ValueError(f"{str(path)!r} cannot be read and written by this user")
        return
    _creatable(path)


def _creatable(path: Path) -> None:
    """Refuse a path that cannot be created: its nearest existing ancestor must be a directory we may write in."""
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise ValueError(f"{str(path)!r} cannot be created: {str(parent)!r} is a file, not a directory")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise ValueError(f"{str(path)!r} cannot be created: this user may not write in {str(parent)!r}")
            return


def load_settings(**overrides: object) -> Settings:
    """Read settings, turning a validation failure into one sentence that names the setting."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        first = exc.errors()[0]
        message = str(first["msg"]).removeprefix("Value error, ")
        if not first["loc"]:  # a rule across settings: its message names them
            raise ConfigError(f"{message}.") from exc
        name = str(first["loc"][0]).upper()
        raise ConfigError(f"Setting {name} is invalid: {message}.") from exc
