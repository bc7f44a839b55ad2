"""The offline provider: one test per operation, each with a concrete expected output."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.llm.client import LLM
from bot.llm.prompts import ChatLine, load_prompts
from bot.llm.schemas import DailySummaries, ForgetResult, RouteDecision, UserSummary

LLM_OFFLINE = LLM(None, prompts=load_prompts())
T = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)
WHEN = {"today": "Friday 2026-11-20 09:30", "timezone": "UTC"}


async def run(operation, variables, **kw):
    result = await LLM_OFFLINE.run(operation, variables, **kw)
    assert result.provider == "offline" and result.model == "offline" and not result.degraded
    return result


async def test_remember_appends_a_sentence_and_drops_near_duplicates():
    base = {"subject": "Bob", "max_chars": 1500, **WHEN}
    first = await run("remember", {**base, "existing": "", "fact": "bob is Sergey"})
    assert first.text == "Bob is Sergey."
    second = await run("remember", {**base, "existing": first.text, "fact": "Bob likes green tea"})
    assert second.text == "Bob is Sergey. Bob likes green tea."
    duplicate = await run("remember", {**base, "existing": second.text, "fact": "bob likes green tea!"})
    assert duplicate.text == "Bob is Sergey. Bob likes green tea."


async def test_forget_removes_matching_sentences_and_reports_found():
    existing = "Bob is Sergey. Bob likes green tea. Bob lives in Riga."
    found = await run(
        "forget", {"subject": "Bob", "existing": existing, "fact": "likes green tea", **WHEN}, schema=ForgetResult
    )
    assert found.parsed == ForgetResult(found=True, memory="Bob is Sergey. Bob lives in Riga.")
    missing = await run(
        "forget", {"subject": "Bob", "existing": existing, "fact": "owns a boat", **WHEN}, schema=ForgetResult
    )
    assert missing.parsed == ForgetResult(found=False, memory=existing)


async def test_condense_keeps_the_newest_sentences_within_the_cap():
    variables = {"subject": "Bob", "existing": "One fact. Two fact. Three fact.", "max_chars": 21, **WHEN}
    result = await run("condense", variables)
    assert result.text == "Two fact. Three fact."


async def test_route_is_always_chat_offline():
    variables = {"bot_name": "Elefant", "author": "Ana", "message": "recuerda que me gusta el té", **WHEN}
    result = await run("route", variables, schema=RouteDecision)
    assert result.parsed == RouteDecision(route="chat")


async def test_daily_summary_quotes_the_most_informative_lines_per_user():
    lines = [
        ChatLine(T, 11, "Ana", "ok"),
        ChatLine(T, 11, "Ana", "I finally passed my driving exam today"),
        ChatLine(T, 22, "Bob", "congrats Ana!"),
        ChatLine(T, 11, "Ana", "ok"),
    ]
    variables = {"guild_name": "G", "day": "2026-11-20", "timezone": "UTC", "transcript_xml": "", "lines": lines}
    result = await run("daily_summary", variables, schema=DailySummaries, role="batch")
    assert result.parsed == DailySummaries(
        summaries=[
            UserSummary(user_id="11", summary='Ana wrote 3 messages: "I finally passed my driving exam today"; "ok"'),
            UserSummary(user_id="22", summary='Bob wrote 1 message: "congrats Ana!"'),
        ]
    )


async def test_daily_summary_is_bounded():
    lines = [ChatLine(T, 11, "Ana", f"message number {i} " + "word " * 30) for i in range(20)]
    variables = {"guild_name": "G", "day": "d", "timezone": "UTC", "transcript_xml": "", "lines": lines}
    result = await run("daily_summary", variables, schema=DailySummaries)
    assert len(result.parsed.summaries[0].summary) <= 300


async def test_historical_summary_keeps_dates_and_the_newest_days():
    days = [("2026-11-18", "Ana studied."), ("2026-11-19", "Ana passed her exam.")]
    result = await run(
        "historical_summary",
        {"subject": "Ana", "start_day": "2026-11-18", "end_day": "2026-11-19", "days_xml": "", "days": days, **WHEN},
    )
    assert result.text == "On 2026-11-18: Ana studied. On 2026-11-19: Ana passed her exam."


async def test_merge_context_is_a_labelled_concatenation_within_budget():
    variables = {
        "subject": "Ana",
        **WHEN,
        "facts": "Ana is vegetarian.",
        "current_day": "Ana talked about exams.",
        "history": "Ana studied all week. " * 50,
        "earlier": "Week of 2026-10-26: Ana moved flats.",
        "max_tokens": 60,
        "note_tokens": 50,
    }
    result = await run("merge_context", variables)
    assert result.text.startswith("Facts: Ana is vegetarian.\nToday: Ana talked about exams.\nLast week: Ana studied")
    assert "\nEarlier: " in result.text and result.text.endswith("Ana moved flats.")  # its share, trimmed
    assert len(result.text) <= 60 * 4


async def test_chat_is_honest_about_having_no_model():
    variables = {
        "bot_name": "Elefant",
        "today": "2026-11-20",
        "timezone": "UTC",
        "author": "Ana",
        "memory": "Ana is vegetarian.",
        "channel_xml": "",
        "message": "hi",
    }
    result = await run("chat", variables)
    assert result.text.startswith("I'm running without a language model, so I can't chat, Ana.")
    assert result.text.endswith("What I remember about you: Ana is vegetarian.")


async def test_chat_answers_in_a_few_sentences_with_the_line_that_bears_on_the_message():
    context = "Facts: Ana is vegetarian. " + "Ana talked about many things that day. " * 40
    scenes = "\n".join(f"[2026-10-{d:02}] Rui: the weather was grey on day {d}" for d in range(1, 29))
    memory = f"{context}\nRecalled conversation:\n{scenes}\n[2026-10-29] Rui: my kayak trip to the fjord is on"
    asked = {**{"bot_name": "Elefant", "today": "2026-11-20", "timezone": "UTC", "channel_xml": ""}, "author": "Ana"}
    result = await run("chat", {**asked, "memory": memory, "message": "how did Rui's kayak trip go?"})
    assert result.text.endswith("From what was said here: [2026-10-29] Rui: my kayak trip to the fjord is on")
    assert "What I remember about you: Facts: Ana is vegetarian." in result.text  # facts are always served
    assert len(result.text) < 700 < len(memory)  # a few sentences, not the memory it was given
    small_talk = await run("chat", {**asked, "memory": memory, "message": "hi"})
    assert "What I remember about you: Facts: Ana is vegetarian." in small_talk.text
    assert len(small_talk.text) < 700


async def test_remember_keeps_a_lower_case_name_as_written():
    result = await run(
        "remember", {"subject": "ana_0", "max_chars": 1500, **WHEN, "existing": "", "fact": "ana_0 studies physics"}
    )
    assert result.text == "ana_0 studies physics."
