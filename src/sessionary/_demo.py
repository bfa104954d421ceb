"""The demo: a coding agent's conversation, built in a store to show sessionary off.

`build_demo` makes two sessions through the synchronous `SessionManager`: an agent that
runs tests, greps and reads files to find why a merge broke the suite (tool calls and
results, reasoning, state and usage), whose user then edits a question (a second branch,
now the head), and a fork of it at the diagnosis that is taken another way. The
`sessionary demo` command builds it and draws it with the CLI's renderers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sessionary._sync.manager import SessionManager
from sessionary._sync.session import Session
from sessionary.model import Message, Part, ReasoningPart, TextPart, ToolCallPart

__all__ = ["Demo", "build_demo"]

_SYSTEM = (
    "You are a coding agent working in the git repository ~/src/shop. Use the tools to "
    "inspect files and run the tests, and explain what you found before you change code."
)
_ASK = "The test suite started failing after yesterday's merge (#482). Can you find out why?"
_TEST_RUN = """\
.....F
=================================== FAILURES ===================================
_______________________ test_total_with_percent_discount _______________________

    def test_total_with_percent_discount():
        cart = Cart([Item("notebook", price=12.50, qty=2)])
        cart.apply(Discount.percent("10"))
>       assert cart.total() == 22.50

tests/test_cart.py:27:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
src/shop/cart.py:41: in total
    return round(subtotal * (1 - self.discount.rate), 2)
E   TypeError: unsupported operand type(s) for *: 'float' and 'decimal.Decimal'
=========================== short test summary info ============================
FAILED tests/test_cart.py::test_total_with_percent_discount - TypeError: unsupp...
1 failed, 5 passed in 0.42s"""
_GREP = """\
src/shop/discount.py:3:from decimal import Decimal
src/shop/discount.py:19:        return cls(rate=Decimal(value) / 100)
src/shop/cart.py:41:            return round(subtotal * (1 - self.discount.rate), 2)
tests/test_discount.py:8:    assert Discount.percent("10").rate == Decimal("0.1")"""
_CART = """\
30  class Cart:
31      def __init__(self, items: list[Item]) -> None:
32          self.items = items
33          self.discount: Discount | None = None
34
35      def apply(self, discount: Discount) -> None:
36          self.discount = discount
37
38      def total(self) -> float:
39          subtotal = sum(item.price * item.qty for item in self.items)
40          if self.discount is not None:
41              return round(subtotal * (1 - self.discount.rate), 2)
42          return round(subtotal, 2)"""
_DIAGNOSIS = (
    "Found it. Since #482, `Discount.percent()` builds its rate as a `Decimal` "
    "(src/shop/discount.py:19), but `Cart.total()` still multiplies a float subtotal by "
    "`1 - rate` (src/shop/cart.py:41). Python refuses to mix float and Decimal, so every "
    "discounted total raises TypeError. Either do the cart arithmetic in Decimal too, or "
    "convert the rate back to float."
)
_TEST_FILE = """\
20  def test_total_without_discount():
21      cart = Cart([Item("pen", price=1.20, qty=3)])
22      assert cart.total() == 3.60
23
24  def test_total_with_percent_discount():
25      cart = Cart([Item("notebook", price=12.50, qty=2)])
26      cart.apply(Discount.percent("10"))
27      assert cart.total() == 22.50"""


@dataclass
class Demo:
    """The sessions `build_demo` made: the branched conversation and its fork."""

    main: Session
    fork: Session


def _call(number: int, name: str, **arguments: Any) -> ToolCallPart:
    return ToolCallPart(id=f"call_{number}", name=name, arguments=arguments)


def _assistant(
    manager: SessionManager,
    chat: Session,
    text: str,
    *,
    call: ToolCallPart | None = None,
    thinking: str | None = None,
    tokens: tuple[int, int] = (0, 0),
) -> Message:
    parts: list[Part] = [ReasoningPart(thinking)] if thinking else []
    parts.append(TextPart(text))
    parts.extend([call] if call else [])
    message = chat.append(Message(role="assistant", parts=parts))
    # Priced like a mid-size model: $3 per million input tokens, $15 per million output.
    manager.add_usage(chat.id, tokens[0], tokens[1], (tokens[0] * 3 + tokens[1] * 15) / 1e6)
    return message


def _result(chat: Session, call: ToolCallPart, output: str) -> Message:
    return chat.append(Message.tool(call.id, output, name=call.name))


def _build_diagnosis(manager: SessionManager, chat: Session) -> Message:
    """Append the shared start: the task, three tool rounds, and the diagnosis."""
    chat.append(Message.system(_SYSTEM))
    chat.append(Message.user(_ASK))
    chat.update_state({"task": "find why the tests fail after #482", "files_touched": []})
    run = _call(1, "run_tests", path="tests/", args=["-x", "-q"])
    thinking = "Tests broke after a merge: run them first to see which one fails and where."
    _assistant(
        manager,
        chat,
        "I'll run the test suite first.",
        call=run,
        thinking=thinking,
        tokens=(1840, 62),
    )
    _result(chat, run, _TEST_RUN)
    grep = _call(2, "grep", pattern="Decimal|discount.rate", path="src/ tests/")
    _assistant(
        manager,
        chat,
        "A float meets a Decimal. Where does the Decimal come from?",
        call=grep,
        tokens=(2410, 48),
    )
    _result(chat, grep, _GREP)
    read = _call(3, "read_file", path="src/shop/cart.py", start=30, end=42)
    _assistant(manager, chat, "Let me read Cart.total.", call=read, tokens=(2690, 41))
    _result(chat, read, _CART)
    chat.update_state({"files_touched": ["src/shop/cart.py", "src/shop/discount.py"]})
    return _assistant(manager, chat, _DIAGNOSIS, tokens=(3020, 118))


def _build_branches(manager: SessionManager, chat: Session, diagnosis: Message) -> None:
    """Answer the diagnosis, then edit that answer's question: a second branch, now the head."""
    chat.append(Message.user("OK, convert the rate to float in Cart.total and rerun the tests."))
    quick = _call(4, "run_tests", path="tests/", args=["-q"])
    _assistant(
        manager,
        chat,
        "Changed line 41 to use float(self.discount.rate); rerunning.",
        call=quick,
        tokens=(3210, 57),
    )
    _result(chat, quick, "......\n6 passed in 0.40s")
    edited = "Fix it, but keep money in Decimal end to end: no floats in prices."
    chat.append(Message.user(edited), parent=diagnosis.id)
    rerun = _call(5, "run_tests", path="tests/", args=["-q"])
    thinking = "Item.price is a float; make it Decimal so the sum and the discount agree."
    _assistant(
        manager,
        chat,
        "I'll make Item.price a Decimal and sum the cart in Decimal, then rerun the tests.",
        call=rerun,
        thinking=thinking,
        tokens=(3260, 140),
    )
    _result(chat, rerun, "......\n6 passed in 0.44s")
    chat.update_state(
        {
            "status": "fixed",
            "files_touched": ["src/shop/cart.py", "src/shop/discount.py", "src/shop/models.py"],
        }
    )
    _assistant(
        manager,
        chat,
        "All 6 tests pass. Item.price is now a Decimal "
        "(src/shop/models.py:12) and Cart.total() returns a Decimal rounded with "
        'quantize(Decimal("0.01")), so no float ever touches a price.',
        tokens=(3490, 76),
    )


def _build_fork(manager: SessionManager, chat: Session, diagnosis: Message) -> Session:
    """Fork the conversation at the diagnosis and take it somewhere else."""
    fork = manager.fork(chat.id, diagnosis.id, name="demo: regression test first")
    fork.append(Message.user("Before anything is fixed, add a regression test for this."))
    read = _call(6, "read_file", path="tests/test_cart.py", start=20, end=27)
    _assistant(manager, fork, "Let me see the existing cart tests.", call=read, tokens=(3150, 44))
    _result(fork, read, _TEST_FILE)
    _assistant(
        manager,
        fork,
        "Added test_total_with_decimal_rate to tests/test_cart.py: it "
        "fails with the same TypeError today and passes once Cart.total stops mixing "
        "float and Decimal.",
        tokens=(3400, 95),
    )
    fork.update_state({"task": "add a regression test", "files_touched": ["tests/test_cart.py"]})
    manager.end(fork.id, "completed")
    return fork


def build_demo(manager: SessionManager) -> Demo:
    """Build a coding agent's conversation: tool calls, a branch, a fork, state and usage.

    Every call makes new sessions, so running it again never collides with earlier runs.

    Args:
        manager: Where to build it.

    Returns:
        The main session (head on its second branch) and its fork.
    """
    chat = manager.create(
        name="demo: why do the tests fail?",
        model="claude-sonnet-4-5",
        source="sessionary demo",
        metadata={"repo": "~/src/shop"},
    )
    diagnosis = _build_diagnosis(manager, chat)
    _build_branches(manager, chat, diagnosis)
    return Demo(main=chat, fork=_build_fork(manager, chat, diagnosis))
