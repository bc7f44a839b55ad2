"""Recall: find what was said long ago, with the turns around it, and pack it into what the model receives.

One retrieval path for every reply (questions about the past, and chat):
1. Read the question (question.py): content words, members it names, a time it points at.
2. Candidates (search.py): the database's full-text engine (a pool of POOL, by relevance alone: no decay here,
   so an old answer is not cut before it is scored), the named members' own messages, and the nearest message
   vectors (vectors.py, kept current by embedding.py) — every candidate read back through the SQL read scope.
3. Score the same way on both databases (ranking.py): words and meaning half each, a member the question names
   and a time it points at preferred, recency only a gentle prior.
4. Snippets (snippets.py): the best hits come with the turns around them (the message before and after, what a
   hit replies to and the replies to it), merged when they touch; summaries have their own share.
5. Pack in rank order into a token budget: that text is exactly what the model receives.
"""

from bot.memory.recall.embedding import EmbeddingWorker, Replies, dimensions_of, encoder
from bot.memory.recall.question import Question, read
from bot.memory.recall.ranking import Found, Hit
from bot.memory.recall.search import Options, Recall
from bot.memory.recall.snippets import Recalled, Snippet, pack
from bot.memory.recall.vectors import VectorIndex

__all__ = [
    "EmbeddingWorker",
    "Found",
    "Hit",
    "Options",
    "Question",
    "Recall",
    "Recalled",
    "Replies",
    "Snippet",
    "VectorIndex",
    "dimensions_of",
    "encoder",
    "pack",
    "read",
]
