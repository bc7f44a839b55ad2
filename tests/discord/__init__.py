"""Tests of the Discord-facing modules, bot/cogs/ and bot/discord_bot.py, named for the module each tests.

One directory rather than tests/cogs/ beside tests/test_discord_bot.py: every file here drives discord.py
through the same doubles — dpytest with conftest.py's members intent, fake_discord.py (with shim/ for
subprocesses), gateway.py and interactions.py — so test_listener*.py is bot/cogs/listener.py's and
test_discord_bot.py bot/discord_bot.py's.
"""
