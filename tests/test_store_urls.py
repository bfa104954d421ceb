"""Every store URL option's value is range-checked (issue 13, defect 7).

The cases are a table per option, for every option of every backend: values accepted
(and parsed to what), values refused with a one-line `InvalidURL`. A new option without
cases here fails `test_every_option_has_cases`.
"""

from __future__ import annotations

import math

import pytest

from sessionary.errors import InvalidURL
from sessionary.stores import urls
from sessionary.stores.urls import parse_store_url

BASES = {
    "memory": "memory://?",
    "sqlite": "sqlite:///x.db?",
    "postgresql": "postgresql://h/db?",
    "mysql": "mysql://h/db?",
    "redis": "redis://h:6379/0?",
}

SECONDS = (
    {"0.5": 0.5, "1": 1.0, "86400": 86400.0},
    ["0", "-5", "-0.1", "nan", "inf", "-inf", "86401", "1e400", "soon", "", "1s"],
)
COUNT = ({"1": 1, "10": 10}, ["0", "-1", "1.5", "1e3", "x", ""])
CASES: dict[str, tuple[dict[str, object], list[str]]] = {
    "busy_timeout": SECONDS,
    "connect_timeout": SECONDS,
    "timeout": SECONDS,
    "pool_size": COUNT,
    "max_message_bytes": COUNT,
    "max_messages": COUNT,
    "durability": ({"full": "full", "normal": "normal"}, ["maybe", "FULL", "off", ""]),
    "schema": ({"s1": "s1", "_x": "_x"}, ["", "a;drop", "1abc", "a b", "a" * 64]),
    "namespace": ({"ns": "ns", "a.b:c-d_e": "a.b:c-d_e"}, ["", "a b", "a/b", "x" * 201]),
    "snapshot_frequency": ({"0": 0, "25": 25}, ["-1", "x", "1.5", ""]),
    "ttl": ({"1": 1.0, "3e9": 3e9}, ["0", "-1", "nan", "inf", "4e9", "x", ""]),
    "migrate": (
        {"false": False, "true": True, "0": False, "1": True, "Off": False},
        ["", "maybe", "2", "f"],
    ),
    "pgbouncer": ({"true": True, "false": False, "yes": True}, ["", "transaction", "2"]),
    "unix_socket": ({"/run/mysqld/mysqld.sock": "/run/mysqld/mysqld.sock"}, ["", "a\0b"]),
    "ssl_mode": (
        {mode: mode for mode in ("disabled", "preferred", "required", "verify_identity")},
        ["", "REQUIRED", "on", "verify-ca"],
    ),
    "ssl_ca": ({"/etc/ca.pem": "/etc/ca.pem", "ca.pem": "ca.pem"}, ["", "a\0b"]),
    "ssl_cert": ({"/etc/client.pem": "/etc/client.pem"}, ["", "a\0b"]),
    "ssl_key": ({"/etc/client.key": "/etc/client.key"}, ["", "a\0b"]),
}

OPTIONS = [(scheme, name) for scheme, options in urls._OPTIONS.items() for name in options]


def test_every_option_has_cases() -> None:
    assert {name for _, name in OPTIONS} == set(CASES)


@pytest.mark.parametrize(("scheme", "name"), OPTIONS, ids=[f"{s}-{n}" for s, n in OPTIONS])
def test_good_values_parse(scheme: str, name: str) -> None:
    for text, value in CASES[name][0].items():
        assert parse_store_url(f"{BASES[scheme]}{name}={text}").options == {name: value}


@pytest.mark.parametrize(("scheme", "name"), OPTIONS, ids=[f"{s}-{n}" for s, n in OPTIONS])
def test_bad_values_are_refused_in_one_line(scheme: str, name: str) -> None:
    for text in CASES[name][1]:
        with pytest.raises(InvalidURL) as caught:
            parse_store_url(f"{BASES[scheme]}{name}={text}")
        message = str(caught.value)
        assert "\n" not in message and name in message, message


@pytest.mark.parametrize("scheme", BASES)
def test_an_option_given_twice_is_refused(scheme: str) -> None:
    name, (good, _) = next((n, CASES[n]) for n in urls._OPTIONS[scheme])
    text = next(iter(good))
    with pytest.raises(InvalidURL, match="twice"):
        parse_store_url(f"{BASES[scheme]}{name}={text}&{name}={text}")


@pytest.mark.parametrize("scheme", BASES)
def test_an_option_of_another_backend_is_refused(scheme: str) -> None:
    other = "durability" if scheme != "sqlite" else "pool_size"
    with pytest.raises(InvalidURL, match="unknown store option"):
        parse_store_url(f"{BASES[scheme]}{other}=1")


@pytest.mark.parametrize(
    ("value", "problem"),
    [(1, None), (0.25, None), (86400, None), (0, "more than 0"), (-1, "more than 0"),
     (math.nan, "more than 0"), (math.inf, "more than 0"), (True, "number"), ("5", "number")],
)  # fmt: skip
def test_seconds_problem(value: object, problem: str | None) -> None:
    found = urls.seconds_problem(value)
    assert found is None if problem is None else problem in (found or "")
