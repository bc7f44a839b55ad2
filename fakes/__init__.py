"""Test doubles at the true edges — the model's HTTP API (a Gemini stub and a scripted "model") and the exporter's
files (DiscordChatExporter JSON) — shared by tests/ and bench/, never shipped in the wheel.

Discord's own stand-ins (tests/discord/) stay with the tests, the only code that meets them.
"""
