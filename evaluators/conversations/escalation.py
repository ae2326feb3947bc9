"""Escalation: the user asks for a person instead of the bot, or the application says so.

A message is split into clauses (at punctuation and "but"/"но"/"а"), so "no, get me an
operator" and "I don't get it, оператора позовите" are read clause by clause. A clause
asks for a person when, its words stemmed (`evaluators.conversations.words`; one typo
forgiven in words of five letters or more, repeated letters squeezed: "оператооор"), it
- names a person ("оператор", "человек", "менеджер", "human", "agent", "representative",
  "someone", ...) together with a contact verb ("позовите", "соедините", "переключите",
  "поговорить", "нужен", "talk", "speak", "connect", "transfer", "need", "want", ...)
  that is not in the past tense or the third person plural ("I talked to an agent
  yesterday", "операторы говорят" report, not ask), or
- qualifies the person as live ("живой человек", "real person", "live agent"), or
- is a short call: at most two content words, all of them the call, one a person ("agent
  please", "оператора!", not "операторы говорят"), or says "escalate" / "эскалируйте";
and no negation ("не", "без", "no", "not", "don't", "without", "never") stands up to three
words before the first trigger, unless a "why"/"почему" precedes it ("why can't I talk to
a human?" still asks). A person the clause sends money to is a payee, not a call: money
("деньги", "средства", "money", "funds") with a sending verb ("отправить", "перевести",
"send", "pay") and no verb of speech ("talk", "поговорить", "позвать", "соединить") reads
"хочу отправить деньги человеку" as a payment. A trace tagged `escalated` (true, 1,
"true", "yes", any other string) is an escalation whatever it says; a tag of "false", "0",
"no" or "" is not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from evaluators.conversations.words import CONTENT_STOPS, normalise, one_edit, stem, word_set

PERSONS = word_set(
    """
    оператор человек менеджер специалист сотрудник консультант агент поддержк люд жив
    oper human person peopl agent repres rep manag someon somebodi staff employe specialist
    support
    """
)
"""Stems naming a person (or the people behind "support"; "живой" alone: "есть кто живой?")."""
LIVE = word_set("жив настоя реальн real live actual")
CONTACT = word_set(
    """
    позов позва соедин соединя переключ перевед перевест свяж связа поговор говор хоч
    хотел нуж нужн дайт да позвон вызов вызва приглас обрат подключ зов зват пообща обща чат
    talk speak connect transfer get need want call contact reach chat put let give
    pass hand forward
    """
)
ESCALATE = frozenset({"escal", "эскалир", "эскалац"})
MONEY = word_set("деньг денег средств сумм рубл money fund cash")
SENDING = word_set(
    "отправ перевест перевод перевед посла посл скинут скин заплат оплат send pay wire transfer"
)
SPEECH = word_set(
    """
    позов позва соедин соединя переключ свяж связа поговор говор позвон вызов вызва обща
    пообща чат talk speak connect call contact reach chat
    """
)
"""With money and a sending verb, only these still make the person the help desk."""
NEGATIONS = word_set(
    """
    не нет без ни нельзя never no not without don't dont doesn't doesnt didn't didnt won't
    wont can't cant cannot nor
    """
)
WHY = frozenset({"why", "почему", "зачем", "отчего"})
INTERROGATIVES = word_set(
    "какой какая какие каких какого кто что сколько где когда what which who how where when"
)
"""A short clause with one of these, or one right before the person ("какой оператор связи
нужен?"), asks about a person, not for one."""
POSSESSIVES = word_set(
    """
    my our his her their your мой моя мое моего моему моим моей мои моих наш нашего нашему
    нашим свой своего своему своим своей свою
    """
)
"""A person after one of these is somebody's own ("talk to my manager"), not the help desk's."""
PROCEDURE = frozenset({"do", "does", "should", "must"})
OBLIGATION = word_set("нужно надо должен должна должны обязательно стоит")
"""A clause opening with "do/should/must", or saying "нужно ли", asks whether one has to
("do I need to call an operator to close the account?"); "можно ли" is a polite request."""
_SOMEONE = re.compile(r"\b(?:кто|кого|кем|кому)[- ](?:нибудь|то|либо)\b")
RAW_PERSONS = word_set("operator human manager representative person agent someone specialist")
FALSE_TAGS = frozenset({"false", "0", "no", "n", "off", ""})
NEGATION_REACH = 3
SHORT_CALL = 2
_CLAUSE = re.compile(r"[,.;:!?()\n—–]+|\s-\s|\b(?:but|но|а|however|однако)\b")
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_REPEATS = re.compile(r"(\w)\1{2,}")
_RU_REPORTING = re.compile(r"(?:л|ла|ли|ло|лся|лась|лись|лось|ят|ют|ут|ат)$")
"""Endings the stemmer strips off a past or third-person plural verb ("звонил", "говорят")."""
_ANYONE_ALIVE = re.compile(r"\bкто(?:[- ]?(?:нибудь|то|либо))?\s+жив\w*")
""""есть кто живой?": is anybody (a person) there."""
_EN_PAST = frozenset({"spoke", "spoken", "talked", "called", "contacted", "got", "wanted"})


def tagged_escalated(tags: Mapping[str, Any]) -> bool:
    """Did the application tag the trace escalated? A string is, unless it reads as false
    ("false", "0", "no", "off", empty): JSON booleans arrive as "true"/"false" tags."""
    value = tags.get("escalated")
    if isinstance(value, str):
        return value.strip().lower() not in FALSE_TAGS
    return bool(value)


def is_escalation(question: str, tags: Mapping[str, Any]) -> bool:
    """Does this turn ask for a person, or did the application tag it escalated?"""
    if tagged_escalated(tags):
        return True
    text = _REPEATS.sub(r"\1", normalise(question))
    text = _SOMEONE.sub("someone", _ANYONE_ALIVE.sub("someone live", text))
    return any(_clause_asks(clause) for clause in _CLAUSE.split(text) if clause)


def _clause_asks(clause: str) -> bool:
    words = _TOKEN.findall(clause)
    if not words:
        return False
    stems = [stem(w) for w in words]
    person = [
        i
        for i, (w, s) in enumerate(zip(words, stems, strict=True))
        if _is_person(w, s) and not (i and words[i - 1] in POSSESSIVES | INTERROGATIVES)
    ]
    escalate = [i for i, s in enumerate(stems) if s in ESCALATE]
    if not person and not escalate:
        return False
    contact = [i for i, (w, s) in enumerate(zip(words, stems, strict=True)) if _is_contact(w, s)]
    # "live" qualifies another word: "живая" alone is no call ("карта ещё жива?")
    live = [i for i, s in enumerate(stems) if s in LIVE and any(p != i for p in person)]
    calls = set(person + escalate + live + contact)
    content = [i for i, w in enumerate(words) if w not in CONTENT_STOPS or i in calls]
    # a short call says nothing but the call: "agent please", "оператора!", not
    # "операторы говорят", "support SBP?" or "какой оператор связи?"
    short = (
        len(content) <= SHORT_CALL
        and calls.issuperset(content)
        and not INTERROGATIVES.intersection(words)
    )
    procedure = words[0] in PROCEDURE or any(
        w == "ли" and i and words[i - 1] in OBLIGATION for i, w in enumerate(words)
    )
    asks = bool(escalate) or bool(
        person and (live or (contact and not procedure) or (short and not procedure))
    )
    if not asks or _pays(stems, words):
        return False
    first = min(person + escalate + contact + live)
    return not _negated(words, first)


def _pays(stems: list[str], words: list[str]) -> bool:
    """Does the clause send money to the person ("отправить деньги человеку", "send money
    to a person") rather than ask to speak to one?"""
    if not MONEY.intersection(stems) or not any(
        _listed(w, s, SENDING) for w, s in zip(words, stems, strict=True)
    ):
        return False
    return not any(_is_contact(w, s) and s in SPEECH for w, s in zip(words, stems, strict=True))


def _negated(words: list[str], first: int) -> bool:
    window = words[max(0, first - NEGATION_REACH) : first + 1]
    negator = next((i for i, w in enumerate(window) if w in NEGATIONS), None)
    if negator is None:
        return False
    before = words[: max(0, first - NEGATION_REACH) + negator]
    return not any(w in WHY for w in before)


def _is_person(word: str, s: str) -> bool:
    """A person's stem; a typo forgiven in a Russian stem or a whole English word of five
    letters or more (English stems are too short to forgive one: "employ" is not "employe")."""
    if s in PERSONS:
        return True
    if word.isascii():
        return len(word) >= 5 and any(one_edit(word, p) for p in RAW_PERSONS)
    return len(s) >= 5 and any(one_edit(s, p) for p in PERSONS if len(p) >= 5)


def _listed(word: str, s: str, stems: frozenset[str]) -> bool:
    """Is the word's stem listed, or (Russian) does it extend a listed stem of four letters
    or more ("позовет" of "позов")?"""
    if s in stems:
        return True
    return not word.isascii() and any(len(v) >= 4 and s.startswith(v) for v in stems)


def _is_contact(word: str, s: str) -> bool:
    """A contact verb asking now (a Russian stem may extend a listed one: "позовет"): not
    in the past ("I talked to an agent"), nor in the third person plural ("операторы
    говорят, что ..."), and "да" only as "дай" (not "yes")."""
    if s == "да":
        return word == "дай"
    if not _listed(word, s, CONTACT):
        return False
    if word.isascii():
        return word not in _EN_PAST and not (word.endswith("ed") and not word.endswith("eed"))
    ending = word[len(s) :] if word.startswith(s) else word
    return not _RU_REPORTING.search(ending)
