"""Track 2: daily summaries, the week's history, rollups of older time, and the merged context built from them."""
