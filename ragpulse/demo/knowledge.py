# ruff: noqa: E501  (a data module: one document or answer per line reads best)
"""The demo's knowledge base: three tenants' documents and the questions users ask about them.

`bank` is a Russian retail bank's help centre, `shop` an English web shop's, `hr` a
bilingual internal HR desk. Each `Question` is one intent: the document that answers it, a
correct answer, a reference answer, near-duplicate rephrasings (the same user asking again),
a wrong answer (what a hallucinating generator says), so every metric tier has signal, and
`asked`: other ways users open with the same intent, in Russian and English, so the
`topics` job finds each intent as one topic whatever the language. One intent per tenant
has no document (`doc_id` None, a planted knowledge gap): its retrievals come back empty or
unrelated and the bot answers that it does not know.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Document:
    id: str
    url: str
    tenant: str
    text: str


@dataclass(frozen=True)
class Question:
    doc_id: str | None
    text: str
    answer: str
    reference: str
    rephrasings: tuple[str, ...]
    wrong_answer: str
    related_id: str | None = None
    asked: tuple[str, ...] = ()

    @property
    def answerable(self) -> bool:
        """False for a planted knowledge gap: no document of the corpus answers it."""
        return self.doc_id is not None

    @property
    def openings(self) -> tuple[str, ...]:
        """Every way a session opens with this intent: the question and `asked`."""
        return (self.text, *self.asked)


def _doc(tenant: str, slug: str, host: str, text: str) -> Document:
    return Document(f"{tenant}-{slug}", f"https://{host}/{slug.replace('-', '/')}", tenant, text)


DOCUMENTS: tuple[Document, ...] = (
    _doc(
        "bank",
        "cards-limits",
        "help.bank.example.ru",
        "Суточный лимит снятия наличных по дебетовой карте составляет 300 000 рублей. Лимит можно изменить в мобильном приложении в разделе «Карты».",
    ),
    _doc(
        "bank",
        "cards-block",
        "help.bank.example.ru",
        "Заблокировать карту можно в приложении, в интернет-банке или по телефону 8 800 000-00-00. Разблокировка выполняется там же, если карта не была перевыпущена.",
    ),
    _doc(
        "bank",
        "cards-reissue",
        "help.bank.example.ru",
        "Перевыпуск карты при утере бесплатный. Новая карта будет готова через 5 рабочих дней и доставляется в выбранное отделение.",
    ),
    _doc(
        "bank",
        "deposits-rates",
        "help.bank.example.ru",
        "Ставка по вкладу «Надёжный» — 12% годовых на срок 6 месяцев. Проценты выплачиваются ежемесячно на карту или капитализируются.",
    ),
    _doc(
        "bank",
        "deposits-early",
        "help.bank.example.ru",
        "При досрочном закрытии вклада проценты пересчитываются по ставке 0,01% годовых. Вклад можно закрыть в приложении.",
    ),
    _doc(
        "bank",
        "transfers-sbp",
        "help.bank.example.ru",
        "Переводы через СБП до 100 000 рублей в месяц выполняются без комиссии. Сверх лимита взимается 0,5% от суммы, но не более 1500 рублей.",
    ),
    _doc(
        "bank",
        "mortgage-docs",
        "help.bank.example.ru",
        "Для ипотеки нужны паспорт, СНИЛС, справка о доходах 2-НДФЛ за 6 месяцев и копия трудовой книжки. Решение принимается за 2 рабочих дня.",
    ),
    _doc(
        "shop",
        "returns-policy",
        "support.shop.example.com",
        "You can return any item within 30 days of delivery. Items must be unused and in the original packaging; refunds go to the original payment method within 5 business days.",
    ),
    _doc(
        "shop",
        "returns-faulty",
        "support.shop.example.com",
        "Faulty items can be returned within 2 years. We pay for return shipping and offer a replacement or a full refund.",
    ),
    _doc(
        "shop",
        "shipping-times",
        "support.shop.example.com",
        "Standard shipping takes 3 to 5 business days; express shipping arrives the next business day if ordered before 2 pm.",
    ),
    _doc(
        "shop",
        "shipping-cost",
        "support.shop.example.com",
        "Shipping is free for orders over 50 dollars. Below that, standard shipping costs 4.99 dollars and express 12.99 dollars.",
    ),
    _doc(
        "shop",
        "orders-cancel",
        "support.shop.example.com",
        "An order can be cancelled from the Orders page until it has been handed to the carrier. After that, use a return instead.",
    ),
    _doc(
        "shop",
        "payment-methods",
        "support.shop.example.com",
        "We accept Visa, Mastercard, PayPal and gift cards. Cash on delivery is not available.",
    ),
    _doc(
        "hr",
        "vacation-days",
        "wiki.corp.example/hr",
        "Ежегодный оплачиваемый отпуск — 28 календарных дней. Заявление на отпуск подаётся в HR-портале не позднее чем за 14 дней.",
    ),
    _doc(
        "hr",
        "sick-leave",
        "wiki.corp.example/hr",
        "Больничный оформляется электронно; сообщите руководителю в первый день болезни и передайте номер листка нетрудоспособности в HR.",
    ),
    _doc(
        "hr",
        "remote-work",
        "wiki.corp.example/hr",
        "Employees may work remotely up to 3 days a week with their manager's approval. Requests are filed in the HR portal.",
    ),
    _doc(
        "hr",
        "equipment",
        "wiki.corp.example/hr",
        "Laptops are replaced every 3 years. Request new equipment through the IT service desk; delivery takes about a week.",
    ),
    _doc(
        "hr",
        "expenses",
        "wiki.corp.example/hr",
        "Travel expenses are reimbursed within 10 business days after the expense report with receipts is approved.",
    ),
)

DOCS_BY_ID = {doc.id: doc for doc in DOCUMENTS}


QUESTIONS: dict[str, tuple[Question, ...]] = {
    "bank": (
        Question(
            "bank-cards-limits",
            "Какой лимит на снятие наличных по карте в день?",
            "Суточный лимит снятия наличных по дебетовой карте — 300 000 рублей; его можно изменить в приложении.",
            "Лимит снятия наличных — 300 000 рублей в сутки, меняется в приложении в разделе «Карты».",
            (
                "Сколько можно снять наличных за сутки?",
                "Какой дневной лимит на снятие денег с карты?",
            ),
            "Лимит снятия наличных — 50 000 рублей в месяц, изменить его нельзя.",
            "bank-cards-block",
            asked=(
                "Сколько наличных можно снять с карты за один день?",
                "What is the daily cash withdrawal limit on my card?",
                "How much cash can I take out of an ATM per day?",
            ),
        ),
        Question(
            "bank-cards-block",
            "Как заблокировать карту, если я её потерял?",
            "Заблокируйте карту в приложении, интернет-банке или по телефону 8 800 000-00-00.",
            "Карту можно заблокировать в приложении, в интернет-банке или по телефону 8 800 000-00-00.",
            (
                "Потерял карту, как её заблокировать?",
                "Что делать, чтобы срочно заблокировать карту?",
            ),
            "Карту можно заблокировать только лично в отделении банка.",
            "bank-cards-reissue",
            asked=(
                "Украли карту, как быстро её заблокировать?",
                "How do I block my card if I lost it?",
                "My card was stolen, how can I freeze it?",
            ),
        ),
        Question(
            "bank-cards-reissue",
            "Сколько стоит перевыпуск карты при утере?",
            "Перевыпуск при утере бесплатный, новая карта будет готова через 5 рабочих дней.",
            "Перевыпуск карты при утере бесплатный; карта готова через 5 рабочих дней.",
            ("Платный ли перевыпуск потерянной карты?",),
            "Перевыпуск стоит 1000 рублей и занимает месяц.",
            "bank-cards-block",
            asked=(
                "Как перевыпустить потерянную карту и сколько это стоит?",
                "How much does it cost to replace a lost card?",
                "How long does it take to get a replacement card?",
            ),
        ),
        Question(
            "bank-deposits-rates",
            "Какая ставка по вкладу «Надёжный»?",
            "Ставка по вкладу «Надёжный» — 12% годовых на 6 месяцев.",
            "По вкладу «Надёжный» ставка 12% годовых на срок 6 месяцев.",
            ("Под какой процент вклад «Надёжный»?", "Какой процент по вкладу Надёжный?"),
            "Ставка по вкладу — 5% годовых на 3 года.",
            "bank-deposits-early",
            asked=(
                "Какой процент годовых по вкладам сейчас?",
                "What interest rate does the Nadezhny deposit pay?",
                "What are your savings deposit rates?",
            ),
        ),
        Question(
            "bank-deposits-early",
            "Что будет с процентами, если закрыть вклад досрочно?",
            "При досрочном закрытии проценты пересчитываются по ставке 0,01% годовых.",
            "При досрочном закрытии вклада проценты пересчитают по ставке 0,01% годовых.",
            ("Если закрыть вклад раньше срока, что с процентами?",),
            "Проценты сохраняются полностью при любом закрытии вклада.",
            "bank-deposits-rates",
            asked=(
                "Потеряю ли я проценты, если сниму вклад раньше времени?",
                "What happens to the interest if I close my deposit early?",
                "Can I withdraw my deposit before the term ends without losing interest?",
            ),
        ),
        Question(
            "bank-transfers-sbp",
            "Есть ли комиссия за переводы через СБП?",
            "Переводы через СБП до 100 000 рублей в месяц бесплатны, сверх лимита — 0,5%, но не более 1500 рублей.",
            "До 100 000 рублей в месяц без комиссии, дальше 0,5% (максимум 1500 рублей).",
            ("Сколько стоит перевод по СБП?", "Берут ли комиссию за перевод по номеру телефона?"),
            "Все переводы через СБП стоят 1% от суммы.",
            None,
            asked=(
                "Сколько стоит перевод по номеру телефона через СБП?",
                "Is there a fee for SBP transfers?",
                "How much do you charge for sending money by phone number?",
            ),
        ),
        Question(
            "bank-mortgage-docs",
            "Какие документы нужны для ипотеки?",
            "Паспорт, СНИЛС, справка 2-НДФЛ за 6 месяцев и копия трудовой книжки.",
            "Нужны паспорт, СНИЛС, справка 2-НДФЛ за полгода и копия трудовой книжки.",
            ("Что нужно принести для оформления ипотеки?",),
            "Для ипотеки достаточно одного паспорта.",
            None,
            asked=(
                "Какие справки нужны, чтобы взять ипотеку?",
                "What documents do I need for a mortgage?",
                "Which papers should I bring to apply for a home loan?",
            ),
        ),
        Question(  # a planted knowledge gap: no document covers exchange rates
            None,
            "Какой сегодня курс доллара в банке?",
            "К сожалению, я не нашёл ответа на этот вопрос в базе знаний банка.",
            "",
            ("По какому курсу вы продаёте доллары?",),
            "Курс доллара сегодня — 75 рублей, без комиссии.",
            None,
            asked=(
                "Где посмотреть курс обмена валют?",
                "What is your US dollar exchange rate today?",
                "At what rate can I buy euros at the bank?",
            ),
        ),
    ),
    "shop": (
        Question(
            "shop-returns-policy",
            "How long do I have to return an item?",
            "You can return unused items in their original packaging within 30 days of delivery.",
            "Items can be returned within 30 days of delivery if unused and in the original packaging.",
            ("What is the return window?", "How many days do I have to send something back?"),
            "Returns are accepted within 7 days only with a receipt.",
            "shop-returns-faulty",
            asked=(
                "Сколько дней есть на возврат товара?",
                "Can I still return something I bought three weeks ago?",
                "What is your return policy?",
            ),
        ),
        Question(
            "shop-returns-faulty",
            "My blender arrived broken, what can I do?",
            "Faulty items can be returned within 2 years; we pay return shipping and offer a replacement or a full refund.",
            "Return it within 2 years at our cost for a replacement or a full refund.",
            ("The product I got is defective, can I return it?",),
            "Broken items cannot be returned after unpacking.",
            "shop-returns-policy",
            asked=(
                "Пришёл бракованный товар, что делать?",
                "The item I received does not work, can I get a refund?",
                "My order arrived damaged, how do I get a replacement?",
            ),
        ),
        Question(
            "shop-shipping-times",
            "How long does delivery take?",
            "Standard shipping takes 3 to 5 business days; express arrives the next business day if ordered before 2 pm.",
            "Standard delivery takes 3-5 business days, express the next business day when ordered before 2 pm.",
            ("When will my order arrive?", "How fast is shipping?"),
            "Delivery always takes two weeks.",
            "shop-shipping-cost",
            asked=(
                "Сколько идёт доставка заказа?",
                "How many days does standard delivery take?",
                "If I order express today, when will it arrive?",
            ),
        ),
        Question(
            "shop-shipping-cost",
            "Is shipping free?",
            "Shipping is free on orders over 50 dollars; otherwise standard costs 4.99 and express 12.99 dollars.",
            "Free over 50 dollars, otherwise 4.99 standard or 12.99 express.",
            ("How much does shipping cost?",),
            "Shipping is always free.",
            "shop-shipping-times",
            asked=(
                "Сколько стоит доставка?",
                "Do you offer free shipping?",
                "What are the delivery charges for a small order?",
            ),
        ),
        Question(
            "shop-orders-cancel",
            "Can I cancel my order?",
            "Yes, from the Orders page until it is handed to the carrier; after that, return it instead.",
            "You can cancel on the Orders page until the carrier has it; later, use a return.",
            ("How do I cancel an order I just placed?",),
            "Orders cannot be cancelled once placed.",
            "shop-returns-policy",
            asked=(
                "Как отменить заказ?",
                "I want to cancel my order, is it too late?",
                "Can I cancel an order that has not shipped yet?",
            ),
        ),
        Question(
            "shop-payment-methods",
            "Can I pay cash on delivery?",
            "No, cash on delivery is not available; we accept Visa, Mastercard, PayPal and gift cards.",
            "Cash on delivery is not offered; pay by Visa, Mastercard, PayPal or gift card.",
            ("Do you accept cash when the parcel arrives?",),
            "Yes, cash on delivery is available everywhere.",
            None,
            asked=(
                "Можно ли оплатить заказ наличными при получении?",
                "Which payment methods do you accept?",
                "Can I pay with PayPal or a gift card?",
            ),
        ),
        Question(  # a planted knowledge gap: no document covers gift wrapping
            None,
            "Do you offer gift wrapping?",
            "I'm sorry, I don't know; I could not find anything about that in our help centre.",
            "",
            ("Can you wrap my order as a present?",),
            "Gift wrapping is free on every order.",
            None,
            asked=(
                "Можно ли упаковать заказ как подарок?",
                "Can I add a gift message and wrapping to my order?",
                "Есть ли у вас подарочная упаковка?",
            ),
        ),
    ),
    "hr": (
        Question(
            "hr-vacation-days",
            "Сколько дней отпуска мне положено?",
            "Ежегодный оплачиваемый отпуск — 28 календарных дней; заявление подаётся за 14 дней.",
            "Положено 28 календарных дней оплачиваемого отпуска в год.",
            ("Какая продолжительность ежегодного отпуска?", "Сколько у нас дней отпуска в году?"),
            "Отпуск составляет 14 рабочих дней.",
            "hr-sick-leave",
            asked=(
                "Сколько дней ежегодного отпуска у сотрудников?",
                "How many vacation days do I get per year?",
                "What is the annual paid leave allowance?",
            ),
        ),
        Question(
            "hr-sick-leave",
            "Как оформить больничный?",
            "Сообщите руководителю в первый день и передайте в HR номер электронного листка нетрудоспособности.",
            "Предупредите руководителя в первый день болезни и передайте номер больничного в HR.",
            ("Что делать, если я заболел?",),
            "Больничный нужно принести в бумажном виде через месяц.",
            "hr-vacation-days",
            asked=(
                "Я заболел, как оформить больничный лист?",
                "How do I report sick leave?",
                "I'm ill today, what do I need to do to take sick leave?",
            ),
        ),
        Question(
            "hr-remote-work",
            "How many days a week can I work from home?",
            "Up to 3 days a week with your manager's approval, requested in the HR portal.",
            "Remote work is allowed up to 3 days a week with manager approval.",
            ("Can I work remotely, and how often?", "What is the remote work limit per week?"),
            "Remote work is not allowed.",
            None,
            asked=(
                "Сколько дней в неделю можно работать из дома?",
                "Можно ли работать удалённо?",
                "What is the work from home policy?",
            ),
        ),
        Question(
            "hr-equipment",
            "How do I get a new laptop?",
            "Laptops are replaced every 3 years; request one through the IT service desk, delivery takes about a week.",
            "Request it from the IT service desk; laptops are replaced every 3 years.",
            ("Where do I request a laptop replacement?",),
            "Buy it yourself and keep the receipt.",
            "hr-expenses",
            asked=(
                "Как получить новый ноутбук?",
                "Куда обращаться за заменой ноутбука?",
                "My laptop is old, how do I request a replacement?",
            ),
        ),
        Question(
            "hr-expenses",
            "When are travel expenses reimbursed?",
            "Within 10 business days after your expense report with receipts is approved.",
            "Expenses are reimbursed within 10 business days of approval of the report.",
            ("How long until I get my travel costs back?",),
            "Expenses are reimbursed once a year.",
            None,
            asked=(
                "Когда возмещают командировочные расходы?",
                "Как получить компенсацию расходов на командировку?",
                "How do I get reimbursed for a business trip?",
            ),
        ),
        Question(  # a planted knowledge gap: no document covers office parking
            None,
            "Есть ли парковка у офиса для сотрудников?",
            "Не знаю: в базе знаний HR нет информации об этом.",
            "",
            ("Где оставить машину у офиса?",),
            "Парковка для сотрудников бесплатная, 200 мест.",
            None,
            asked=(
                "Is there employee parking at the office?",
                "How do I get a parking spot at work?",
                "Можно ли получить место на парковке офиса?",
            ),
        ),
    ),
}

TENANTS = tuple(QUESTIONS)
MODELS = {"bank": "gigachat-pro", "shop": "gpt-4o-mini", "hr": "yandexgpt-lite"}
JUDGE_MODEL = "gpt-4o-mini-guard"
