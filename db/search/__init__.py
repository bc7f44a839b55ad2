"""Recall's reads: full-text search (FTS5's bm25 on SQLite, tsvector's ts_rank on PostgreSQL), one result shape.

The database chooses a bounded pool of candidates by its own relevance × temporal decay; the final ranking
happens in Python (bot/memory/recall/), the same on both databases. What a reader may see is the read scope of
db/scope.py, composed into every query here.

- types: what a search is asked (`Search`) and the rows it gives back;
- fts: the full-text query languages (FTS5 MATCH, tsvector) and their SQL;
- planner: on SQLite, which candidates to rank (counts of words, the cut of the best matches);
- postgres: on PostgreSQL, which candidates to rank (the planner's estimate of matches, the same bounded set);
- messages: the message search that ties them, and a member's newest messages;
- summaries: the daily summaries' search;
- turns: messages by id (the vectors' candidates) and the turns around hits;
- driver: rows read straight through SQLite's driver.
"""
