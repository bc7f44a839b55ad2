"""Filler chat for the recall benchmark guild: banter, small talk, reactions, addressing lines, and chat noise.

Everything here is generic; topic chatter that shares vocabulary with the questions lives with the stories
(`Kind.chatter`) and is mixed in by `bench.conversations`.
"""

from __future__ import annotations

import random

from bench.conversation_stories import BOOKS, CITIES, DISHES, GAMES, SHOWS

REACTIONS = (
    "omg",
    "nice!!",
    "lol",
    "haha amazing",
    "wait really?",
    "jealous",
    "that's so cool",
    "love that for you",
    "🔥",
    "ooh",
    "sounds fun",
    "respect",
    "lmaooo",
    "same tbh",
    "noooo",
    "ok that's wholesome",
    "pics or it didn't happen",
    "living the dream",
    "big mood",
    "wow",
    "yesss",
    "🥹",
    "proud of you",
    "iconic",
    "oh no 😂",
    "hahaha",
    "tell me more",
    "ngl that's impressive",
    "goals",
    "❤️",
)

BANTER = (
    "morning all",
    "gm ☀️",
    "night!",
    "anyone around?",
    "brb dinner",
    "back",
    "lmao",
    "that's cursed",
    "who pinged me",
    "i'm so tired today",
    "mondays should be illegal",
    "is it friday yet",
    "the wifi at my place is dying again",
    "coffee first, words later",
    "it's raining AGAIN",
    "so hot today, melting",
    "what did i miss",
    "scrolling up 400 messages, what happened",
    "this chat moves too fast",
    "ok i'm going to bed for real now",
    "can't sleep",
    "my cat just knocked my mug off the desk",
    "forgot my keys at work, classic",
    "meeting that could have been an email part 5",
    "anyone else's internet down?",
    "the bus was 20 min late",
    "new phone who dis",
    "why is everything so expensive",
    "weekend plans?",
    "doing absolutely nothing this weekend and i'm proud",
    "hello hello",
    "lol what",
    "wait that's actually true",
    "i can't believe it's already the end of the month",
    "time flies",
    "my neighbour is drilling at 8am on a sunday",
    "did everyone see the update",
    "the new emoji are great",
    "mods asleep, post frogs 🐸",
    "absolutely not",
    "valid",
    "i feel that",
    "same",
    "true",
    "fair enough",
    "skill issue",
    "touch grass they said",
    "hydrate, everyone",
    "ok but why",
    "no thoughts head empty",
    "ty!",
    "np",
    "ahh thanks",
    "sorry was afk",
    "oops wrong channel",
    "🥲",
    "💀",
    "👀",
    "😂😂",
)

SMALL_TALK = (
    "anyone playing {game} tonight?",
    "{game} patch notes are out",
    "just started {game}, no spoilers pls",
    "is {game} worth it on sale?",
    "watched the first episode of {show}, thoughts?",
    "{show} season finale was wild",
    "is {show} worth starting?",
    "making {dish} for dinner",
    "{dish} for lunch again",
    "best {dish} recipe? go",
    "weather in {city} is wild today",
    "has anyone been to {city}? thinking about a weekend there",
    "flights to {city} are so cheap rn",
    "book club is reading {book} next",
    "is {book} any good?",
    "dnf'd {book}, sorry",
    "what are you all doing this weekend",
    "grocery prices are unhinged",
    "my plant is thriving for once",
    "went for a walk, saw a dog, day made",
    "gym at 7am, who am i",
    "tried a new recipe, it was a disaster",
    "anyone know a good dentist",
    "my landlord finally fixed the heating",
    "need a holiday",
    "work drinks tonight, pray for me",
    "my sister is visiting this week",
    "finally cleaned my room",
    "bought too many plants again",
    "cinema on friday?",
    "who's up for games later",
    "what's everyone eating",
    "just got back from the shops",
    "i need new headphones, recs?",
    "watching the football, don't talk to me",
)

ADDRESS = (
    "gm {name}",
    "thanks {name}!",
    "{name} you around?",
    "lol {name}",
    "{name} did you see this",
    "hi {name} 👋",
    "{name} check your dms",
    "ty {name}",
    "welcome back {name}",
    "{name} you were right",
    "{name} ping me when you're on",
    "haha {name} stop",
    "night {name}!",
)

PREFIXES = ("", "", "", "", "ngl ", "honestly ", "lol ", "ok ", "wait ", "tbh ", "random but ")
SUFFIXES = ("", "", "", "", "", " lol", " 😅", " 😂", " !!", " tbh", " haha", " 🙃", " ...", " xD")


def fill(template: str, rng: random.Random, **names: str) -> str:
    """Fill the small-talk slots ({game}, {show}, {dish}, {city}, {book}) and any names given."""
    return template.format(
        game=rng.choice(GAMES),
        show=rng.choice(SHOWS),
        dish=rng.choice(DISHES),
        city=rng.choice(CITIES),
        book=rng.choice(BOOKS),
        **names,
    )


def typo(text: str, rng: random.Random) -> str:
    """One plausible typo: two neighbouring letters swapped, a letter dropped or doubled."""
    spots = [i for i in range(1, len(text) - 1) if text[i].isalpha() and text[i + 1].isalpha()]
    if not spots:
        return text
    i = rng.choice(spots)
    kind = rng.randrange(3)
    if kind == 0:
        return text[:i] + text[i + 1] + text[i] + text[i + 2 :]
    if kind == 1:
        return text[:i] + text[i + 1 :]
    return text[:i] + text[i] + text[i:]


def roughen(text: str, rng: random.Random, *, typos: float = 0.06) -> str:
    """Chat noise: an occasional prefix, suffix or typo."""
    if rng.random() < 0.3:
        text = rng.choice(PREFIXES) + text + rng.choice(SUFFIXES)
    if rng.random() < typos:
        text = typo(text, rng)
    return text
