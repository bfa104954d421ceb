"""Message fields at the edges: exact microsecond times, and a field that is gone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionary import Message
from sessionary.model import from_micros, to_micros

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_OFFSETS = st.timedeltas(min_value=timedelta(hours=-23), max_value=timedelta(hours=23))
_ZONES = st.none() | st.just(UTC) | st.builds(timezone, _OFFSETS)


@given(st.datetimes(timezones=_ZONES))
def test_to_micros_is_exact_over_the_whole_range(moment: datetime) -> None:
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    micros = to_micros(moment)
    assert micros == (aware - _EPOCH) // timedelta(microseconds=1)
    assert from_micros(micros) == aware


def test_a_deleted_field_of_a_message_is_an_attribute_error() -> None:
    message = Message.user("x")
    del message.parts
    with pytest.raises(AttributeError, match="parts"):
        message.parts  # noqa: B018
    assert message.id and message.role == "user"
