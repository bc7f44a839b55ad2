"""discord.py extensions: thin adapters over MemoryManager and the responder."""
