"""The assembled app: migrations, offline LLM, memory and responder wired as `run` wires them."""

from __future__ import annotations

from sqlalchemy import func, select

from bot.app import open_app
from bot.reply.routing import Request
from db.engine import create_engine
from db.models import LlmCall, UserFacts
from tests.factories import ALICE, GUILD, message


async def test_open_app_wires_everything_and_drains_on_exit(settings, db_url):
    async with open_app(settings) as app:
        await app.memory.intake.message(message("hi", author=ALICE, name="Ana"))
        answer = await app.responder.respond(Request(GUILD, ALICE, "remember that I'm vegetarian"))
        assert answer.text == "Got it. What I know about Ana now:\nAna is vegetarian."
        assert app.llm.is_offline
    engine = create_engine(db_url)
    async with engine.connect() as conn:
        assert await conn.scalar(select(func.count()).select_from(UserFacts)) == 1
        assert await conn.scalar(select(func.count()).select_from(LlmCall)) == 1
    await engine.dispose()
