"""The memory layer: knows nothing about discord.py; the bot, console, importer and tests drive it."""
