"""The model request's body: each shared block's JSON kept, the text the SDK itself would send."""

from __future__ import annotations

import json

from demo.scripted import Script, ToolUse, Turn
from tests.inline import Inline, api_of, scripted_model
from workflows.context.assemble import build_request
from workflows.model import request_json
from workflows.model.client import client_for, stream_reply
from workflows.model.request_json import Block, body, dumps
from workflows.models.options import SessionOptions


def _sdk_text(value) -> str:
    # anthropic._utils._json: json.dumps with ensure_ascii=False, compact separators, no NaN.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def test_the_body_is_the_sdks_json_text_byte_for_byte(engine, ws):
    (ws / "a.txt").write_text("é ünïcode \u2028 \"quoted\" \\ tab\t\n")
    model = scripted_model(Script(turns=[Turn(tool_uses=[ToolUse(name="Read", input={"file_path": str(ws / "a.txt")})]),
                                         Turn(text="done")]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "read a.txt, then say 'done'"))
    inline.drain()
    rec = engine.store.get_session(rec.id)
    request = build_request(rec, engine.store.entries(rec.id), 1000)
    assert body(request) == _sdk_text({**request, "stream": True}).encode()
    assert json.loads(body(request))["messages"] == json.loads(_sdk_text(request["messages"]))


def test_a_shared_block_is_encoded_once_across_requests(engine, ws, monkeypatch):
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo"))
    entries_request = build_request(rec, [], 1000)
    tools = entries_request["tools"]
    shared = [t for t in tools if type(t) is Block]
    assert shared, "the tool schemas are shared blocks"
    dumps(entries_request)
    encoded = []
    real = request_json._ENCODER.encode
    monkeypatch.setattr(request_json, "_ENCODER", type("E", (), {"encode": lambda self, v: encoded.append(v) or real(v)})())
    dumps(build_request(rec, [], 1000))
    assert not any(type(v) is Block for v in encoded)  # each shared block's text came from the first request


def test_a_block_is_json_like_any_dict_and_nested_values_are_plain():
    block = Block({"type": "tool_result", "content": [{"type": "text", "text": "x"}], "n": 1.5, "ok": True})
    assert dumps([block, {"k": None}, (), "é"]) == _sdk_text([dict(block), {"k": None}, [], "é"]).encode()
    assert block == dict(block)  # compares as the dict it is


def test_a_model_call_through_the_prepared_body_reaches_the_api_whole(engine, ws, settings):
    model = scripted_model(Script(turns=[Turn(text="hello there")]))
    rec = engine.create_session(str(ws), SessionOptions(model=model))
    request = build_request(rec, [], 100)
    request["messages"] = [{"role": "user", "content": [{"type": "text", "text": "hi ü"}]}]
    texts = []
    reply = stream_reply(client_for(model, settings), request, texts.append)
    assert "".join(texts) == "hello there" and reply.message.content[0].text == "hello there"
    (sent,) = api_of(model).requests
    assert sent["messages"] == request["messages"] and sent["stream"] is True
    assert sent["system"] == json.loads(_sdk_text(request["system"]))
