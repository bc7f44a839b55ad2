"""Track 1: facts — what members asked the bot to remember or forget, kept as revisions."""
