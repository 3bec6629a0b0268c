"""A story grammar for simple English prose (TinyStories-like): characters,
places, objects and a few plot shapes told over several sentences, with
dialogue and varied sentence shapes. Everything here is generated; see
SOURCES.md.

    story(rng) -> str     one story; rng is a random.Random
"""

GIRLS = ["Lily", "Mia", "Emma", "Sara", "Anna", "Lucy", "Zoe", "Ella", "Maya", "Rosa", "Nora", "Ruby",
         "Ivy", "Hana", "Amara", "Leila", "Grace", "Chloe", "Daisy", "Kate", "Tia", "Nina", "Olive", "June"]
BOYS = ["Tom", "Ben", "Max", "Sam", "Leo", "Jack", "Finn", "Omar", "Ravi", "Noah", "Theo", "Eli",
        "Kai", "Luca", "Milo", "Jonah", "Tim", "Adam", "Oscar", "Hugo", "Ari", "Felix", "Dan", "Pablo"]
ANIMALS = ["dog", "cat", "rabbit", "bear", "fox", "bird", "mouse", "duck", "frog", "owl", "pig",
           "squirrel", "turtle", "lion", "horse", "puppy", "kitten", "hedgehog", "goat", "deer"]
ANIMAL_NAMES = ["Spot", "Fluffy", "Pip", "Bella", "Coco", "Buddy", "Whiskers", "Hoppy", "Sunny",
                "Bubbles", "Ginger", "Pebble", "Biscuit", "Patch", "Tiny", "Shadow", "Honey", "Rusty"]
TRAITS = ["kind", "curious", "shy", "brave", "happy", "little", "clever", "silly", "gentle", "busy",
          "friendly", "quiet", "cheerful", "playful", "careful", "proud", "sleepy", "smart"]
PLACES = [("the park", "in"), ("the forest", "in"), ("the beach", "at"), ("the garden", "in"),
          ("the village", "in"), ("the farm", "on"), ("school", "at"), ("the lake", "by"),
          ("the hill", "on"), ("the library", "in"), ("the kitchen", "in"), ("the backyard", "in"),
          ("the market", "at"), ("the meadow", "in"), ("the river", "by"), ("the old castle", "in"),
          ("the zoo", "at"), ("the playground", "at"), ("the big city", "in"), ("the little house", "in")]
OBJECTS = ["red ball", "kite", "blue hat", "shiny stone", "toy car", "picture book", "teddy bear",
           "yellow balloon", "drum", "old key", "treasure map", "paper boat", "green scarf", "sea shell",
           "soft blanket", "wooden spoon", "silver bell", "box of crayons", "toy train", "little doll",
           "bucket", "jump rope", "magic wand", "orange cup"]
FOODS = ["an apple", "a cookie", "some bread", "a carrot", "a banana", "some cheese", "a sandwich",
         "a piece of cake", "some berries", "a cup of milk", "some soup", "a pear"]
OPENINGS = ["Once upon a time", "One day", "One sunny morning", "On a rainy afternoon", "Long ago",
            "One cold winter day", "Last summer", "Early one morning", "One windy day", "On a warm evening",
            "One bright spring day", "Not long ago"]
FEELINGS_GOOD = ["happy", "glad", "proud", "excited", "calm", "thankful"]
FEELINGS_BAD = ["sad", "worried", "upset", "scared", "lonely", "grumpy"]
SAID = ["said", "asked", "cried", "whispered", "shouted", "replied", "laughed", "smiled"]
FEARS = [("the dark", "It was only the night, and the stars were out."),
         ("thunder", "It was only the sky making a big noise, and it could not hurt anyone."),
         ("the deep water", "The water was cool and friendly when you went in slowly."),
         ("the big dog next door", "The big dog only wanted to play and wagged its tail."),
         ("the tall slide", "The slide was fast and fun, and the ground was soft at the end."),
         ("the noisy vacuum", "The vacuum was just cleaning the floor and did not bite.")]
BUILD = [("a sandcastle", "the beach", "a wave washed it away"),
         ("a tree house", "the backyard", "a board fell down"),
         ("a big cake", "the kitchen", "the cake came out flat"),
         ("a snowman", "the park", "the head rolled off"),
         ("a tower of blocks", "the little house", "the tower fell over"),
         ("a kite", "the garden", "the paper tore in the wind"),
         ("a boat", "the river", "the boat filled with water")]
TROUBLES = [("a bird with a hurt wing", "bird", "made a soft bed of leaves for it",
             "The bird sang a sweet song to say thank you."),
            ("a kitten stuck in a tree", "kitten", "found a ladder and climbed up slowly",
             "The kitten purred and rubbed its head on the ladder."),
            ("a lost puppy", "puppy", "read the name on its collar and found its home",
             "The puppy licked everyone's hands."),
            ("a little fish in a tiny puddle", "fish", "carried it in a cup back to the pond",
             "The fish splashed its tail and swam away."),
            ("a baby duck far from its mother", "duck", "walked it back to the lake",
             "The mother duck quacked loudly, and the baby ran to her."),
            ("a turtle on its back", "turtle", "turned it over very gently",
             "The turtle blinked and walked slowly into the grass.")]
ENDINGS = ["From that day on, {a} always remembered that {lesson}.",
           "{A_S} learned that {lesson}.",
           "That night, {a} fell asleep with a big smile.",
           "And that was the best day {a} ever had.",
           "It was a good day after all.",
           "{a} and {b} were best friends after that.",
           "The end."]
LESSONS = {"lost": "it is good to keep your things in a safe place",
           "friend": "a new friend can be found anywhere",
           "share": "sharing makes everyone happy",
           "fear": "being brave means trying even when you are scared",
           "build": "you should never give up",
           "help": "helping others feels wonderful",
           "trip": "every trip is an adventure",
           "surprise": "the best gifts come from the heart",
           "race": "friends are more important than winning"}


class Char:
    def __init__(self, rng, avoid=()):
        kind = rng.random()
        if kind < 0.55:
            girl = rng.random() < 0.5
            names = GIRLS if girl else BOYS
            self.name = rng.choice([n for n in names if n not in avoid])
            self.noun = "girl" if girl else "boy"
            self.he, self.him, self.his = ("she", "her", "her") if girl else ("he", "him", "his")
        else:
            self.noun = rng.choice(ANIMALS)
            self.name = rng.choice([n for n in ANIMAL_NAMES if n not in avoid])
            girl = rng.random() < 0.5
            self.he, self.him, self.his = ("she", "her", "her") if girl else ("he", "him", "his")
        self.trait = rng.choice(TRAITS)

    def intro(self, rng):
        a = "an" if self.trait[0] in "aeiou" else "a"
        return rng.choice([f"{a} {self.trait} {self.noun} named {self.name}",
                           f"{a} {self.trait} {self.noun} called {self.name}",
                           f"{self.name}, {a} {self.trait} {self.noun}"])


def _cap(s):
    return s[:1].upper() + s[1:]


def _fill(s, a, b, extra):
    d = {"a": a.name, "b": b.name, "A_S": _cap(a.he), "a_s": a.he, "a_o": a.him, "a_p": a.his,
         "B_S": _cap(b.he), "b_s": b.he, "b_o": b.him, "b_p": b.his, "A_P": _cap(a.his), "B_P": _cap(b.his)}
    d.update(extra)
    return s.format(**d)


def _meet(rng, b, x):
    """b's introduction the first time, b's name after that."""
    if x.get("b_known"):
        return b.name
    x["b_known"] = True
    return b.intro(rng)


def _say(rng, who, words):
    if words.endswith("?"):
        verb = rng.choice(["asked", "asked", "wondered"])
    else:
        verb = rng.choice([v for v in SAID if v != "asked"])
    if words.endswith("!") and rng.random() < 0.5:
        verb = rng.choice(["shouted", "cried"])
    shape = rng.random()
    end = words[-1]
    if shape < 0.45:
        inner = words[:-1] + ("," if end == "." else end)
        return f'"{inner}" {who} {verb}.'
    if shape < 0.8:
        return f'{_cap(who)} {verb}, "{words}"'
    first, _, rest = words.partition(", ")
    if rest:
        return f'"{first}," {who} {verb}, "{rest}"'
    inner = words[:-1] + ("," if end == "." else end)
    return f'"{inner}" {who} {verb}.'


def _plot_lost(rng, a, b, s, x):
    obj, (place, prep) = rng.choice(OBJECTS), rng.choice(PLACES)
    hide = rng.choice(["under a bush", "behind a big rock", "inside an old boot", "under the bench",
                       "next to the door", "in a pile of leaves", "on top of the shelf", "under the bed"])
    s.append(f"{a.name} had a {obj} that {a.he} loved very much.")
    s.append(rng.choice([f"Every day, {a.he} took it {prep} {place}.", f"{_cap(a.he)} took it everywhere.",
                         f"It was {a.his} favorite thing in the whole world."]))
    s.append(rng.choice([f"But one day, the {obj} was gone!", f"One afternoon, {a.he} could not find it.",
                         f"Then, {prep} {place}, {a.he} put it down and forgot about it."]))
    s.append(f"{a.name} felt {rng.choice(FEELINGS_BAD)}.")
    s.append(_say(rng, a.name, rng.choice([f"Where is my {obj}?", f"I lost my {obj}!",
                                           f"Has anyone seen my {obj}?"])))
    s.append(rng.choice([f"{_cap(_meet(rng, b, x))} heard {a.him}.",
                         f"Just then, {b.name} the {b.noun} came by.",
                         f"{a.his.capitalize()} friend {b.name} wanted to help."]))
    s.append(_say(rng, b.name, rng.choice(["Don't worry, we can look together.",
                                           "Let's look for it together!",
                                           f"I will help you find it, {a.name}."])))
    s.append(rng.choice([f"They looked {rng.choice(['high', 'everywhere', 'far and near'])} and low.",
                         "They looked behind the trees and under the chairs.",
                         f"First they looked {prep} {place}, then they looked at home."]))
    s.append(f"At last, {b.name} found the {obj} {hide}.")
    s.append(_say(rng, a.name, rng.choice(["Thank you so much!", "You found it! You are the best!",
                                           "Thank you, you are a good friend."])))
    x["lesson"] = LESSONS["lost"]


def _plot_friend(rng, a, b, s, x):
    place, prep = rng.choice(PLACES)
    game = rng.choice(["tag", "hide and seek", "catch", "jump rope", "a game with a ball", "pretend pirates"])
    s.append(f"{a.name} went to {place} alone.")
    s.append(rng.choice([f"{_cap(a.he)} did not know anyone there, and {a.he} felt {rng.choice(FEELINGS_BAD)}.",
                         f"All the other children were playing, but {a.name} sat by {a.him}self.",
                         f"{_cap(a.he)} wanted to play, but {a.he} was too shy to ask."]))
    s.append(f"Then {a.he} saw {_meet(rng, b, x)}.")
    s.append(rng.choice([f"{b.name} was {rng.choice(['sitting under a tree', 'looking at the clouds', 'reading a book', 'eating ' + rng.choice(FOODS)])}.",
                         f"{b.name} looked {rng.choice(FEELINGS_BAD)} too."]))
    s.append(_say(rng, a.name, rng.choice(["Hello, do you want to play with me?", "Hi! Can I sit with you?",
                                           f"Hello, my name is {a.name}. What is yours?"])))
    s.append(_say(rng, b.name, rng.choice(["Yes, I would love to!", f"My name is {b.name}. Let's play!",
                                           "Sure! What do you want to play?"])))
    s.append(f"They played {game} until the sun went down.")
    s.append(rng.choice([f"{a.name} laughed and laughed.", "They had so much fun together.",
                         f"{a.name} was not {rng.choice(FEELINGS_BAD)} anymore."]))
    x["lesson"] = LESSONS["friend"]


def _plot_share(rng, a, b, s, x):
    thing = rng.choice(FOODS + ["a " + o for o in OBJECTS])
    s.append(f"{a.name} had {thing}.")
    s.append(f"{b.name} saw it and wanted it too.")
    s.append(_say(rng, b.name, rng.choice(["Can I have some?", "Can I play with it too?", "Will you share with me, please?"])))
    s.append(_say(rng, a.name, rng.choice(["No, it is mine!", "No! I want it all for myself.", "Go away, it is mine."])))
    s.append(f"{b.name} walked away, and {b.he} looked {rng.choice(FEELINGS_BAD)}.")
    s.append(rng.choice([f"{a.name} thought about it for a long time.", f"Soon {a.name} did not feel good.",
                         f"{a.name}'s mom saw what happened and shook her head."]))
    s.append(rng.choice([f"{_cap(a.he)} ran after {b.name}.", f"So {a.he} went to find {b.name}."]))
    s.append(_say(rng, a.name, rng.choice(["I am sorry. Let's share!", "Here, we can both have it.",
                                           "I was wrong. You can have half."])))
    s.append(f"{b.name} smiled, and they shared the {thing.split(' ', 1)[1]} together.")
    s.append(f"Both of them felt {rng.choice(FEELINGS_GOOD)}.")
    x["lesson"] = LESSONS["share"]


def _plot_fear(rng, a, b, s, x):
    fear, calm = rng.choice(FEARS)
    s.append(f"{a.name} was afraid of {fear}.")
    s.append(rng.choice([f"Every time {a.he} thought about it, {a.his} knees shook.",
                         f"{_cap(a.he)} did not like to talk about it.",
                         f"Even when {a.he} was with friends, {a.he} stayed away from it."]))
    s.append(rng.choice([f"One day, {a.he} had to face {fear}.", "But that day, there was no way around it."]))
    s.append(_say(rng, a.name, rng.choice(["I can't do it!", "I am too scared.", "What if something bad happens?"])))
    s.append(f"{b.name} held {a.his} hand.")
    s.append(_say(rng, b.name, rng.choice(["I am here with you. We can do it together.",
                                           "Take a deep breath. You are braver than you think.",
                                           "Let's count to three, and then we try."])))
    s.append(f"{a.name} took a deep breath and tried.")
    s.append(calm)
    s.append(_say(rng, a.name, rng.choice(["That was not so bad!", "I did it!", "I am not scared anymore."])))
    x["lesson"] = LESSONS["fear"]


def _plot_build(rng, a, b, s, x):
    what, place, problem = rng.choice(BUILD)
    s.append(f"{a.name} and {b.name} wanted to make {what} {'at' if place == 'the beach' else 'in'} {place}.")
    s.append(rng.choice(["They worked hard all morning.", "They got everything they needed and started.",
                         f"{a.name} brought the tools, and {b.name} had a plan."]))
    s.append(f"But then {problem}.")
    s.append(_say(rng, b.name, rng.choice(["Oh no! All our work is gone.", "We will never finish it!",
                                           "Maybe we should stop."])))
    s.append(_say(rng, a.name, rng.choice(["Let's try again. We can do it better this time.",
                                           "Don't give up! We can fix it.",
                                           "We learned something. Let's start again."])))
    s.append(rng.choice(["So they tried again, slowly and carefully.", "This time they were more careful.",
                         "They started again and helped each other."]))
    s.append(f"At the end of the day, the {what.split(' ', 1)[1]} was finished, and it was {rng.choice(['beautiful', 'perfect', 'the best one ever', 'big and strong'])}.")
    s.append(f"{a.name} and {b.name} were very {rng.choice(FEELINGS_GOOD)}.")
    x["lesson"] = LESSONS["build"]


def _plot_help(rng, a, b, s, x):
    trouble, animal, action, thanks = rng.choice(TROUBLES)
    place, prep = rng.choice(PLACES)
    s.append(f"{a.name} was playing {prep} {place} when {a.he} found {trouble}.")
    s.append(_say(rng, a.name, rng.choice([f"Poor little {animal}! I will help you.",
                                           f"Oh no, the {animal} needs help!", "What should I do?"])))
    s.append(rng.choice([f"{_cap(a.he)} asked {b.name} what to do.", f"{b.name} came over to look."]))
    s.append(_say(rng, b.name, rng.choice(["We have to be gentle.", "Let's help it together.", "I know what to do!"])))
    s.append(f"So they {action}.")
    s.append(thanks)
    s.append(f"{a.name} felt warm and {rng.choice(FEELINGS_GOOD)} inside.")
    x["lesson"] = LESSONS["help"]


def _plot_trip(rng, a, b, s, x):
    place, prep = rng.choice(PLACES)
    sights = rng.sample(["tall trees", "a big red barn", "boats on the water", "a funny clown",
                         "a field of yellow flowers", "a bridge over a river", "many birds", "a man selling ice cream",
                         "a rainbow", "a little train"], 3)
    s.append(f"{a.name} and {a.his} family went to {place} for the day.")
    s.append(f"On the way, {a.he} saw {sights[0]}, {sights[1]} and {sights[2]}.")
    s.append(_say(rng, a.name, rng.choice(["Look at that!", "Are we there yet?", "This is so exciting!"])))
    s.append(rng.choice([f"When they got there, {a.he} met {_meet(rng, b, x)}.",
                         f"There, {a.he} played with {b.name} the {b.noun}."]))
    s.append(rng.choice(["Suddenly, dark clouds came and it began to rain.",
                         "After lunch, the wind started to blow very hard.",
                         "In the afternoon, the sun was very hot."]))
    s.append(rng.choice(["Everyone ran to hide under a big tree.", "They found a small cafe and waited inside.",
                         "They sat in the shade and drank cold water."]))
    s.append(_say(rng, b.name, rng.choice(["This is an adventure!", "I like this day.", "Will you come back soon?"])))
    s.append(f"When it was time to go home, {a.name} waved goodbye to {b.name}.")
    x["lesson"] = LESSONS["trip"]


def _plot_surprise(rng, a, b, s, x):
    gift = rng.choice(["a card with a drawing", "a cake with candles", "a necklace made of shells",
                       "a song", "a painted stone", "a bunch of flowers", "a paper crown"])
    s.append(f"It was {b.name}'s birthday, and {a.name} wanted to make a surprise.")
    s.append(rng.choice([f"{_cap(a.he)} thought and thought about what to give.",
                         f"{_cap(a.he)} did not have money, but {a.he} had an idea."]))
    s.append(f"{_cap(a.he)} decided to make {gift}.")
    s.append(rng.choice(["It took a long time.", "It was hard work, but it was fun.",
                         f"{_cap(a.he)} worked on it in secret."]))
    s.append(f"When {b.name} came, {a.name} jumped out and shouted, \"Surprise!\"")
    s.append(f"{b.name} opened {b.his} eyes wide.")
    s.append(_say(rng, b.name, rng.choice(["Did you make this for me?", "This is the best gift ever!",
                                           "Thank you! I love it!"])))
    s.append(f"{a.name} felt {rng.choice(FEELINGS_GOOD)}.")
    x["lesson"] = LESSONS["surprise"]


def _plot_race(rng, a, b, s, x):
    place, prep = rng.choice(PLACES)
    goal = rng.choice(["the big tree", "the fence", "the old gate", "the red house", "the end of the path"])
    s.append(_say(rng, a.name, rng.choice([f"Let's race to {goal}!", f"I bet I can run faster than you, {b.name}!"])))
    s.append(f"{b.name} said yes, and they lined up {prep} {place}.")
    s.append("Ready, set, go! They ran as fast as they could.")
    s.append(f"{a.name} was in front, but then {a.he} tripped and fell.")
    s.append(_say(rng, a.name, rng.choice(["Ouch, my knee!", "Oh no!", "Help!"])))
    s.append(f"{b.name} stopped running and came back to help {a.him} up.")
    s.append(_say(rng, b.name, rng.choice(["Are you okay?", "Let's finish together.", "Winning is not important."])))
    s.append(f"They walked to {goal} side by side.")
    s.append(rng.choice(["Nobody won, but both of them smiled.", "It was the happiest race ever."]))
    x["lesson"] = LESSONS["race"]


PLOTS = [_plot_lost, _plot_friend, _plot_share, _plot_fear, _plot_build, _plot_help, _plot_trip,
         _plot_surprise, _plot_race]


def story(rng):
    a = Char(rng)
    b = Char(rng, avoid=(a.name,))
    s, x = [], {}
    place, prep = rng.choice([p for p in PLACES if p[0] not in ("the kitchen", "school", "the library", "the playground", "the market")])
    first = rng.random()
    if first < 0.5:
        s.append(f"{rng.choice(OPENINGS)}, there was {a.intro(rng)}.")
    elif first < 0.75:
        s.append(f"{rng.choice(OPENINGS)}, {a.intro(rng)} lived {prep} {place}.")
    else:
        s.append(f"{a.name} was a {a.trait} {a.noun}.")
    if rng.random() < 0.6:
        s.append(rng.choice([f"{_cap(a.he)} liked to play with {a.his} friend {b.name}.",
                             f"{_cap(a.he)} loved {rng.choice(['to sing', 'to run', 'to draw', 'to read', 'to jump', 'to dance', 'the rain', 'the sun'])}.",
                             f"Every day, {a.he} ate {rng.choice(FOODS)} for breakfast.",
                             f"{_cap(a.his)} best friend was {b.name}."]))
        x["b_known"] = "friend" in s[-1]
    rng.choice(PLOTS)(rng, a, b, s, x)
    if rng.random() < 0.8:
        s.append(_fill(rng.choice(ENDINGS), a, b, x))
    paras, cur = [], []
    for sent in s:
        cur.append(sent)
        if len(cur) >= 3 and rng.random() < 0.25:
            paras.append(" ".join(cur))
            cur = []
    if cur:
        paras.append(" ".join(cur))
    return "\n\n".join(paras)
