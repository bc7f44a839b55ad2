"""The reply: what the bot says to a message addressed to it, within a deadline, from memory's faces.

routing.py reads a message (is it addressed to the bot, what does it want: remember, forget, about, recall, chat);
respond.py carries the decision out with the faces memory hands out (facts, recollection, directory); deadline.py
answers within REPLY_DEADLINE_SECONDS whatever the model does; model_turns.py asks the model to route and to chat;
cite.py lists the sources of an answer about the past. Nothing here imports discord.py.
"""

from bot.reply.deadline import Answer, ReplyDeadline
from bot.reply.respond import Responder
from bot.reply.routing import Decision, Request, Route

__all__ = ["Answer", "Decision", "ReplyDeadline", "Request", "Responder", "Route"]
