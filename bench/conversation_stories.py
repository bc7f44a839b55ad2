"""The stories of the recall benchmark guild: what members once said, and what others later ask about it.

A `Kind` is a story template. `bench.conversations` instantiates every kind for a few members (its subjects);
each instance plants evidence messages inside small chat scenes, look-alike distractors (recent chatter on the same
topic, the same kind of scene at other times, messages that merely address the subject) and one question.

Scene lines are written `[*][^]ROLE: text`: `*` marks evidence, `^` makes the line a Discord reply to the line before,
ROLE is S (the subject), A or B (two other members fixed for the instance) or X (anyone else). A text of `~` is a
generic reaction. Alternative wordings are separated by ` | `; `{slot}` names come from `slots` (one value per
instance, or per occurrence for temporal kinds) and {S}/{s}, {A}/{a}, {B}/{b} are the members' names (capitalised /
lower case). Question templates may use {when} (temporal kinds: a time expression for the evidence's date).
"""

from __future__ import annotations

from dataclasses import dataclass, field

TYPES = ("paraphrase", "next_turn", "multi", "temporal", "name")


@dataclass(frozen=True)
class Kind:
    """A story template; see the module docstring for the line syntax."""

    key: str
    qtype: str
    channel: str
    scenes: tuple[tuple[str, ...], ...]
    questions: tuple[str, ...]
    answer: str
    chatter: tuple[str, ...]
    slots: dict[str, tuple[str, ...]] = field(default_factory=dict)
    address: tuple[str, ...] = ()


CITIES = (
    "porto",
    "lyon",
    "krakow",
    "valencia",
    "leeds",
    "gdansk",
    "bologna",
    "ghent",
    "tartu",
    "cork",
    "graz",
    "bilbao",
)
BOOKS = (
    "piranesi",
    "the overstory",
    "klara and the sun",
    "project hail mary",
    "the remains of the day",
    "a little life",
    "circe",
    "the dispossessed",
    "stoner",
    "the secret history",
)
GAMES = (
    "hades",
    "stardew",
    "elden ring",
    "factorio",
    "baldur's gate",
    "outer wilds",
    "celeste",
    "rimworld",
    "hollow knight",
)
SHOWS = ("severance", "the bear", "slow horses", "shogun", "succession", "dark", "fleabag", "the expanse", "arcane")
DISHES = ("lasagne", "dal", "shakshuka", "paella", "pierogi", "chili", "moussaka", "ramen", "banana bread", "tiramisu")
BANDS = ("fontaines dc", "wet leg", "idles", "phoebe bridgers", "khruangbin", "the national", "caribou", "big thief")

KINDS: tuple[Kind, ...] = (
    # ---- paraphrase: the question shares no content word with the evidence --------------------------------------
    Kind(
        "selfcare",
        "paraphrase",
        "off-topic",
        (
            (
                "*S: carving out some me-time this weekend, just me, {book} and zero notifications"
                " | *S: phone off, bath, {book}. nobody gets anything from me today 🛁",
                "X: ~",
            ),
        ),
        (
            "What does {S} do to prioritize self-care?",
            "how does {S} unwind when stressed out?",
            "what's {S}'s way of relaxing?",
        ),
        "quiet time alone with a book ({book})",
        (
            "self-care is just napping with extra steps",
            "need a self care day so bad",
            "prioritize sleep they said. lol",
            "stress levels: high. relaxing: impossible",
            "how do you all unwind after work?",
        ),
        {"book": BOOKS},
    ),
    Kind(
        "camping",
        "paraphrase",
        "travel",
        (
            (
                "*S: we sat around the fire till 2am by {lake}, tent leaked but the stars were unreal ✨"
                " | *S: three nights under canvas at {lake}, woke up to frost on the sleeping bag zip lol",
                "X: ~",
                "S: my back is destroyed but worth it",
            ),
        ),
        ("did {S} go camping at some point?", "has {S} ever gone camping?", "is {S} into camping?"),
        "yes, at {lake}",
        (
            "camping season soon?",
            "who wants to go camping in august",
            "i hate camping, bugs everywhere",
            "camping gear sale at decathlon rn",
            "glamping counts as camping, fight me",
        ),
        {"lake": ("loch lomond", "lake bled", "the dolomites", "the peak district", "lake annecy", "the ardennes")},
    ),
    Kind(
        "relocated",
        "paraphrase",
        "general",
        (
            (
                "*S: boxes everywhere, first night in the new flat in {city} 📦"
                " | *S: keys handed over, officially a {city} resident now. the flat smells like paint",
                "X: ~",
            ),
        ),
        ("Where does {S} live these days?", "which city did {S} relocate to?", "where's {S} based now?"),
        "{city}",
        (
            "anyone live near the coast?",
            "rent where i live is insane",
            "where do you all live roughly?",
            "thinking about relocating tbh",
        ),
        {"city": CITIES},
    ),
    Kind(
        "newjob",
        "paraphrase",
        "general",
        (
            (
                "*S: first day at {company} tomorrow, i'm gonna throw up 😅"
                " | *S: signed the contract!! starting at {company} in two weeks",
                "X: ~",
                "S: new laptop, new badge, new everything",
            ),
        ),
        ("Where is {S} working these days?", "who's {S}'s employer?", "what company does {S} work for?"),
        "{company}",
        (
            "work is killing me this week",
            "anyone hiring? asking for me",
            "my job is so boring lately",
            "working from home again, the cat is my coworker",
            "what company makes those standing desks",
        ),
        {"company": ("spotify", "a tiny seed-stage startup", "the city council", "ikea", "a bike shop", "siemens")},
    ),
    Kind(
        "adopted",
        "paraphrase",
        "pets",
        (
            (
                "*S: meet {petname}!! spent 8 months at the shelter and now rules the sofa 🐾"
                " | *S: brought {petname} home today, already stole my spot on the bed",
                "X: ~",
                "X: ~",
            ),
        ),
        ("Does {S} have any animals?", "what's the name of {S}'s pet?", "does {S} own a dog or cat?"),
        "{petname}, adopted from a shelter",
        (
            "pet tax pls",
            "my neighbour's dog barks all night",
            "cats or dogs, go",
            "animals are better than people tbh",
            "pet insurance worth it?",
        ),
        {"petname": ("biscuit", "mochi", "pickles", "nacho", "juniper", "waffles", "olive", "pretzel")},
    ),
    Kind(
        "instrument",
        "paraphrase",
        "music",
        (
            (
                "*S: my fingertips are destroyed, three weeks of chords and i can finally get through {song} on"
                " the {instr}"
                " | *S: bought a second hand {instr} off a guy in a car park, now practising {song} every night",
                "X: ~",
            ),
        ),
        ("Is {S} learning a musical instrument?", "what does {S} play?", "is {S} musical?"),
        "the {instr}",
        (
            "music recs?",
            "learning piano at 30, too late?",
            "instrument shopping is dangerous for my wallet",
            "playing music with friends is the best",
        ),
        {
            "instr": ("ukulele", "guitar", "bass", "mandolin", "banjo"),
            "song": ("wonderwall", "hallelujah", "creep", "riptide", "jolene"),
        },
    ),
    Kind(
        "plantbased",
        "paraphrase",
        "food",
        (
            (
                "*S: no meat, no fish, no dairy for six months now and honestly i feel great 🌱"
                " | *S: half a year without animal products and i don't even miss cheese anymore",
                "X: ~",
            ),
        ),
        ("Is {S} vegan?", "what kind of diet does {S} follow?", "does {S} have dietary restrictions?"),
        "vegan",
        (
            "vegan cheese is a crime",
            "diet starts monday (it won't)",
            "plant based burgers are actually good now",
            "any diet that allows pizza?",
        ),
    ),
    Kind(
        "stopped",
        "paraphrase",
        "general",
        (
            (
                "*S: day 100 without a cigarette 🎉 still want one every morning with coffee"
                " | *S: threw away my last pack of cigarettes. patches are gross but it's working",
                "X: ~",
                "X: ~",
            ),
        ),
        ("Did {S} manage to stop smoking?", "does {S} still smoke?", "is {S} a smoker?"),
        "quit cigarettes",
        (
            "my neighbour smokes on the balcony all day",
            "smoke alarm went off because of toast again",
            "stop buying stuff challenge day 3, failed",
        ),
    ),
    Kind(
        "newborn",
        "paraphrase",
        "general",
        (
            (
                "*S: {baby} arrived at 3:14am, 3.4kg of pure chaos, we're all exhausted and happy 💛"
                " | *S: say hi to {baby}!! born this morning, i haven't slept in 30 hours",
                "X: ~",
                "X: congratulations!!!",
            ),
        ),
        ("Did {S} have a kid?", "is {S} a parent now?", "what's the name of {S}'s child?"),
        "yes, {baby}",
        (
            "kids are so loud at the park",
            "parenting memes hit different",
            "my sister's kid called me old",
            "the children's section at ikea is chaos",
        ),
        {"baby": ("leo", "ada", "noor", "felix", "iris", "mateo", "lina")},
    ),
    Kind(
        "wedding",
        "paraphrase",
        "general",
        (
            (
                "*S: we said yes under the {venue}, my face hurts from smiling 💍"
                " | *S: officially mr & mrs as of today!! {venue}, 40 guests, one crying dad",
                "X: ~",
                "X: congrats!!!",
            ),
        ),
        ("Is {S} married?", "did {S} tie the knot?", "has {S} wed anyone?"),
        "yes, ceremony at/under the {venue}",
        (
            "wedding season is expensive",
            "going to a wedding next month, what do I wear",
            "married life memes are too real",
            "tied my shoelaces wrong all day lol",
        ),
        {"venue": ("old oak tree", "registry office", "lighthouse", "vineyard pergola", "town hall arches")},
    ),
    Kind(
        "allergic",
        "paraphrase",
        "food",
        (
            (
                "*S: ate one {food} at the work thing and my throat closed up, epipen time. never again"
                " | *S: a&e last night, turns out {food} and me are not friends. epipen is now in my bag",
                "X: ~",
            ),
        ),
        ("What food is {S} allergic to?", "is there anything {S} can't eat?", "does {S} have any allergy?"),
        "{food}",
        (
            "allergy season is killing me",
            "food is so good today",
            "pollen everywhere, can't breathe",
            "what can't you eat? i can't eat coriander, tastes like soap",
        ),
        {"food": ("shrimp", "cashew", "peanut cookie", "kiwi", "sesame bagel")},
    ),
    Kind(
        "injury",
        "paraphrase",
        "fitness",
        (
            (
                "*S: cast comes off in 6 weeks, typing one handed is hell. don't {cause} at 35 kids"
                " | *S: fractured wrist, thanks to {cause}. the nurse laughed at me",
                "X: ~",
            ),
        ),
        ("How did {S} get hurt?", "what injury did {S} have?", "why was {S} in hospital?"),
        "broken wrist from {cause}",
        (
            "my back hurts from sitting",
            "injury prone today lol",
            "gym injury again, ego lifting",
            "hospital waiting rooms are the worst",
        ),
        {"cause": ("skateboarding", "rollerblading", "trampolining", "bouldering")},
    ),
    Kind(
        "language",
        "paraphrase",
        "general",
        (
            (
                "*S: passed my B2 exam!! {lang} subjunctive can't hurt me anymore"
                " | *S: had my first full phone call in {lang} without panicking 🎉",
                "X: ~",
            ),
        ),
        ("What language has {S} been studying?", "is {S} learning a language?", "which languages does {S} speak?"),
        "{lang}",
        (
            "duolingo owl threatening me again",
            "learning languages as an adult is hard",
            "what language should I learn next",
            "studying for my driving theory test, kill me",
        ),
        {"lang": ("spanish", "italian", "portuguese", "german", "japanese", "dutch")},
    ),
    Kind(
        "vehicle",
        "paraphrase",
        "off-topic",
        (
            (
                "*S: sold the old bike, picked up a used {car} today. no more rain commutes 🚗"
                " | *S: the {car} is mine!! 140k on the clock but she purrs",
                "X: ~",
            ),
        ),
        ("What does {S} drive?", "what vehicle does {S} own?", "does {S} have wheels?"),
        "a {car}",
        (
            "car insurance is robbery",
            "drive to the coast this weekend?",
            "my car is making a weird noise again",
            "vehicle inspection failed, of course",
        ),
        {"car": ("skoda octavia", "vw golf", "toyota yaris", "fiat panda", "mazda mx-5", "renault zoe")},
    ),
    Kind(
        "balcony",
        "paraphrase",
        "off-topic",
        (
            (
                "*S: harvested the first {veg} from the balcony pots!! tiny but mine 🍅"
                " | *S: the {veg} on my windowsill finally did something, picked four today",
                "X: ~",
            ),
        ),
        ("Does {S} grow any vegetables?", "what is {S} growing at home?", "does {S} do any gardening?"),
        "{veg}",
        (
            "my plants keep dying",
            "gardening tips anyone?",
            "grow lights are expensive",
            "home office needs more plants",
        ),
        {"veg": ("tomatoes", "chillies", "courgettes", "strawberries", "peppers")},
    ),
    Kind(
        "gig",
        "paraphrase",
        "music",
        (
            (
                "*S: screamed every lyric, {band} front row, voice is gone 🎤"
                " | *S: {band} played for two hours and my ears are still ringing",
                "X: ~",
            ),
        ),
        ("Which artist did {S} see live?", "who did {S} go watch in concert?", "what concert did {S} attend?"),
        "{band}",
        (
            "concert tickets are so expensive now",
            "live music this weekend?",
            "who's your favourite artist rn",
            "watched a concert film last night, not the same",
        ),
        {"band": BANDS},
    ),
    Kind(
        "ink",
        "paraphrase",
        "off-topic",
        (
            (
                "*S: new ink on my forearm, a little {design}, healing nicely"
                " | *S: sat for 3 hours for this {design} on my ankle, worth every second",
                "X: ~",
            ),
        ),
        ("Does {S} have a tattoo?", "what tattoo did {S} get?", "has {S} got any tattoos?"),
        "a {design}",
        (
            "tattoo regret stories?",
            "thinking about a tattoo but i'm a coward",
            "my mum would kill me if i got a tattoo",
        ),
        {"design": ("fern", "moth", "wave", "lighthouse", "compass", "snake")},
    ),
    Kind(
        "sober",
        "paraphrase",
        "off-topic",
        (
            (
                "*S: six months alcohol free today 🥤 sparkling water gang"
                " | *S: haven't had a beer or wine since {month}, sleeping like a baby",
                "X: ~",
            ),
        ),
        ("Does {S} drink?", "is {S} a drinker?", "what does {S} order at the pub?"),
        "alcohol free (since {month})",
        ("drinks after work?", "who's drinking tonight", "pub quiz thursday, who's in", "order pizza or cook?"),
        {"month": ("january", "march", "the new year", "my birthday")},
    ),
    Kind(
        "eyewear",
        "paraphrase",
        "general",
        (
            (
                "*S: can read road signs again!! optician says -2.5 now, frames are {frames} 👓"
                " | *S: picked up my first pair of {frames} frames today, everything is so sharp",
                "X: ~",
            ),
        ),
        ("Does {S} wear specs?", "does {S} need eyewear?", "is {S} short-sighted?"),
        "yes, {frames} frames",
        ("blue light specs are a scam", "need new sunnies for the summer", "short-sighted memes are too real"),
        {"frames": ("tortoiseshell", "round gold", "thick black", "clear plastic")},
    ),
    Kind(
        "bouldering",
        "paraphrase",
        "fitness",
        (
            (
                "*S: sent my first v4 at the wall today, forearms are dead 🧗"
                " | *S: chalk everywhere, skin on my fingers gone, finally topped the {colour} route",
                "X: ~",
            ),
        ),
        ("What sport does {S} do?", "is {S} into climbing?", "how does {S} stay active?"),
        "bouldering",
        ("what sport should i try", "climbing gym prices went up again", "staying active in winter is hard"),
        {"colour": ("purple", "orange", "black", "yellow")},
    ),
    # ---- name, told by someone else: the evidence is about the subject (and names them), not by them ------------
    Kind(
        "abroad",
        "name",
        "general",
        (
            (
                "*A: ran into {s} at the airport, off to {city} for a whole exchange semester"
                " | *A: {s} just flew out to {city} for six months, their flat is empty lol",
                "X: ~",
            ),
        ),
        ("Is {S} living abroad?", "where is {S} staying these days?", "is {S} away from home right now?"),
        "in {city} for a semester / six months",
        (
            "living abroad sounds fun until tax season",
            "anyone staying in this weekend?",
            "home sweet home after a long week",
        ),
        {"city": ("lisbon", "tokyo", "montreal", "seoul", "vienna", "copenhagen")},
        ("{s} you around this weekend?", "miss you {s}! come back soon"),
    ),
    Kind(
        "promoted",
        "name",
        "general",
        (
            (
                "*A: {s} got promoted to {role} btw!! drinks on them"
                " | *A: big news, {s} is the new {role}, they told me at lunch",
                "X: ~",
            ),
        ),
        ("What's {S}'s job title now?", "did {S} get a new position at work?", "what does {S} do at work now?"),
        "{role}",
        ("job titles are meaningless", "new position at work means more meetings", "promotion season is a lie"),
        {"role": ("team lead", "head of design", "senior nurse", "engineering manager", "store manager")},
        ("thanks {s}! great meeting today", "{s} lunch tomorrow?"),
    ),
    Kind(
        "engaged",
        "name",
        "off-topic",
        (
            (
                "*A: {s} and their partner got engaged on top of {place}!! 💍"
                " | *A: just heard {s} proposed at {place} and it went well",
                "X: ~",
            ),
        ),
        ("Is {S} getting married?", "is {S} planning a wedding?", "does {S} have a fiancé?"),
        "engaged (at {place})",
        ("wedding planning is a full time job", "married friends only talk about houses", "planning a trip in may"),
        {"place": ("arthur's seat", "the eiffel tower", "a lighthouse", "the old bridge", "a ferris wheel")},
        ("{s} did you see the ring memes lol", "night {S}!"),
    ),
    Kind(
        "hospital",
        "name",
        "general",
        (("*A: visited {s} in hospital, {ill} but they're ok, back home friday", "X: ~"),),
        ("Why was {S} in hospital?", "what happened to {S}, were they ill?"),
        "{ill}",
        ("hospital parking costs a fortune", "feeling ill today, staying home"),
        {"ill": ("appendicitis", "a burst eardrum", "pneumonia", "a kidney stone")},
        ("{s} you coming tonight?", "thanks {S} for the playlist!"),
    ),
    Kind(
        "costume",
        "name",
        "fitness",
        (("*A: {s} ran the whole 10k dressed as a {costume}, the crowd went wild", "X: ~"),),
        ("What was {S} dressed as for the run?", "what did {S} wear for the 10k?"),
        "a {costume}",
        ("costume ideas for the office party?", "10k this sunday, who's in"),
        {"costume": ("dinosaur", "banana", "pirate", "giant carrot")},
        ("good luck {s}!", "{s} see you at the start line"),
    ),
    # ---- next turn: the question echoes a message; the answer is the next turn by the subject --------------------
    Kind(
        "movedfrom",
        "next_turn",
        "general",
        (
            (
                "*A: {s} where did you end up moving from? | *A: wait {s}, where did you live before you moved here?",
                "*^S: {city}, originally. still miss the food | *^S: {city}! grew up there, left at 19",
                "A: ~",
            ),
        ),
        ("Where did {S} move from?", "where did {S} live before moving here?", "what city did {S} move from?"),
        "{city}",
        ("moving is such a pain", "who's moving this summer?", "where did the summer go"),
        {"city": CITIES},
    ),
    Kind(
        "bestbook",
        "next_turn",
        "books",
        (
            (
                "*A: {s} what's the best book you read this year? | *A: best book you've read lately {s}?",
                "*^S: {book}, no contest. cried on the train | *^S: {book}. couldn't put it down",
            ),
        ),
        ("What did {S} say was the best book they read?", "which book did {S} say was the best they'd read lately?"),
        "{book}",
        ("best book of the year so far?", "reading slump, send recs", "i read one book this year and it was bad"),
        {"book": BOOKS},
    ),
    Kind(
        "birthday",
        "next_turn",
        "general",
        (
            (
                "*A: {s} when's your birthday btw? | *A: hey {s} when is your birthday, need it for the calendar",
                "*^S: {date}! | *^S: {date}, mark it down 🎂",
            ),
        ),
        ("When is {S}'s birthday?", "what's {S}'s birthday?"),
        "{date}",
        ("happy birthday to me (it's not my birthday)", "birthday cake or birthday pie", "when is the party"),
        {"date": ("march 3rd", "july 19th", "october 2nd", "december 28th", "april 11th", "august 30th")},
    ),
    Kind(
        "siblings",
        "next_turn",
        "off-topic",
        (
            (
                "*A: do you have siblings {s}? | *A: {s} are you an only child or do you have siblings",
                "*^S: {sib}, it's unfair | *^S: {sib}. family dinners are loud",
            ),
        ),
        ("Does {S} have siblings?", "how many siblings does {S} have?"),
        "{sib}",
        ("siblings are a curse", "my brother borrowed my charger again", "only children, what's it like"),
        {
            "sib": (
                "two older brothers, both taller than me",
                "a twin sister",
                "three younger sisters",
                "one half-brother",
            )
        },
    ),
    Kind(
        "misshome",
        "next_turn",
        "food",
        (
            (
                "*A: what do you miss most from home {s}? | *A: {s} what's the thing you miss most from back home",
                "*^S: my grandma's {dish}, nothing comes close | *^S: honestly? {dish} from the corner place",
            ),
        ),
        ("What does {S} miss most from home?", "what does {S} miss from back home?"),
        "{dish}",
        ("homesick today", "i miss summer already", "home cooked food hits different"),
        {"dish": DISHES},
    ),
    Kind(
        "mains",
        "next_turn",
        "gaming",
        (
            (
                "*A: {s} who do you main? | *A: who do you main these days {s}?",
                "*^S: {char} since launch, don't judge | *^S: {char}, always",
            ),
        ),
        ("Who does {S} main?", "which character does {S} main?"),
        "{char}",
        ("who should i main in this patch", "mains tier list is wrong", "ranked is pain"),
        {"char": ("mercy", "jinx", "zelda", "pikachu", "lucio", "yasuo", "bastion")},
    ),
    Kind(
        "coffee",
        "next_turn",
        "food",
        (
            (
                "*A: what's your coffee order {s} | *A: {s} coffee order? i'm doing a run",
                "*^S: {drink}, no judgement pls | *^S: {drink} thx!!",
            ),
        ),
        ("What's {S}'s coffee order?", "how does {S} take their coffee?"),
        "{drink}",
        ("coffee machine at work died", "is oat milk coffee real coffee", "third coffee today, shaking"),
        {"drink": ("oat flat white, extra shot", "iced americano", "cortado", "caramel latte", "double espresso")},
    ),
    Kind(
        "studied",
        "next_turn",
        "general",
        (
            (
                "*A: what did you study at uni {s}? | *A: {s} what was your degree in?",
                "*^S: {subject}. don't ask me anything about it now lol | *^S: {subject}, i know, i know",
            ),
        ),
        ("What did {S} study at university?", "what's {S}'s degree in?"),
        "{subject}",
        ("uni was a waste of money", "student loan letter arrived, crying", "should i study again at 30"),
        {"subject": ("marine biology", "philosophy", "civil engineering", "art history", "chemistry", "economics")},
    ),
    Kind(
        "firstgig",
        "next_turn",
        "music",
        (
            (
                "*A: {s} what was your first concert? | *A: first concert you went to {s}?",
                "*^S: {band}, my dad took me | *^S: {band} in a tiny club, i was 14",
            ),
        ),
        ("What was {S}'s first concert?", "which band did {S} see at their first concert?"),
        "{band}",
        ("concert season is back", "first concert stories pls", "my first car was a disaster"),
        {"band": BANDS},
    ),
    Kind(
        "scared",
        "next_turn",
        "off-topic",
        (
            (
                "*A: what are you most scared of {s}? | *A: {s} biggest fear, go",
                "*^S: {fear}. no explanation needed | *^S: {fear}, easily",
            ),
        ),
        ("What is {S} scared of most?", "what's {S}'s biggest fear?"),
        "{fear}",
        ("scared of the dentist tomorrow", "horror movie night, i'll be scared", "biggest fear is email"),
        {"fear": ("deep water", "moths", "heights", "geese", "clowns", "phone calls")},
    ),
    Kind(
        "vet",
        "next_turn",
        "pets",
        (
            (
                "*S: anyone know a good vet near {area}?"
                " | *S: need a vet recommendation near {area}, my cat is limping",
                "*^B: {vet}, they saved my cat last year | *^B: go to {vet}, ask for the tall guy, he's great",
                "S: ~",
            ),
        ),
        ("Which vet did someone recommend to {S}?", "what vet was {S} told to try?"),
        "{vet} (recommended by the reply)",
        ("vet bills are insane", "the cat needs a checkup, ugh", "who's your vet?"),
        {
            "area": ("the station", "the park", "the old town", "the canal"),
            "vet": ("the clinic on king street", "paws & claws", "dr. okafor's place", "the 24h animal hospital"),
        },
    ),
    Kind(
        "laptop",
        "next_turn",
        "gaming",
        (
            (
                "*S: which laptop should i get, budget is tight | *S: need a new laptop for uni, any advice?",
                "*^B: refurbished {model}, don't even think about it | *^B: {model}, honestly the best value rn",
            ),
        ),
        ("What laptop did people suggest to {S}?", "which laptop was {S} advised to buy?"),
        "{model}",
        ("my laptop fan sounds like a jet", "laptop or desktop for gaming?", "budget is tight this month"),
        {"model": ("thinkpad t14", "macbook air", "framework 13", "dell xps 13")},
    ),
    # ---- multi-message: the answer needs two messages, weeks apart ---------------------------------------------
    Kind(
        "offers",
        "multi",
        "general",
        (
            ("*S: got two offers!! {co1} pays more but {co2} is fully remote, help", "X: ~"),
            ("*S: decided. going with the remote one, sanity > money", "X: ~"),
        ),
        ("Which company did {S} end up joining?", "where did {S} accept a position in the end?"),
        "{co2} (the remote one)",
        ("job offers are stressful", "company pizza party instead of raises lol", "anyone joining the work trip"),
        {"co1": ("a big bank", "deloitte", "amazon"), "co2": ("gitlab", "a small agency", "a charity")},
    ),
    Kind(
        "kitchen",
        "multi",
        "off-topic",
        (
            ("*S: kitchen demo day, goodbye 1980s tiles 🔨", "X: ~"),
            ("*S: it's DONE. we can cook again. only {over} longer than the builder promised", "X: ~"),
        ),
        ("How long did {S}'s kitchen renovation take?", "when was {S}'s renovation finished and when did it start?"),
        "from the demo message to the done message ({over} over plan)",
        ("renovation shows are so fake", "kitchen is a mess", "builder ghosted us"),
        {"over": ("three weeks", "two months", "six weeks", "a month")},
    ),
    Kind(
        "trips",
        "multi",
        "travel",
        (
            ("*S: greetings from {city1} 🌅 the bakeries here are dangerous", "X: ~"),
            ("*S: back from {city2}, jet lag is real", "X: ~"),
        ),
        ("What places has {S} traveled to in the past year?", "where has {S} been on holiday lately?"),
        "{city1} and {city2}",
        (
            "travel plans anyone?",
            "cheap flights are gone",
            "holiday countdown: 40 days",
            "where should i travel in spring",
        ),
        {"city1": CITIES[:6], "city2": ("lisbon", "tokyo", "montreal", "marrakech", "reykjavik", "seoul")},
    ),
    Kind(
        "puppy",
        "multi",
        "pets",
        (
            ("*S: we're getting a puppy!! a {breed}, picking her up in two weeks", "X: ~"),
            ("*S: {petname} chewed through my charger again, the puppy phase is real", "X: ~"),
        ),
        ("What's the name and breed of {S}'s dog?", "what kind of dog does {S} have and what's it called?"),
        "{petname}, a {breed}",
        ("dog names are hard", "breed recommendations for a small flat?", "the dog park was packed"),
        {
            "breed": ("border collie", "dachshund", "greyhound", "corgi", "beagle"),
            "petname": ("mabel", "toast", "ziggy", "luna", "pepper"),
        },
    ),
    Kind(
        "marathon",
        "multi",
        "fitness",
        (
            ("*S: signed up for the {race} marathon, 16 weeks of training starts now", "X: ~"),
            ("*S: did it!! {time}, never again (until next year)", "X: ~", "X: ~"),
        ),
        ("How did {S}'s marathon go?", "what was {S}'s marathon result?"),
        "finished the {race} marathon in {time}",
        ("marathon training is no joke", "who's running the 10k", "my knees after one run lol"),
        {"race": ("berlin", "valencia", "rotterdam", "dublin", "edinburgh"), "time": ("4:12", "3:48", "4:40", "3:59")},
    ),
    Kind(
        "househunt",
        "multi",
        "general",
        (
            ("*S: offer accepted on the house in {area}!! 🏡", "X: ~"),
            ("*S: keys in hand 🔑 sleeping on a mattress on the floor tonight", "X: ~"),
        ),
        (
            "When did {S} get the keys to the new place, and where is it?",
            "where did {S} buy a house and when moved in?",
        ),
        "{area}; keys on the date of the second message",
        ("house prices are a joke", "mortgage rates again", "keys lost, locked out"),
        {
            "area": (
                "the old town",
                "the suburb by the river",
                "the village near the motorway",
                "leith",
                "the north side",
            )
        },
    ),
    Kind(
        "barexam",
        "multi",
        "general",
        (
            ("*S: {exam} is in {month}, send help and snacks", "X: ~"),
            ("*S: I PASSED. all that suffering for one email", "X: ~", "X: ~"),
        ),
        ("Did {S} pass the {exam}?", "how did {S}'s {exam} go?"),
        "passed the {exam}",
        ("exams are a scam", "bar trivia tonight?", "passed my driving test on the 4th go"),
        {"exam": ("bar exam", "cpa exam", "medical boards", "actuarial exam"), "month": ("may", "february", "july")},
    ),
    Kind(
        "bandname",
        "multi",
        "music",
        (
            ("*S: joined a band! we're called {bandname} and we're terrible", "X: ~"),
            ("*S: first gig at {venue} friday, come and throw things at us", "X: ~"),
        ),
        ("What's the name of {S}'s band and where was their first gig?", "where did {S}'s band first play?"),
        "{bandname}, first gig at {venue}",
        ("band names that sound fake", "gig at the pub tonight?", "local venues keep closing"),
        {
            "bandname": ("the soggy biscuits", "moth parade", "ceiling fan", "no refunds"),
            "venue": ("the crown", "the basement bar", "the old library", "o'malley's"),
        },
    ),
    Kind(
        "desk",
        "multi",
        "off-topic",
        (
            ("*S: building a desk from scratch, bought {wood} planks today", "X: ~"),
            ("*S: finished!! only three splinters and one swear jar", "X: ~"),
        ),
        ("What did {S} build, and what wood was it made from?", "did {S} finish that woodworking project?"),
        "a desk from {wood}",
        ("diy projects never end", "woodworking youtube is addictive", "standing desk or normal desk"),
        {"wood": ("oak", "walnut", "pine", "birch ply")},
    ),
    # ---- temporal: the same kind of message at several times; the question names the time ----------------------
    Kind(
        "potluck",
        "temporal",
        "food",
        (("*S: bringing {dish} to the potluck tonight, wish me luck | *S: made {dish} for tonight's potluck",),),
        ("What did {S} cook for the potluck {when}?", "what did {S} bring to the shared dinner {when}?"),
        "{dish}",
        ("potluck theme ideas?", "who's cooking this time", "i always bring crisps to potlucks, sorry"),
        {"dish": DISHES},
    ),
    Kind(
        "weekendtrip",
        "temporal",
        "travel",
        (("*S: off to {city} for a long weekend ✈️ | *S: {city} for three days, see you all monday",),),
        ("Where did {S} travel {when}?", "where did {S} go for the weekend {when}?"),
        "{city}",
        ("long weekend plans?", "trains are cheaper than flights now", "travel insurance is a scam"),
        {"city": CITIES},
    ),
    Kind(
        "reading",
        "temporal",
        "books",
        (("*S: just finished {book}, wow | *S: halfway through {book} and obsessed",),),
        ("What book was {S} reading {when}?", "what was {S} reading {when}?"),
        "{book}",
        ("book club pick?", "reading in the bath is elite", "i keep buying books i don't read"),
        {"book": BOOKS},
    ),
    Kind(
        "gaming",
        "temporal",
        "gaming",
        (("*S: stayed up till 4 playing {game} again | *S: {game} has eaten my whole weekend",),),
        ("What game was {S} obsessed with {when}?", "what was {S} playing {when}?"),
        "{game}",
        ("what's everyone playing?", "gaming backlog is out of control", "steam sale again"),
        {"game": GAMES},
    ),
    Kind(
        "haircolour",
        "temporal",
        "off-topic",
        (("*S: went {colour} 💇 thoughts? | *S: dyed it {colour} last night, no regrets",),),
        ("What colour was {S}'s hair {when}?", "what colour did {S} dye their hair {when}?"),
        "{colour}",
        ("hair appointment at 3", "bad hair day every day", "should i dye my hair"),
        {"colour": ("pink", "platinum", "teal", "copper", "jet black", "lilac")},
    ),
    Kind(
        "illness",
        "temporal",
        "general",
        (("*S: down with {ill}, send soup | *S: {ill} got me, in bed all week",),),
        ("What was {S} ill with {when}?", "what made {S} sick {when}?"),
        "{ill}",
        ("everyone at work is sick", "flu jab done", "sick of this weather"),
        {"ill": ("the flu", "covid", "tonsillitis", "a stomach bug", "bronchitis")},
    ),
    Kind(
        "parkrun",
        "temporal",
        "fitness",
        (("*S: parkrun this morning: {time}, new pb | *S: {time} at parkrun today, legs are gone",),),
        ("What was {S}'s parkrun time {when}?", "how fast did {S} run parkrun {when}?"),
        "{time}",
        ("parkrun tomorrow anyone?", "running in the rain is character building", "new running shoes, who dis"),
        {"time": ("24:10", "27:45", "22:58", "31:02", "25:33", "29:17")},
    ),
    Kind(
        "binge",
        "temporal",
        "off-topic",
        (("*S: binged all of {show} this weekend | *S: finished {show} in two days, no shame",),),
        ("What series did {S} binge {when}?", "what show was {S} watching {when}?"),
        "{show}",
        ("what should i watch next", "too many streaming services", "series finale ruined it"),
        {"show": SHOWS},
    ),
    Kind(
        "mumgift",
        "temporal",
        "general",
        (("*S: got my mum {gift} for her birthday, she cried | *S: mum's present this year: {gift}. nailed it",),),
        ("What did {S} give their mum {when}?", "what present did {S} get their mother {when}?"),
        "{gift}",
        ("gift ideas for dads?", "i'm terrible at presents", "birthday season in my family is expensive"),
        {"gift": ("a pottery class", "a silk scarf", "concert tickets", "a bread maker", "a framed photo", "a kindle")},
    ),
    # ---- name: the question names a member; others merely address them -----------------------------------------
    Kind(
        "pottery",
        "name",
        "off-topic",
        (("*S: my first {thing} survived the kiln!! wonky but it works", "X: ~"),),
        ("What did {S} make at pottery?", "what has {S} made in the pottery class?"),
        "a {thing}",
        ("pottery class cancelled again ugh", "my pottery vase collapsed on the wheel"),
        {"thing": ("bowl", "mug", "vase", "plate")},
        ("thanks {S}! the pottery studio link was perfect", "{s} you should teach a pottery class lol"),
    ),
    Kind(
        "cello",
        "name",
        "music",
        (("*S: got through the whole {piece} on the cello without screeching", "X: ~"),),
        ("What instrument does {S} play?", "which instrument is {S} learning?"),
        "the cello",
        ("learning the ukulele, my neighbours hate me", "instrument rental is so expensive"),
        {"piece": ("bach prelude", "swan", "minuet", "elgar bit")},
        ("{s} thanks for the concert tickets!", "{s} do you still have that music stand i could borrow?"),
    ),
    Kind(
        "summit",
        "name",
        "travel",
        (("*S: summit of {peak} at sunrise, worth the 4am alarm ⛰️", "X: ~"),),
        ("Which mountain did {S} climb?", "what peak has {S} hiked up?"),
        "{peak}",
        ("hiking this weekend, which mountain?", "my legs after that hike"),
        {"peak": ("ben nevis", "snowdon", "triglav", "mont ventoux", "pico")},
        ("thanks for lending me the boots {s}!", "happy hiking {S}, send mountain pics"),
    ),
    Kind(
        "carbonara",
        "name",
        "food",
        (("*S: my rule for carbonara: {secret}. no cream, ever", "X: ~"),),
        ("What's {S}'s secret for carbonara?", "how does {S} make carbonara?"),
        "{secret}",
        ("carbonara with cream is a crime", "made carbonara, it scrambled"),
        {"secret": ("guanciale and pecorino only", "pasta water and patience", "take the pan off the heat first")},
        ("thanks {s}, carbonara night was a hit!", "{s} are you cooking friday? carbonara pls"),
    ),
    Kind(
        "volunteer",
        "name",
        "general",
        (("*S: spent saturday at the {place} again, {detail}", "X: ~"),),
        ("Where does {S} volunteer?", "what volunteering does {S} do?"),
        "at the {place}",
        ("anyone volunteering at the marathon?", "volunteer shifts are so rewarding"),
        {
            "place": ("care home", "food bank", "animal shelter", "community garden"),
            "detail": ("the old folks beat me at cards", "sorted 200 tins", "walked six dogs", "weeded for hours"),
        },
        ("{s} you're such a good person", "thanks {S} for organizing the volunteer rota!"),
    ),
    Kind(
        "favfilm",
        "name",
        "off-topic",
        (("*S: {movie} is still the best film ever made, fight me", "X: ~"),),
        ("What's {S}'s favourite film?", "which movie does {S} love most?"),
        "{movie}",
        ("movie night friday?", "best film of the year so far?"),
        {"movie": ("paddington 2", "spirited away", "the thing", "before sunrise", "heat")},
        ("{s} movie night at yours?", "thanks {S}! the film rec was great"),
    ),
    Kind(
        "kneeop",
        "name",
        "fitness",
        (("*S: {op} went fine, on crutches for a month", "X: ~"),),
        ("What surgery did {S} have?", "what operation did {S} go through?"),
        "{op}",
        ("surgery waiting lists are insane", "my knee clicks when i run"),
        {"op": ("knee surgery", "acl reconstruction", "shoulder surgery", "meniscus repair")},
        ("get well soon {s}!!", "{s} need anything from the shop?"),
    ),
    Kind(
        "podcast",
        "name",
        "general",
        (("*S: started a podcast about {topic} with my brother, episode 1 is live", "X: ~"),),
        ("What's {S}'s podcast about?", "what topic does {S}'s podcast cover?"),
        "{topic}",
        ("too many podcasts, not enough commute", "podcast recs for running?"),
        {"topic": ("bad movies", "local history", "true crime", "board games", "urban cycling")},
        ("{s} send the podcast link!", "great episode {S}, loved it"),
    ),
    Kind(
        "chess",
        "name",
        "gaming",
        (("*S: hit {rating} on lichess finally, blitz is my life now", "X: ~"),),
        ("What's {S}'s chess rating?", "how good is {S} at chess?"),
        "{rating}",
        ("chess is stressful", "lost 8 chess games in a row"),
        {"rating": ("1800", "1650", "2000", "1500")},
        ("gg {s}", "{s} rematch tonight? chess club at 8"),
    ),
)
