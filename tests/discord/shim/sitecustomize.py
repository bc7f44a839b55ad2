"""Loaded at interpreter start when this folder is on PYTHONPATH (tests only): discord.py talks to a local fake.

`python -m bot run` in a subprocess then meets the answers tests/discord/fake_discord.py gives (a wrong
token, a privileged intent switched off) exactly as it would meet Discord's. Without ELEFANT_FAKE_DISCORD it
does nothing.
"""

import os

_url = os.environ.get("ELEFANT_FAKE_DISCORD")
if _url:
    import discord.gateway
    import discord.http
    import yarl

    discord.http.Route.BASE = f"{_url}/api/v10"
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(_url).with_scheme("ws") / "gateway" / ""
