"""The live stream's event ids (server/api/stream.py): what a client may send back as Last-Event-ID,
and what the server makes of it."""

from __future__ import annotations

import json

import pytest
from fastapi import HTTPException

from server.api.stream import _entry_event, parse_event_id
from workflows.models import SystemEntry, entry_json


@pytest.mark.parametrize(("value", "expected"), [
    (None, ("0-0", None)),
    ("", ("0-0", None)),
    ("   ", ("0-0", None)),
    ("1700000000000-0", ("1700000000000-0", None)),
    (" 1700000000000-3 ", ("1700000000000-3", None)),
    ("1700000000000-0.0", ("1700000000000-0", 0)),
    ("1700000000000-2.17", ("1700000000000-2", 17)),
    ("0-0", ("0-0", None)),
    (f"{2**64 - 1}-{2**64 - 2}", (f"{2**64 - 1}-{2**64 - 2}", None)),
    (f"{2**64 - 2}-{2**64 - 1}", (f"{2**64 - 2}-{2**64 - 1}", None)),
])
def test_ids_this_stream_sends_are_read_back(value, expected):
    assert parse_event_id(value) == expected


@pytest.mark.parametrize("value", [
    "1700000000000", "1700000000000-", "-0", "1700000000000-0.", "1700000000000-0.-1", "1700000000000-0.1.2",
    "1700000000000-0.1234567", "$", "+", "-", ">", "1700000000000-0\n1-0", "abc-0", "1-0 OR 1=1",
    f"{2**64}-0", f"0-{2**64}", "1" * 21 + "-0", "１-0",
])
def test_anything_else_is_a_400_naming_the_id(value):
    with pytest.raises(HTTPException) as err:
        parse_event_id(value)
    assert err.value.status_code == 400 and "Invalid event id" in err.value.detail


@pytest.mark.parametrize("value", [f"{2**64 - 1}-{2**64 - 1}", f"{2**64 - 1}-{2**64 - 1}.0"])
def test_the_largest_id_is_a_400_as_nothing_can_follow_it(value):
    # Redis refuses "after" it (an exclusive range from it): a 500, and as Last-Event-ID a stream that
    # aborted on every reconnection.
    with pytest.raises(HTTPException) as err:
        parse_event_id(value)
    assert err.value.status_code == 400 and "no entry can come after the largest id" in err.value.detail


def test_a_long_bad_id_is_not_echoed_whole():
    with pytest.raises(HTTPException) as err:
        parse_event_id("x" * 5000)
    assert len(err.value.detail) < 200


def test_entries_of_one_commit_get_dotted_ids_but_the_last():
    ids = [_entry_event("s", "5-1", "{}", i, 3)["id"] for i in range(3)]
    assert ids == ["5-1.0", "5-1.1", "5-1"]
    for i, eid in enumerate(ids[:-1]):  # resuming from a dotted id skips the entries up to it
        assert parse_event_id(eid) == ("5-1", i)
    assert parse_event_id(ids[-1]) == ("5-1", None)  # the whole row was seen


def test_an_entry_event_carries_the_stored_json_unchanged():
    raw = entry_json(SystemEntry(session_id="sid", uuid="u", timestamp="t", content="hi"))
    event = _entry_event("sid", "7-0", raw, 0, 1)
    assert event == {"event": "entry", "id": "7-0", "data": f'{{"session":"sid","id":"7-0","entry":{raw}}}'}


@pytest.mark.parametrize("raw", [b'{"type":"system","sessionId":"sid","content":"\xff"}', '{"type":"user"',
                                 '{"type":"user","n":1}'])
def test_an_entry_that_cannot_be_read_is_sent_as_its_marker(raw):
    event = _entry_event("sid", "7-0", raw, 0, 1)
    entry = json.loads(event["data"])["entry"]
    assert (entry["type"], entry["subtype"]) == ("system", "unreadable")
    assert entry["content"].startswith("Entry 7-0 could not be read: ")
