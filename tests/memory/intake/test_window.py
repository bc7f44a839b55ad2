"""The channel window: newest messages survive trimming, the last three exchanges always fit."""

from __future__ import annotations

from bot.memory.intake.window import ChannelWindow
from tests.factories import CHANNEL, GUILD, T0, message, minutes


def test_newest_survive_trimming_and_the_last_exchanges_always_fit():
    window = ChannelWindow()
    for i in range(40):
        window.add(message(f"message {i} " + "long " * 40, at=T0 + minutes(i)))
    lines = window.recent(GUILD, CHANNEL, budget_tokens=200)
    assert [line.content.split()[1] for line in lines] == [str(i) for i in range(34, 40)]
    roomy = window.recent(GUILD, CHANNEL, budget_tokens=100_000)
    assert len(roomy) == 40 and roomy[-1].content.startswith("message 39")


def test_old_messages_are_dropped_first_within_budget():
    window = ChannelWindow()
    for i in range(20):
        window.add(message(f"short {i}", at=T0 + minutes(i)))
    lines = window.recent(GUILD, CHANNEL, budget_tokens=120)
    assert lines[-1].content == "short 19" and lines[0].content != "short 0"
    assert [int(line.content.split()[1]) for line in lines] == sorted(int(line.content.split()[1]) for line in lines)


def test_deletes_and_edits_apply_and_other_channels_are_separate():
    window = ChannelWindow()
    keep, gone = message("keep"), message("gone")
    window.add(keep)
    window.add(gone)
    window.add(message("elsewhere", channel=CHANNEL + 1))
    window.delete([gone.message_id])
    window.edit(keep.message_id, "kept, edited")
    assert [line.content for line in window.recent(GUILD, CHANNEL, budget_tokens=1000)] == ["kept, edited"]
    assert [line.content for line in window.recent(GUILD, CHANNEL + 1, budget_tokens=1000)] == ["elsewhere"]
