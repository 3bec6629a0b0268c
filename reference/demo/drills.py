"""Copy and look-up drills: short generated documents whose second half can
only be predicted by finding things in the first half. A small model learns
to copy (the "induction" behaviour a tool call's arguments need: the
restaurant, the time, the e-mail address taken from the user's words) from a
few thousand of these far sooner than from the few argument tokens of each
conversation. They go into the prose part of the second training stage
(corpus.py --drills N); the held-out evaluation never contains them.

    drill(rng) -> str
"""
import random  # noqa: F401  (rng is a random.Random)

import chats as C

SYLLABLES = ["ka", "lo", "mi", "ra", "ten", "vo", "sul", "bri", "an", "dor", "fe", "gu", "hal", "ix", "jo",
             "ke", "lum", "mar", "ne", "os", "pi", "qua", "ri", "sto", "tu", "vel", "wy", "zen"]


def _word(rng):
    w = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3)))
    return w.capitalize() if rng.random() < 0.5 else w


def _item(rng):
    """One thing a user might say: a name, a place, a number, a time, an address..."""
    k = rng.randrange(10)
    if k == 0:
        return rng.choice(C.RESTAURANTS)
    if k == 1:
        return rng.choice(C.CITIES)
    if k == 2:
        return str(rng.choice([rng.randint(0, 99), rng.randint(100, 9999), round(rng.uniform(0, 999), 2)]))
    if k == 3:
        return f"{rng.randint(0, 23):02d}:{rng.choice([0, 15, 30, 45, rng.randint(0, 59)]):02d}"
    if k == 4:
        return f"{rng.choice(C.PEOPLE).lower()}@{rng.choice(C.DOMAINS)}"
    if k == 5:
        return rng.choice(C.PEOPLE)
    if k == 6:
        return f"{rng.randint(2024, 2027)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if k == 7:
        return rng.choice(C.STOCKS)[0]
    if k == 8:
        return " ".join(_word(rng) for _ in range(rng.randint(1, 3)))
    return rng.choice(C.TODOS + C.TOPICS + C.MUSIC)


def _repeat(rng):
    items = [_item(rng) for _ in range(rng.randint(2, 6))]
    sep = rng.choice(["; ", ", ", " | "])
    head = rng.choice(["Copy this list", "Say it again", "Repeat after me", "Note", "Remember these"])
    again = rng.choice(["Again", "Once more", "Copied", "Here it is"])
    return f"{head}: {sep.join(items)}.\n{again}: {sep.join(items)}."


def _lookup(rng):
    keys = rng.sample(C.PEOPLE, rng.randint(2, 5))
    rel = rng.choice([("lives in", "Where does {} live?"), ("booked", "What did {} book?"),
                      ("wants", "What does {} want?"), ("wrote to", "Who did {} write to?")])
    vals = [_item(rng) for _ in keys]
    facts = " ".join(f"{k} {rel[0]} {v}." for k, v in zip(keys, vals))
    i = rng.randrange(len(keys))
    return f"{facts}\n{rel[1].format(keys[i])} {vals[i]}."


def _fields(rng):
    """A request in words, then the same values as key: value lines."""
    n = rng.randint(2, 4)
    keys = rng.sample(["name", "city", "time", "date", "email", "amount", "symbol", "item", "place", "people"], n)
    vals = [_item(rng) for _ in keys]
    said = " and ".join(f"{k} {v}" for k, v in zip(keys, vals))
    lines = ", ".join(f'"{k}": "{v}"' for k, v in zip(keys, vals))
    return f"Request with {said}.\nFields: {{{lines}}}"


def drill(rng):
    return rng.choice([_repeat, _lookup, _fields])(rng)
