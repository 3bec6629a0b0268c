"""Generated agent conversations: a few offered tools, user requests in varied
wording, the assistant's tool calls with arguments taken or derived from the
user's words, JSON tool results and answers that use them; requests no
offered tool fits answered directly. Everything here is generated; see
SOURCES.md.

    conversation(rng, max_turns=None, offered=None) -> (conv, kinds)
        conv  = {"tools": [...], "messages": [...]}
        kinds = {message index: kind} for each assistant message, kind one of
                "call", "call2" (two calls), "answer" (after a tool result),
                "smalltalk", "fact", "tools", "refusal"
"""
import json

# --- tools -----------------------------------------------------------------

def _fn(name, description, properties, required):
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": properties, "required": required}}}


LANGS = ["french", "spanish", "german", "italian"]
TOOLS = {t["function"]["name"]: t for t in [
    _fn("get_weather", "Get the current weather for a city.",
        {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, ["city"]),
    _fn("set_timer", "Start a countdown timer.",
        {"minutes": {"type": "integer"}, "label": {"type": "string"}}, ["minutes"]),
    _fn("send_email", "Send an email.",
        {"to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}}, ["to", "subject", "body"]),
    _fn("search_web", "Search the web.",
        {"query": {"type": "string"}, "max_results": {"type": "integer"}}, ["query"]),
    _fn("convert_currency", "Convert an amount of money between currencies.",
        {"amount": {"type": "number"}, "from": {"type": "string"}, "to": {"type": "string"}}, ["amount", "from", "to"]),
    _fn("create_event", "Add an event to the calendar.",
        {"title": {"type": "string"}, "date": {"type": "string", "description": "YYYY-MM-DD"},
         "attendees": {"type": "array", "items": {"type": "string"}}}, ["title", "date"]),
    _fn("calculate", "Evaluate an arithmetic expression.",
        {"expression": {"type": "string"}}, ["expression"]),
    _fn("translate", "Translate text into another language.",
        {"text": {"type": "string"}, "target_language": {"type": "string", "enum": LANGS}}, ["text", "target_language"]),
    _fn("add_todo", "Add an item to the to-do list.",
        {"item": {"type": "string"}, "priority": {"type": "string", "enum": ["low", "medium", "high"]},
         "tags": {"type": "array", "items": {"type": "string"}}}, ["item"]),
    _fn("book_table", "Book a table at a restaurant.",
        {"restaurant": {"type": "string"}, "people": {"type": "integer"}, "time": {"type": "string", "description": "HH:MM"},
         "options": {"type": "object", "properties": {"outdoor": {"type": "boolean"}, "occasion": {"type": "string"}}}},
        ["restaurant", "people", "time"]),
    _fn("get_stock_price", "Get the latest price of a stock.",
        {"symbol": {"type": "string"}}, ["symbol"]),
    _fn("play_music", "Play music.",
        {"query": {"type": "string"}, "shuffle": {"type": "boolean"}}, ["query"]),
    _fn("get_time", "Get the local time in a city.",
        {"city": {"type": "string"}}, ["city"]),
]}
NAMES = list(TOOLS)

# What each tool is for, in words (the "what tools do you have" answer and refusals).
ABOUT = {"get_weather": "check the weather", "set_timer": "set timers", "send_email": "send emails",
         "search_web": "search the web", "convert_currency": "convert currencies",
         "create_event": "add calendar events", "calculate": "do arithmetic", "translate": "translate text",
         "add_todo": "add to-do items", "book_table": "book restaurant tables",
         "get_stock_price": "look up stock prices", "play_music": "play music", "get_time": "tell the time in a city"}

# --- vocabulary --------------------------------------------------------------

CITIES = ["Paris", "London", "Tokyo", "Berlin", "Madrid", "Rome", "Cairo", "Lima", "Oslo", "Dublin", "Sydney",
          "Toronto", "Chicago", "Mumbai", "Seoul", "Nairobi", "Lisbon", "Vienna", "Prague", "Athens", "Boston",
          "New York", "San Francisco", "Buenos Aires", "Cape Town", "Mexico City", "Hong Kong", "Reykjavik",
          "São Paulo", "Zürich", "Kraków", "Montréal", "Istanbul", "Bangkok", "Denver", "Seattle", "Helsinki",
          "Amsterdam", "Warsaw", "Santiago"]
CONDITIONS = ["sunny", "cloudy", "rainy", "windy", "snowy", "foggy", "clear", "partly cloudy", "stormy"]
PEOPLE = ["Anna", "Ben", "Carlos", "Dana", "Emily", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kim", "Laura",
          "Marco", "Nadia", "Oliver", "Priya", "Quinn", "Rosa", "Sven", "Tara", "Umar", "Vera", "Wei", "Yusuf", "Zoe"]
DOMAINS = ["example.com", "mail.com", "work.org", "acme.io", "school.edu"]
NUMWORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
            "twelve"]
CURRENCIES = [("USD", "dollars", "US dollars"), ("EUR", "euros", "euros"), ("GBP", "pounds", "British pounds"),
              ("JPY", "yen", "Japanese yen"), ("CHF", "Swiss francs", "Swiss francs"), ("INR", "rupees", "Indian rupees"),
              ("CAD", "Canadian dollars", "Canadian dollars"), ("AUD", "Australian dollars", "Australian dollars"),
              ("MXN", "pesos", "Mexican pesos"), ("SEK", "kronor", "Swedish kronor")]
RATES = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "JPY": 151.4, "CHF": 0.88, "INR": 83.2, "CAD": 1.36,
         "AUD": 1.52, "MXN": 17.1, "SEK": 10.6}
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
EVENTS = ["Team lunch", "Dentist", "Project review", "Birthday party", "Yoga class", "Book club", "Budget meeting",
          "Call with the bank", "Piano lesson", "Movie night", "Hackathon", "Parents evening", "Coffee with a friend"]
PHRASES = {
    "good morning": ["bonjour", "buenos días", "guten Morgen", "buongiorno"],
    "thank you very much": ["merci beaucoup", "muchas gracias", "vielen Dank", "grazie mille"],
    "where is the train station": ["où est la gare", "dónde está la estación de tren", "wo ist der Bahnhof", "dov'è la stazione"],
    "I love you": ["je t'aime", "te quiero", "ich liebe dich", "ti amo"],
    "good night": ["bonne nuit", "buenas noches", "gute Nacht", "buona notte"],
    "see you tomorrow": ["à demain", "hasta mañana", "bis morgen", "a domani"],
    "how are you": ["comment ça va", "cómo estás", "wie geht es dir", "come stai"],
    "the cat is sleeping": ["le chat dort", "el gato duerme", "die Katze schläft", "il gatto dorme"],
    "I am hungry": ["j'ai faim", "tengo hambre", "ich habe Hunger", "ho fame"],
    "happy birthday": ["joyeux anniversaire", "feliz cumpleaños", "alles Gute zum Geburtstag", "buon compleanno"],
    "the water is cold": ["l'eau est froide", "el agua está fría", "das Wasser ist kalt", "l'acqua è fredda"],
    "I need help": ["j'ai besoin d'aide", "necesito ayuda", "ich brauche Hilfe", "ho bisogno di aiuto"],
    "good luck": ["bonne chance", "buena suerte", "viel Glück", "buona fortuna"],
    "welcome": ["bienvenue", "bienvenido", "willkommen", "benvenuto"],
    "what time is it": ["quelle heure est-il", "qué hora es", "wie spät ist es", "che ore sono"],
    "the book is on the table": ["le livre est sur la table", "el libro está sobre la mesa",
                                 "das Buch liegt auf dem Tisch", "il libro è sul tavolo"],
}
TODOS = ["buy milk", "call the plumber", "renew my passport", "water the plants", "pay the electricity bill",
         "book a dentist appointment", "clean the garage", "finish the report", "pick up the kids at 5",
         "return the library books", "fix the bike", "write to grandma", "order new glasses", "back up my laptop"]
TAGS = ["home", "work", "shopping", "family", "health", "money", "errands", "garden", "car", "school"]
RESTAURANTS = ["Luigi's", "The Green Fork", "Sakura Sushi", "Casa Lola", "Blue Harbor", "Le Petit Bistro",
               "Spice Garden", "The Old Mill", "Taco Town", "Noodle Bar", "Olive Tree", "Café Central"]
OCCASIONS = ["birthday", "anniversary", "business dinner", "date night", "graduation"]
STOCKS = [("AAPL", "Apple"), ("MSFT", "Microsoft"), ("GOOGL", "Alphabet"), ("AMZN", "Amazon"), ("TSLA", "Tesla"),
          ("NVDA", "Nvidia"), ("META", "Meta"), ("NFLX", "Netflix"), ("IBM", "IBM"), ("INTC", "Intel"),
          ("KO", "Coca-Cola"), ("NKE", "Nike")]
MUSIC = ["jazz", "classical music", "rock", "lo-fi beats", "Beethoven", "The Beatles", "Taylor Swift",
         "hip hop", "bossa nova", "Mozart", "Miles Davis", "reggae", "Queen", "piano music", "country music"]
TOPICS = ["electric cars", "how to bake bread", "the history of Rome", "healthy breakfast ideas",
          "learning Python", "the best hiking trails in Colorado", "how vaccines work", "black holes",
          "cheap flights to Lisbon", "how to grow tomatoes", "the rules of chess", "solar panels",
          "good books for teenagers", "how to train a puppy", "the tallest buildings in the world"]
BODIES = ["I will be 10 minutes late.", "The meeting is moved to Friday.", "Thanks for your help yesterday!",
          "Can you send me the slides?", "Dinner is at 7 tonight.", "Happy birthday! Have a great day.",
          "I left my keys at your place.", "The report is ready for review.", "Let's meet at the station.",
          "Please call me when you are free."]
SUBJECTS = ["Running late", "Meeting", "Thank you", "Slides", "Dinner", "Birthday", "Keys", "Report", "Plans",
            "Quick question"]
TZ_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def _cap(s):
    return s[:1].upper() + s[1:]


def _lower1(s):
    return s[:1].lower() + s[1:] if s[:2] != s[:2].upper() else s


def _num(rng, n):
    return NUMWORDS[n] if n < len(NUMWORDS) and rng.random() < 0.5 else str(n)


def _money(x):
    return f"{x:.2f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))


def _list(items):
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# --- one request per tool: (user words, arguments, result, answer, reasoning) --

def r_get_weather(rng):
    city = rng.choice(CITIES)
    unit = rng.choice([None, None, "celsius", "fahrenheit"])
    u = f" in {unit}" if unit else ""
    user = rng.choice([f"What's the weather in {city}{u}?", f"How warm is it in {city} right now{u}?",
                       f"Is it raining in {city}?" if not unit else f"Is it cold in {city}? Tell me{u}.",
                       f"weather {city}{u}", f"Can you check the weather for {city}{u}?",
                       f"Tell me the temperature in {city}{u}, please."])
    args = {"city": city}
    if unit:
        args["unit"] = unit
    unit_r = unit or "celsius"
    t = rng.randint(-10, 35) if unit_r == "celsius" else rng.randint(14, 95)
    cond, hum = rng.choice(CONDITIONS), rng.randint(20, 95)
    result = {"city": city, "temperature": t, "unit": unit_r, "condition": cond, "humidity": hum}
    deg = "°C" if unit_r == "celsius" else "°F"
    answer = rng.choice([f"It's {t}{deg} and {cond} in {city}, with {hum}% humidity.",
                         f"In {city} it is currently {cond} and {t}{deg} (humidity {hum}%).",
                         f"Right now {city} has {cond} weather at {t}{deg}."])
    return user, args, result, answer, f"The user wants the weather in {city}" + (f" in {unit}." if unit else ".")


def r_set_timer(rng):
    spoken = rng.choice([(None, None), ("half an hour", 30), ("an hour", 60), ("a quarter of an hour", 15),
                         ("an hour and a half", 90), ("two hours", 120), (None, None), (None, None)])
    if spoken[0]:
        words, m = spoken
    else:
        m = rng.choice([1, 2, 3, 5, 7, 8, 10, 12, 15, 20, 25, 40, 45])
        words = f"{_num(rng, m)} minute{'s' if m != 1 else ''}"
    label = rng.choice([None, None, "pasta", "tea", "laundry", "eggs", "workout", "pizza", "nap", "meeting", "bread"])
    if label:
        user = rng.choice([f"Set a timer for {words} for the {label}.", f"Timer for {label}: {words}.",
                           f"Remind me about the {label} in {words} with a timer.",
                           f"Can you start a {words} timer called {label}?"])
    else:
        user = rng.choice([f"Set a timer for {words}.", f"Start a timer, {words}.", f"timer {words} please",
                           f"Can you count down {words} for me?"])
    args = {"minutes": m}
    if label:
        args["label"] = label
    h, mm = rng.randint(6, 22), rng.randint(0, 59)
    end = (h * 60 + mm + m) % 1440
    ends = f"{end // 60:02d}:{end % 60:02d}"
    result = {"status": "set", "minutes": m, "ends_at": ends}
    answer = rng.choice([f"Done! Your {label + ' ' if label else ''}timer is set for {m} minutes and will ring at {ends}.",
                         f"Timer set: {m} minutes, ending at {ends}."])
    return user, args, result, answer, f"{words} is {m} minutes."


def r_send_email(rng):
    name = rng.choice(PEOPLE)
    to = f"{name.lower()}@{rng.choice(DOMAINS)}"
    k = rng.randrange(len(BODIES))
    subject, body = SUBJECTS[k], BODIES[k]
    user = rng.choice([f"Send an email to {to} with the subject \"{subject}\" saying: {body}",
                       f"Email {to}, subject {subject}. Write: {body}",
                       f"Please write to {to}. Subject: \"{subject}\". Message: {body}",
                       f"Can you send {to} an email titled \"{subject}\"? The text is: {body}"])
    args = {"to": to, "subject": subject, "body": body}
    mid = f"msg-{rng.randint(1000, 9999)}"
    result = {"status": "sent", "message_id": mid}
    answer = rng.choice([f"Your email to {to} has been sent (message id {mid}).",
                         f"Sent! {name} will get your \"{subject}\" email."])
    return user, args, result, answer, f"I need to email {to} with subject \"{subject}\"."


def r_search_web(rng):
    q = rng.choice(TOPICS)
    n = rng.choice([None, None, 2, 3])
    if n:
        user = rng.choice([f"Find me {_num(rng, n)} links about {q}.", f"Search the web for {q}, top {n} results.",
                           f"Give me {_num(rng, n)} search results for {q}."])
    else:
        user = rng.choice([f"Search the web for {q}.", f"Look up {q} online.", f"Can you google {q}?",
                           f"search: {q}"])
    args = {"query": q}
    if n:
        args["max_results"] = n
    slug = q.replace(" ", "-").replace("'", "")
    sites = rng.sample(["wikipedia.org", "example.com", "howto.net", "news.site", "guide.io", "learn.dev"], 3)
    titles = [f"{_cap(q)}: a beginner's guide", f"10 things to know about {q}", f"Everything about {q}"]
    results = [{"title": titles[i], "url": f"https://{sites[i]}/{slug}"} for i in range(n or 3)]
    result = {"results": results}
    top = results[0]
    answer = rng.choice([f"The top result is \"{top['title']}\" ({top['url']}).",
                         "Here is what I found:\n" + "\n".join(f"- {r['title']}: {r['url']}" for r in results)])
    return user, args, result, answer, f"A web search for \"{q}\" will answer this."


def r_convert_currency(rng):
    a, b = rng.sample(CURRENCIES, 2)
    amount = rng.choice([rng.randint(1, 500), rng.randint(1, 2000), round(rng.uniform(1, 300), 2)])
    style = rng.random()
    am = _money(amount)
    if style < 0.5:
        user = rng.choice([f"How much is {am} {a[1]} in {b[1]}?", f"Convert {am} {a[2]} to {b[2]}.",
                           f"What are {am} {a[1]} worth in {b[1]}?"])
    else:
        user = rng.choice([f"Convert {am} {a[0]} to {b[0]}.", f"{am} {a[0]} in {b[0]}?",
                           f"How many {b[0]} do I get for {am} {a[0]}?"])
    args = {"amount": amount, "from": a[0], "to": b[0]}
    rate = round(RATES[b[0]] / RATES[a[0]] * rng.uniform(0.97, 1.03), 4)
    value = round(amount * rate, 2)
    result = {"amount": amount, "from": a[0], "to": b[0], "rate": rate, "result": value}
    answer = rng.choice([f"{am} {a[0]} is about {_money(value)} {b[0]} (rate {rate}).",
                         f"That comes to {_money(value)} {b[0]} at a rate of {rate}."])
    return user, args, result, answer, f"{a[1]} is {a[0]} and {b[1]} is {b[0]}."


def r_create_event(rng):
    title = rng.choice(EVENTS)
    y, mo, d = rng.choice([2025, 2026]), rng.randint(1, 12), rng.randint(1, 28)
    date = f"{y}-{mo:02d}-{d:02d}"
    said = rng.choice([f"on {MONTHS[mo - 1]} {d}, {y}", f"on {date}", f"on the {d}{'st' if d in (1, 21) else 'nd' if d in (2, 22) else 'rd' if d in (3, 23) else 'th'} of {MONTHS[mo - 1]} {y}"])
    who = rng.sample(PEOPLE, rng.choice([0, 1, 2, 2, 3]))
    with_ = f" with {_list(who)}" if who else ""
    user = rng.choice([f"Create an event \"{title}\" {said}{with_}.", f"Put {title} in my calendar {said}{with_}.",
                       f"Add a calendar event called {title} {said}{with_}.",
                       f"Schedule \"{title}\" {said}{with_}, please."])
    args = {"title": title, "date": date}
    if who:
        args["attendees"] = who
    eid = f"ev-{rng.randint(100, 999)}"
    result = {"event_id": eid, "status": "created"}
    answer = rng.choice([f"I added \"{title}\" to your calendar on {date}{with_}.",
                         f"Done: {title} is scheduled for {date} (event {eid})."])
    return user, args, result, answer, f"The date {said[3:]} is {date}."


def r_calculate(rng):
    a, b = rng.randint(2, 999), rng.randint(2, 99)
    op = rng.choice(["+", "-", "*", "/", "*", "+"])
    word = {"+": "plus", "-": "minus", "*": "times", "/": "divided by"}[op]
    expr = f"{a} {op} {b}"
    if rng.random() < 0.2:
        c = rng.randint(2, 20)
        expr = f"({a} + {b}) * {c}"
        user = rng.choice([f"What is ({a} + {b}) * {c}?", f"Calculate {a} plus {b}, then times {c}."])
        val = (a + b) * c
    else:
        user = rng.choice([f"What is {a} {word} {b}?", f"Calculate {expr}.", f"{expr} = ?", f"How much is {a} {word} {b}?"])
        val = {"+": a + b, "-": a - b, "*": a * b, "/": round(a / b, 4)}[op]
    result = {"result": val}
    answer = rng.choice([f"{expr} = {val}.", f"The answer is {val}.", f"It's {val}."])
    return user, {"expression": expr}, result, answer, f"I'll compute {expr} with the calculator."


def r_translate(rng):
    phrase = rng.choice(list(PHRASES))
    li = rng.randrange(4)
    lang = LANGS[li]
    L = _cap(lang)
    user = rng.choice([f"How do you say \"{phrase}\" in {L}?", f"Translate \"{phrase}\" into {L}.",
                       f"What is \"{phrase}\" in {L}?", f"{L} for \"{phrase}\", please."])
    tr = PHRASES[phrase][li]
    result = {"translation": tr, "language": lang}
    answer = rng.choice([f"In {L}, \"{phrase}\" is \"{tr}\".", f"\"{_cap(tr)}\" is how you say it in {L}.",
                         f"{_cap(tr)}."])
    return user, {"text": phrase, "target_language": lang}, result, answer, f"Translate into {lang}."


def r_add_todo(rng):
    item = rng.choice(TODOS)
    pr = rng.choice([None, "low", "medium", "high"])
    tags = rng.sample(TAGS, rng.choice([0, 0, 1, 2]))
    extra = ""
    if pr:
        extra += rng.choice([f" with {pr} priority", f", priority {pr}", f" ({pr} priority)"])
    if tags:
        extra += rng.choice([f", tagged {_list(tags)}", f" with the tag{'s' if len(tags) > 1 else ''} {_list(tags)}"])
    user = rng.choice([f"Add \"{item}\" to my to-do list{extra}.", f"Put {item} on my list{extra}.",
                       f"New todo: {item}{extra}.", f"Remind me to {item}{extra}, add it to my todos."])
    args = {"item": item}
    if pr:
        args["priority"] = pr
    if tags:
        args["tags"] = tags
    tid = rng.randint(1, 99)
    result = {"id": tid, "status": "added"}
    answer = rng.choice([f"Added \"{item}\" to your to-do list as item #{tid}.",
                         f"Done, \"{item}\" is on your list{' with ' + pr + ' priority' if pr else ''}."])
    return user, args, result, answer, f"The item is \"{item}\"."


def r_book_table(rng):
    rest = rng.choice(RESTAURANTS)
    people = rng.randint(1, 8)
    h, half = rng.randint(17, 22), rng.choice([0, 0, 30, 15, 45])
    time = f"{h:02d}:{half:02d}"
    said = rng.choice([f"at {h - 12}{':' + format(half, '02d') if half else ''} pm", f"at {time}",
                       f"at {h - 12}{':' + format(half, '02d') if half else ''} in the evening"])
    opts = {}
    extra = ""
    if rng.random() < 0.35:
        opts["outdoor"] = rng.random() < 0.6
        extra += ", outside if possible" if opts["outdoor"] else ", inside please"
    if rng.random() < 0.3:
        opts["occasion"] = rng.choice(OCCASIONS)
        extra += f", it's for a {opts['occasion']}"
    ppl = f"{_num(rng, people)} {'person' if people == 1 else 'people'}"
    user = rng.choice([f"Book a table at {rest} for {ppl} {said}{extra}.",
                       f"Can you reserve {rest} {said} for {ppl}{extra}?",
                       f"Table for {_num(rng, people)} at {rest} {said}{extra}."])
    args = {"restaurant": rest, "people": people, "time": time}
    if opts:
        args["options"] = opts
    code = f"BK-{rng.randint(1000, 9999)}"
    result = {"confirmation": code, "restaurant": rest, "people": people, "time": time}
    answer = rng.choice([f"Your table at {rest} for {people} at {time} is booked. Confirmation: {code}.",
                         f"Booked! {rest}, {time}, {people} {'guest' if people == 1 else 'guests'} (code {code})."])
    return user, args, result, answer, f"{said[3:]} is {time}."


def r_get_stock_price(rng):
    sym, name = rng.choice(STOCKS)
    user = rng.choice([f"What's {name} trading at?", f"Price of {sym}?", f"How is {name} stock doing today?",
                       f"Get me the current {sym} share price."])
    price = round(rng.uniform(10, 900), 2)
    ch = round(rng.uniform(-5, 5), 2)
    result = {"symbol": sym, "price": price, "currency": "USD", "change_percent": ch}
    answer = rng.choice([f"{name} ({sym}) is at {price} USD, {'up' if ch >= 0 else 'down'} {abs(ch)}% today.",
                         f"{sym} is trading at ${price} ({'+' if ch >= 0 else ''}{ch}%)."])
    return user, {"symbol": sym}, result, answer, f"{name}'s ticker is {sym}."


def r_play_music(rng):
    q = rng.choice(MUSIC)
    shuffle = rng.choice([None, None, True, False])
    extra = {None: "", True: " on shuffle", False: " in order, no shuffle"}[shuffle]
    user = rng.choice([f"Play some {q}{extra}.", f"Put on {q}{extra}.", f"I want to listen to {q}{extra}.",
                       f"Can you play {q}{extra}?"])
    args = {"query": q}
    if shuffle is not None:
        args["shuffle"] = shuffle
    track = rng.choice(["Track 1", "Morning Light", "Blue Sky", "Night Drive", "Symphony No. 5", "Autumn Leaves",
                        "Golden Hour", "Slow River"])
    result = {"status": "playing", "track": track}
    answer = rng.choice([f"Now playing \"{track}\".", f"Playing {q}: \"{track}\" is on."])
    return user, args, result, answer, f"Play {q}."


def r_get_time(rng):
    city = rng.choice(CITIES)
    user = rng.choice([f"What time is it in {city}?", f"Current time in {city}?", f"Is it late in {city} now?",
                       f"Tell me the local time in {city}."])
    t = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
    day = rng.choice(TZ_DAYS)
    result = {"city": city, "time": t, "day": day}
    answer = rng.choice([f"It's {t} on {day} in {city}.", f"In {city} it is {t} ({day})."])
    return user, {"city": city}, result, answer, f"Look up the time in {city}."


REQUESTS = {n: globals()["r_" + n] for n in NAMES}

# --- requests no tool answers ------------------------------------------------

SMALLTALK = [(["Hi!", "Hello", "Hey there", "Good morning!", "hi"],
              ["Hello! How can I help you today?", "Hi! What can I do for you?"]),
             (["Thanks!", "Thank you", "thanks a lot", "Great, thanks."],
              ["You're welcome!", "Happy to help!", "Any time!"]),
             (["How are you?", "How's it going?"],
              ["I'm doing well, thanks for asking. How can I help?", "All good here! What do you need?"]),
             (["Bye", "Goodbye!", "See you later."], ["Goodbye! Have a nice day.", "Bye! Talk soon."]),
             (["Tell me a joke.", "Make me laugh."],
              ["Why did the scarecrow win an award? Because he was outstanding in his field.",
               "I told my computer a joke about UDP. I'm not sure it got it."]),
             (["Who are you?", "What are you?"],
              ["I'm a small assistant that runs on this device.", "I'm a helpful assistant running locally."])]
FACTS = [("What is the capital of France?", "The capital of France is Paris."),
         ("What is the capital of Japan?", "The capital of Japan is Tokyo."),
         ("What is the capital of Italy?", "The capital of Italy is Rome."),
         ("What is the capital of Canada?", "The capital of Canada is Ottawa."),
         ("What is the capital of Kenya?", "The capital of Kenya is Nairobi."),
         ("How many days are in a week?", "There are seven days in a week."),
         ("How many legs does a spider have?", "A spider has eight legs."),
         ("What color is the sky on a clear day?", "It is blue."),
         ("How many minutes are in an hour?", "There are 60 minutes in an hour."),
         ("What is the largest ocean?", "The Pacific Ocean is the largest ocean."),
         ("At what temperature does water boil?", "Water boils at 100 °C (212 °F) at sea level."),
         ("Who wrote Romeo and Juliet?", "William Shakespeare wrote Romeo and Juliet."),
         ("What is the chemical symbol for gold?", "The chemical symbol for gold is Au."),
         ("How many continents are there?", "There are seven continents."),
         ("What planet is closest to the sun?", "Mercury is the planet closest to the sun."),
         ("How many sides does a hexagon have?", "A hexagon has six sides.")]
IMPOSSIBLE = ["Order me a pizza.", "Turn off the living room lights.", "Call my mom.", "Open the garage door.",
              "Buy two tickets for the concert.", "Post this on my social media.", "Lock the front door.",
              "Transfer 50 dollars to Ben.", "Take a photo.", "Drive me home."]
ASK_TOOLS = ["What tools do you have?", "What can you do?", "Which functions can you use?",
             "What are you able to help with?"]
SYSTEMS = [None, None, None, "You are a helpful assistant.", "You are a helpful assistant.",
           "You are Ember, a helpful assistant running on this device.", "Answer briefly.",
           "You are a friendly assistant. Use the tools when they help."]


def _abilities(names):
    return _list([ABOUT[n] for n in names])


def _tool_msg(result):
    return {"role": "tool", "content": json.dumps(result, ensure_ascii=False)}


def _call(name, args):
    return {"type": "function", "function": {"name": name, "arguments": args}}


def _assistant(content, think, reasoning, calls=None):
    m = {"role": "assistant", "content": content}
    if calls:
        m["tool_calls"] = calls
    if think and reasoning:
        m["reasoning_content"] = reasoning
    return m


# Where one draw in [0, 1) picks a turn's kind: a single call below CALL_UPTO,
# two calls below CALL2_UPTO (when tools are offered), then the direct kinds.
CALL_UPTO, CALL2_UPTO = 0.52, 0.64


def _turn(rng, names, msgs, kinds, think, call2_boost=0.0):
    """Appends one user request and the assistant's handling of it.
    call2_boost > 0 (training corpora only): that share of the turns that
    offer tools are two-call requests before the usual mix is drawn; 0 draws
    nothing extra, so the held-out sets of every seed stay as they were."""
    if names and call2_boost > 0 and rng.random() < call2_boost:
        r = CALL_UPTO  # inside the two-call band
    else:
        r = rng.random()
    if names and r < CALL_UPTO:
        name = rng.choice(names)
        user, args, result, answer, why = REQUESTS[name](rng)
        msgs.append({"role": "user", "content": user})
        pre = rng.choice(["", "", "", "", "Let me check.", "Sure, one moment.", "On it."])
        if name in ("send_email", "book_table", "set_timer", "add_todo", "create_event", "play_music"):
            pre = "" if pre == "Let me check." else pre
        kinds[len(msgs)] = "call"
        msgs.append(_assistant(pre, think, f"{why} I'll call {name}.", [_call(name, args)]))
        msgs.append(_tool_msg(result))
        kinds[len(msgs)] = "answer"
        msgs.append(_assistant(answer, think, "The tool returned the result; I'll report it."))
    elif names and r < CALL2_UPTO:
        n1 = rng.choice(names)
        n2 = n1 if rng.random() < 0.3 else rng.choice(names)
        u1, a1, res1, ans1, _ = REQUESTS[n1](rng)
        u2, a2, res2, ans2, _ = REQUESTS[n2](rng)
        if a1 == a2:
            return _turn(rng, names, msgs, kinds, think, call2_boost)
        joint = rng.choice(["Also,", "And", "Then", "Oh, and"])
        msgs.append({"role": "user", "content": f"{u1} {joint} {_lower1(u2)}"})
        kinds[len(msgs)] = "call2"
        msgs.append(_assistant("", think, f"Two requests: {n1} and {n2}. I'll make both calls at once.",
                               [_call(n1, a1), _call(n2, a2)]))
        msgs.append(_tool_msg(res1))
        msgs.append(_tool_msg(res2))
        kinds[len(msgs)] = "answer"
        msgs.append(_assistant(f"{ans1} {ans2}" if "\n" not in ans1 else f"{ans1}\n\n{ans2}", think,
                               "Both tools answered; I'll report both results."))
    elif r < 0.72:
        q, a = rng.choice(SMALLTALK)
        msgs.append({"role": "user", "content": rng.choice(q)})
        kinds[len(msgs)] = "smalltalk"
        msgs.append(_assistant(rng.choice(a), think, "This is small talk; no tool is needed."))
    elif r < 0.82:
        q, a = rng.choice(FACTS)
        msgs.append({"role": "user", "content": q})
        kinds[len(msgs)] = "fact"
        msgs.append(_assistant(a, think, "I know this; no tool is needed."))
    elif r < 0.87:
        msgs.append({"role": "user", "content": rng.choice(ASK_TOOLS)})
        kinds[len(msgs)] = "tools"
        if names:
            ans = rng.choice([f"I can {_abilities(names)}.",
                              "I have these tools: " + ", ".join(names) + f". So I can {_abilities(names)}."])
        else:
            ans = "I have no tools in this conversation, but I can answer questions and chat."
        msgs.append(_assistant(ans, think, "The user asks about my tools; I'll list the ones I was given."))
    else:
        others = [n for n in NAMES if n not in names]
        if rng.random() < 0.6 and others:
            user = REQUESTS[rng.choice(others)](rng)[0]
        else:
            user = rng.choice(IMPOSSIBLE)
        msgs.append({"role": "user", "content": user})
        kinds[len(msgs)] = "refusal"
        can = f" I can {_abilities(names)}." if names else ""
        msgs.append(_assistant(rng.choice(["I can't do that with the tools I have.",
                                           "Sorry, I can't help with that: none of my tools can do it.",
                                           "I'm not able to do that with the tools I have."]) + can,
                               think, "None of my tools fits this request, so I'll say so."))


def offer(rng):
    """The tool names and system prompt a conversation starts with."""
    if rng.random() < 0.05:
        names = []
    else:
        names = rng.sample(NAMES, rng.choice([2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 4, 4, 4, 5]))
    return names, rng.choice(SYSTEMS)


def conversation(rng, max_turns=None, offered=None, call2_boost=0.0):
    """max_turns: None for the default mix (mostly one request), else 1..max_turns
    requests drawn uniformly (more assistant turns per rendered tool list: the
    second training stage uses it to spend less compute on system prompts).
    offered: (names, system) from offer() to reuse (a family of conversations
    with one rendered system prompt, which training computes once); None draws
    them, consuming the generator exactly as before families existed.
    call2_boost: see _turn (0, the default, for every evaluation)."""
    names, system = offered if offered is not None else offer(rng)
    tools = [TOOLS[n] for n in names]
    msgs, kinds = [], {}
    if system:
        msgs.append({"role": "system", "content": system})
    think = rng.random() < 0.25
    turns = rng.choice([1, 1, 1, 1, 1, 1, 2, 2, 2, 3]) if max_turns is None else rng.randint(1, max_turns)
    for _ in range(turns):
        _turn(rng, names, msgs, kinds, think, call2_boost)
    return {"tools": tools, "messages": msgs}, kinds
