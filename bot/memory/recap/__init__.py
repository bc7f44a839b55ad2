"""Recaps: "what did I miss?" told from what memory keeps — a span's messages in threads, and its days' summaries.

span.py reads a request (channel, span, topic); threads.py splits a span into threads of conversation and finds
their central messages; material.py packs them into the budget; face.py (`Recaps`, held by `Recollection`) reads the
span within the read scope and makes the recap with one model call per input, kept until the guild changes.
"""
