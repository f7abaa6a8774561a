#!/usr/bin/env python3
"""fake_model.py — a scripted model server for tests (python3 stdlib only).

Listens on 127.0.0.1 on an ephemeral port (printed on stdout as "PORT\\n",
and written to --port-file; with --watch-stdin it exits when its stdin
closes, so a test that dies leaves no server behind) and speaks the
streaming shapes of two wire protocols, as strictly as the real APIs check
requests:

  POST /v1/chat/completions   OpenAI Chat Completions (Authorization: Bearer)
  POST /v1/messages           Anthropic Messages (x-api-key, anthropic-version)

A missing or wrong key is 401, a malformed body or history 400, each with
the API's own error JSON. Every request is appended to --record (one JSON
line: n (the request's number, from 0, every request counted), t (its
time.monotonic() on arrival), reply (the script index it took) or route
(the route that answered it), both null when rejected, method, path,
headers, body) before it is answered. --before-reply CMD runs CMD (sh -c)
with the request body on stdin first; unless it exits 0 the answer is a
500.

--sent-log FILE says what was sent when, for tests that kill the client at
a chosen instant and then ask which part of a stream it had been sent: one
JSON line per write of a streamed reply, appended once the write returned,
{"n": request number, "t": time.monotonic() (CLOCK_MONOTONIC, comparable
across processes on the machine), "data": the bytes written (base64,
without the chunked framing)}, with "head": true for the status line and
headers and "end": true for the body's terminating chunk; a reply that
holds (hold below) adds a line with "hold" and no data when it starts to
wait.

The script (--script FILE, JSON) is {"replies": [REPLY, ...], "routes":
[{"prompt_prefix": P, "reply": REPLY, "after_tool"?: true}, ...]}: a request
whose last user message's (last) text starts with a route's P gets that
route's reply (the first that matches, as often as it matches); a route with
after_tool answers instead a request whose last message carries tool results
(the request after the tools ran), by its latest prompt, so the steps of a
tool loop are routed by the prompt that began it. The Nth other accepted
request gets reply N (a 500 once they run out). A REPLY, every key optional:

  status, headers        an HTTP error (status != 200) with extra headers,
                         e.g. {"status": 429, "headers": {"Retry-After": "2"}}, or a
                         redirect: {"status": 302, "headers": {"Location":
                         "file:///etc/passwd"}, "body": ""};
                         error: {"type", "message", "code"} fills the API's
                         error body; body: a raw body instead
  text                   the reply text, streamed as deltas; pieces: N splits
                         it into N deltas at random character boundaries, or
                         deltas: [..] gives them; raw_deltas: [..] are JSON
                         string contents sent verbatim (e.g. "\\ud83d")
  reasoning, signature   Anthropic thinking block before the text
  tool_calls             [{"id", "name", "arguments" (a JSON text)}], each
                         streamed in argument pieces; no_index: true drops
                         "index" and "id" from OpenAI continuation deltas
  finish_reason          OpenAI (default "stop", "tool_calls" with tools);
  stop_reason            Anthropic (default "end_turn" / "tool_use")
  usage                  {"input": N, "output": M}
  usage_null             OpenAI: "usage": null on every chunk
  comments               SSE comment lines between events
  keepalive_ms,          a comment line (": keep-alive") every keepalive_ms
  keepalive_for_ms,      for keepalive_for_ms, before write number
  keepalive_after        keepalive_after (default 0: before the first event),
                         as a server sends while its model thinks
  stream_error           {"type", "message"}: an error event after the deltas
  split                  "random" (default): the byte stream is written in
                         pieces cut at random offsets (UTF-8 characters
                         split across writes); "event": one write per event;
                         N: pieces of N bytes
  seed                   random seed (default 1)
  rate                   writes per second (default: as fast as possible);
                         with split: 1, a trickle of one byte per write
  stall_before_ms        sleep before the status line
  stall_after_head_ms    sleep after the headers
  stall_ms, stall_after  sleep stall_ms once, after stall_after writes
  hold                   {"at": "head" | "end" | N, "until": DIR}: before
                         the status line, the terminating chunk or the Nth
                         write of the body (from 0), append {"n", "t",
                         "hold": at, "data": ""} to --sent-log and wait
                         until the file DIR/n exists (n the request's
                         number; at most 60 s): a test that kills the
                         client stops the stream at a point it chose and
                         knows when it is there
  disconnect_after       close the connection after that many writes, without
                         ending the chunked body (reset: true sends a RST)
  close_without_response read the request, then close
  omit_end               end cleanly without [DONE] / message_stop
  no_done                OpenAI: the finish_reason (and usage) chunk, no [DONE]
  hold_ms                after the last write, hold the connection open this
                         long before ending the body
  repeat_text            repeat "text" this many times (long streams)
  delta_chars            cut the text into deltas of this many characters
                         (instead of pieces): with split N and no rate, a
                         long answer streamed flat out
"""
import argparse
import base64
import json
import os
import random
import socket
import socketserver
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler

LOCK = threading.Lock()
STATE = {"next": 0, "n": 0}


class Reject(Exception):
    def __init__(self, status, etype, message, code=None, param=None):
        super().__init__(message)
        self.status, self.etype, self.message = status, etype, message
        self.code, self.param = code, param


def is_str(v):
    return isinstance(v, str)


# ---- OpenAI Chat Completions ------------------------------------------------

def openai_error_body(etype, message, code=None, param=None):
    return {"error": {"message": message, "type": etype, "param": param, "code": code}}


def openai_check(headers, body, opts):
    auth = headers.get("authorization", "")
    if opts.openai_key is not None:
        if not auth.startswith("Bearer ") or not auth[7:].strip():
            raise Reject(401, "invalid_request_error",
                         "You didn't provide an API key. You need to provide your API key "
                         "in an Authorization header using Bearer auth.")
        if auth[7:] != opts.openai_key:
            raise Reject(401, "invalid_request_error", "Incorrect API key provided.",
                         code="invalid_api_key")
    if not isinstance(body, dict):
        raise Reject(400, "invalid_request_error", "We could not parse the JSON body of your request.")
    if not is_str(body.get("model")) or not body["model"]:
        raise Reject(400, "invalid_request_error", "you must provide a model parameter", param="model")
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise Reject(400, "invalid_request_error",
                     "[] is too short - 'messages'" if msgs == [] else "'messages' is a required property",
                     param="messages")
    if "tools" in body:
        tools = body["tools"]
        if not isinstance(tools, list) or not tools:
            raise Reject(400, "invalid_request_error", "[] is too short - 'tools'", param="tools")
        for i, t in enumerate(tools):
            fn = t.get("function") if isinstance(t, dict) else None
            if t.get("type") != "function" or not isinstance(fn, dict) or not is_str(fn.get("name")):
                raise Reject(400, "invalid_request_error", f"Invalid 'tools[{i}]'", param=f"tools[{i}]")
    if "stream_options" in body and body.get("stream") is not True:
        raise Reject(400, "invalid_request_error",
                     "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                     param="stream_options")
    pending = []  # tool_call ids an assistant message still waits for
    for i, m in enumerate(msgs):
        where = f"messages[{i}]"
        if not isinstance(m, dict) or m.get("role") not in ("system", "developer", "user", "assistant", "tool"):
            raise Reject(400, "invalid_request_error", f"Invalid value for '{where}.role'", param=where)
        role, content = m["role"], m.get("content")
        if pending and role != "tool":
            raise Reject(400, "invalid_request_error",
                         "An assistant message with 'tool_calls' must be followed by tool messages "
                         "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                         "response messages: " + ", ".join(pending), param="messages")
        if role in ("system", "developer", "user"):
            if not (is_str(content) or (isinstance(content, list) and content)):
                raise Reject(400, "invalid_request_error", f"Invalid type for '{where}.content'", param=where)
        elif role == "assistant":
            calls = m.get("tool_calls")
            if content is None and not calls:
                raise Reject(400, "invalid_request_error",
                             f"Invalid value for '{where}': an assistant message needs content or tool_calls",
                             param=where)
            if content is not None and not (is_str(content) or isinstance(content, list)):
                raise Reject(400, "invalid_request_error", f"Invalid type for '{where}.content'", param=where)
            for j, c in enumerate(calls or []):
                fn = c.get("function") if isinstance(c, dict) else None
                if (not is_str(c.get("id")) or c.get("type") != "function" or not isinstance(fn, dict)
                        or not is_str(fn.get("name")) or not is_str(fn.get("arguments"))):
                    raise Reject(400, "invalid_request_error", f"Invalid '{where}.tool_calls[{j}]'",
                                 param=f"{where}.tool_calls[{j}]")
                pending.append(c["id"])
        else:  # tool
            tid = m.get("tool_call_id")
            if not is_str(tid) or tid not in pending:
                raise Reject(400, "invalid_request_error",
                             "Invalid parameter: messages with role 'tool' must be a response to a "
                             "preceeding message with 'tool_calls'.", param=f"{where}.role")
            if not (is_str(content) or isinstance(content, list)):
                raise Reject(400, "invalid_request_error", f"Invalid type for '{where}.content'", param=where)
            pending.remove(tid)
    if pending:
        raise Reject(400, "invalid_request_error",
                     "An assistant message with 'tool_calls' must be followed by tool messages responding "
                     "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                     + ", ".join(pending), param="messages")


def openai_events(body, r, rng):
    """The SSE events (as bytes) of one streamed reply."""
    model = body.get("model", "fake")
    usage_wanted = bool((body.get("stream_options") or {}).get("include_usage"))
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1700000000,
            "model": model, "system_fingerprint": None}

    def chunk(delta, finish=None, extra=None):
        c = dict(base)
        c["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        if usage_wanted or r.get("usage_null"):
            c["usage"] = None
        if extra:
            c.update(extra)
        return sse(None, c)

    out = [chunk({"role": "assistant", "content": "", "refusal": None})]
    for d in text_deltas(r, rng):
        out.append(chunk({"content": d}) if isinstance(d, str) else raw_openai(base, d))
        if r.get("comments"):
            out.append(b": keep-alive\n\n")
    calls = r.get("tool_calls") or []
    for i, c in enumerate(calls):
        out.append(chunk({"tool_calls": [{"index": i, "id": c["id"], "type": "function",
                                          "function": {"name": c["name"], "arguments": ""}}]}))
        for piece in pieces(c.get("arguments", "{}"), 3, rng):
            tc = {"function": {"arguments": piece}}
            if not r.get("no_index"):
                tc["index"] = i
            out.append(chunk({"tool_calls": [tc]}))
    if r.get("stream_error"):
        e = r["stream_error"]
        out.append(sse(None, openai_error_body(e.get("type", "server_error"), e.get("message", "error"),
                                               e.get("code"))))
        return out
    if r.get("omit_end"):
        return out
    finish = r.get("finish_reason", "tool_calls" if calls else "stop")
    out.append(chunk({}, finish))
    if usage_wanted:
        u = r.get("usage", {"input": 3, "output": 5})
        c = dict(base)
        c["choices"] = []
        c["usage"] = {"prompt_tokens": u["input"], "completion_tokens": u["output"],
                      "total_tokens": u["input"] + u["output"]}
        out.append(sse(None, c))
    if not r.get("no_done"):
        out.append(b"data: [DONE]\n\n")
    return out


def raw_openai(base, raw):
    """A delta whose content is the JSON string text raw["raw"] verbatim."""
    head = dict(base)
    head["choices"] = "@@"
    s = json.dumps(head, ensure_ascii=False).replace(
        '"@@"', '[{"index": 0, "delta": {"content": "' + raw["raw"] + '"}, "finish_reason": null}]')
    return ("data: " + s + "\n\n").encode()


# ---- Anthropic Messages -----------------------------------------------------

def anthropic_error_body(etype, message):
    return {"type": "error", "error": {"type": etype, "message": message}}


def anthropic_check(headers, body, opts):
    key = headers.get("x-api-key")
    if opts.anthropic_key is not None:
        if not key:
            raise Reject(401, "authentication_error", "x-api-key header is required")
        if key != opts.anthropic_key:
            raise Reject(401, "authentication_error", "invalid x-api-key")
    if not headers.get("anthropic-version"):
        raise Reject(400, "invalid_request_error", "anthropic-version: header is required")
    if not isinstance(body, dict):
        raise Reject(400, "invalid_request_error", "The request body is not valid JSON.")
    if not is_str(body.get("model")) or not body["model"]:
        raise Reject(400, "invalid_request_error", "model: Field required")
    mt = body.get("max_tokens")
    if not isinstance(mt, int) or isinstance(mt, bool) or mt < 1:
        raise Reject(400, "invalid_request_error", "max_tokens: Field required" if mt is None
                     else "max_tokens: Input should be greater than or equal to 1")
    system = body.get("system")
    if system is not None and not is_str(system):
        if not isinstance(system, list) or any(not isinstance(b, dict) or b.get("type") != "text"
                                               or not is_str(b.get("text")) for b in system):
            raise Reject(400, "invalid_request_error", "system: Input should be a valid string or list of text blocks")
    if "tools" in body:
        tools = body["tools"]
        if not isinstance(tools, list):
            raise Reject(400, "invalid_request_error", "tools: Input should be a valid list")
        for i, t in enumerate(tools):
            if not isinstance(t, dict) or not is_str(t.get("name")) or not isinstance(t.get("input_schema"), dict):
                raise Reject(400, "invalid_request_error", f"tools.{i}: input_schema: Field required")
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise Reject(400, "invalid_request_error", "messages: Field required" if msgs is None
                     else "messages: at least one message is required")
    prev_tool_uses = []
    for i, m in enumerate(msgs):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            raise Reject(400, "invalid_request_error",
                         f"messages.{i}.role: Input should be 'user' or 'assistant'")
        role, content = m["role"], m.get("content")
        if i == 0 and role != "user":
            raise Reject(400, "invalid_request_error", "messages: first message must use the \"user\" role")
        blocks = ([{"type": "text", "text": content}] if content else []) if is_str(content) else content
        if not isinstance(blocks, list):
            raise Reject(400, "invalid_request_error", f"messages.{i}.content: Input should be a valid list")
        if not blocks and not (role == "assistant" and i == len(msgs) - 1):
            raise Reject(400, "invalid_request_error",
                         f"messages.{i}: all messages must have non-empty content except for the optional "
                         "final assistant message")
        uses, results = [], []
        for j, b in enumerate(blocks):
            t = b.get("type") if isinstance(b, dict) else None
            where = f"messages.{i}.content.{j}"
            if t == "text":
                if not is_str(b.get("text")) or not b["text"]:
                    raise Reject(400, "invalid_request_error",
                                 f"messages.{i}: all messages must have non-empty content except for the "
                                 "optional final assistant message" if is_str(content)
                                 else f"{where}: text content blocks must be non-empty")
            elif t == "tool_use" and role == "assistant":
                if not is_str(b.get("id")) or not is_str(b.get("name")) or not isinstance(b.get("input"), dict):
                    raise Reject(400, "invalid_request_error", f"{where}.tool_use: id, name and input are required")
                uses.append(b["id"])
            elif t == "tool_result" and role == "user":
                if not is_str(b.get("tool_use_id")):
                    raise Reject(400, "invalid_request_error", f"{where}.tool_result.tool_use_id: Field required")
                results.append(b["tool_use_id"])
            elif t == "thinking" and role == "assistant":
                if not is_str(b.get("thinking")) or not is_str(b.get("signature")) or not b["signature"]:
                    raise Reject(400, "invalid_request_error", f"{where}.thinking.signature: Field required")
            elif t == "redacted_thinking" and role == "assistant":
                if not is_str(b.get("data")):
                    raise Reject(400, "invalid_request_error", f"{where}.redacted_thinking.data: Field required")
            elif t == "image" and role == "user":
                pass
            else:
                raise Reject(400, "invalid_request_error", f"{where}: unexpected block type {t!r} for {role}")
        for rid in results:
            if rid not in prev_tool_uses:
                raise Reject(400, "invalid_request_error",
                             f"messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: {rid}. "
                             "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.")
        missing = [u for u in prev_tool_uses if u not in results]
        if missing:
            raise Reject(400, "invalid_request_error",
                         f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately "
                         f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                         "`tool_result` block in the next message.")
        prev_tool_uses = uses
    if prev_tool_uses:
        raise Reject(400, "invalid_request_error",
                     f"messages.{len(msgs) - 1}: `tool_use` ids were found without `tool_result` blocks "
                     f"immediately after: {', '.join(prev_tool_uses)}.")


def anthropic_events(body, r, rng):
    model = body.get("model", "fake")
    u = r.get("usage", {"input": 3, "output": 5})
    out = [sse("message_start", {"type": "message_start", "message": {
        "id": "msg_fake", "type": "message", "role": "assistant", "content": [], "model": model,
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": u["input"], "output_tokens": 1}}})]
    index = 0
    if r.get("reasoning") is not None:
        out.append(sse("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "thinking", "thinking": ""}}))
        for p in pieces(r["reasoning"], 2, rng):
            out.append(sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "thinking_delta", "thinking": p}}))
        out.append(sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": {"type": "signature_delta",
                                                         "signature": r.get("signature", "sig")}}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    deltas = text_deltas(r, rng)
    if deltas:
        out.append(sse("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "text", "text": ""}}))
        out.append(sse("ping", {"type": "ping"}))
        for d in deltas:
            if isinstance(d, str):
                out.append(sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                       "delta": {"type": "text_delta", "text": d}}))
            else:
                out.append(("event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": "
                            f"{index}, \"delta\": {{\"type\": \"text_delta\", \"text\": \"{d['raw']}\"}}}}\n\n").encode())
            if r.get("comments"):
                out.append(b": keep-alive\n\n")
        if r.get("stream_error"):
            e = r["stream_error"]
            out.append(sse("error", anthropic_error_body(e.get("type", "overloaded_error"),
                                                         e.get("message", "Overloaded"))))
            return out
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    elif r.get("stream_error"):
        e = r["stream_error"]
        out.append(sse("error", anthropic_error_body(e.get("type", "overloaded_error"),
                                                     e.get("message", "Overloaded"))))
        return out
    calls = r.get("tool_calls") or []
    for c in calls:
        out.append(sse("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "tool_use", "id": c["id"],
                                                                 "name": c["name"], "input": {}}}))
        for p in pieces(c.get("arguments", "{}"), 3, rng):
            out.append(sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "input_json_delta", "partial_json": p}}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        index += 1
    if r.get("omit_end"):
        return out
    stop = r.get("stop_reason", "tool_use" if calls else "end_turn")
    out.append(sse("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": stop, "stop_sequence": None},
                                     "usage": {"output_tokens": u["output"]}}))
    out.append(sse("message_stop", {"type": "message_stop"}))
    return out


# ---- shared -----------------------------------------------------------------

def sse(event, obj):
    data = json.dumps(obj, ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + data + "\n\n").encode()


def pieces(s, n, rng):
    """s cut into at most n pieces at random character boundaries."""
    if n <= 1 or len(s) < 2:
        return [s] if s else []
    cuts = sorted(rng.sample(range(1, len(s)), min(n - 1, len(s) - 1)))
    out, last = [], 0
    for c in cuts + [len(s)]:
        out.append(s[last:c])
        last = c
    return out


def text_deltas(r, rng):
    if "raw_deltas" in r:
        return [{"raw": d} for d in r["raw_deltas"]]
    if "deltas" in r:
        return list(r["deltas"])
    text = r.get("text")
    if text is None:
        return []
    text = text * int(r.get("repeat_text", 1))
    if "delta_chars" in r:
        n = max(1, int(r["delta_chars"]))
        return [text[i:i + n] for i in range(0, len(text), n)]
    return pieces(text, int(r.get("pieces", max(1, len(text) // 4))), rng)


def cut_stream(events, r, rng):
    """The writes: the events' bytes cut as the script says."""
    split = r.get("split", "random")
    if split == "event":
        return events
    data = b"".join(events)
    if isinstance(split, int):
        return [data[i:i + split] for i in range(0, len(data), split)] or [b""]
    out, i = [], 0
    while i < len(data):
        k = rng.randint(1, 24)
        out.append(data[i:i + k])
        i += k
    return out


def user_text(m):
    """The text of message m when it is the user's (both protocols' shapes:
    a string, or the last of a list of text parts/blocks); None otherwise."""
    if not isinstance(m, dict) or m.get("role") != "user":
        return None
    c = m.get("content")
    if is_str(c):
        return c
    if isinstance(c, list):  # the last text part (the latest prompt of a merged message)
        texts = [b.get("text") for b in c if isinstance(b, dict) and b.get("type") == "text"]
        return texts[-1] if texts and is_str(texts[-1]) else None
    return None


def messages_of(body):
    msgs = body.get("messages") if isinstance(body, dict) else None
    return msgs if isinstance(msgs, list) else []


def last_user_text(body):
    """The text of the last message when it is the user's; None otherwise."""
    msgs = messages_of(body)
    return user_text(msgs[-1]) if msgs else None


def after_tool_prompt(body):
    """When the last message carries tool results (OpenAI: role "tool";
    Anthropic: a user message of tool_result blocks and no text), the
    latest prompt: the text of the last user message that has one."""
    msgs = messages_of(body)
    if not msgs or not isinstance(msgs[-1], dict):
        return None
    m = msgs[-1]
    c = m.get("content")
    results = m.get("role") == "tool" or (m.get("role") == "user" and isinstance(c, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in c))
    if not results or user_text(m) is not None:
        return None
    for m in reversed(msgs):
        t = user_text(m)
        if t is not None:
            return t
    return None


def route_of(script, body):
    """The index of the first route whose prompt_prefix the last user message
    starts with (with after_tool, the latest prompt of a request answering
    tool calls)."""
    text = last_user_text(body)
    after = after_tool_prompt(body)
    for i, rt in enumerate(script.get("routes", [])):
        t = after if rt.get("after_tool") else text
        if t is not None and t.startswith(rt.get("prompt_prefix", "")):
            return i
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-model/1"

    def log_message(self, fmt, *args):  # quiet
        pass

    def do_GET(self):
        self.reply_json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self):
        opts = self.server.opts
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            body = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            body = None
        proto = {"/v1/chat/completions": "openai", "/v1/messages": "anthropic"}.get(self.path.split("?")[0])
        err = openai_error_body if proto == "openai" else anthropic_error_body
        reject = None
        if proto is not None:
            try:
                (openai_check if proto == "openai" else anthropic_check)(headers, body, opts)
            except Reject as e:
                reject = e
        with LOCK:
            # Only a request the API would accept takes a reply: its
            # route's, else the next one.
            idx = route = None
            self.n = STATE["n"]
            STATE["n"] += 1
            if proto is not None and reject is None:
                route = route_of(opts.script, body)
                if route is None:
                    idx = STATE["next"]
                    STATE["next"] += 1
            if opts.record:
                with open(opts.record, "a", encoding="utf-8") as f:
                    f.write(json.dumps({"n": self.n, "t": time.monotonic(), "reply": idx, "route": route, "method": "POST",
                                        "path": self.path, "headers": headers,
                                        "body": body if body is not None else raw.decode("utf-8", "replace")},
                                       ensure_ascii=False) + "\n")
        if proto is None:
            return self.reply_json(404, {"error": {"message": f"unknown path {self.path}", "type": "not_found"}})
        if opts.before_reply:
            rc = subprocess.run(["sh", "-c", opts.before_reply], input=raw).returncode
            if rc != 0:
                return self.reply_json(500, err("api_error", f"before-reply check failed (exit {rc})"))
        if reject is not None:
            e = reject
            b = err(e.etype, e.message) if proto == "anthropic" else openai_error_body(e.etype, e.message, e.code, e.param)
            return self.reply_json(e.status, b)
        if route is not None:
            r = opts.script["routes"][route].get("reply", {})
        else:
            replies = opts.script.get("replies", [])
            r = replies[idx] if idx < len(replies) else None
        if r is None:
            return self.reply_json(500, err("api_error", "fake_model: script exhausted"))
        if r.get("close_without_response"):
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if r.get("stall_before_ms"):
            time.sleep(r["stall_before_ms"] / 1000)
        status = int(r.get("status", 200))
        if status != 200:
            if "body" in r:
                return self.reply_raw(status, r["body"].encode(), "application/json", r.get("headers", {}))
            e = r.get("error", {})
            etype = e.get("type", {429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error"))
            b = err(etype, e.get("message", f"status {status}"))
            if proto == "openai" and e.get("code"):
                b["error"]["code"] = e["code"]
            return self.reply_json(status, b, r.get("headers", {}))
        if body.get("stream") is not True:
            return self.reply_json(400, err("invalid_request_error", "fake_model: only streaming is scripted"))
        rng = random.Random(r.get("seed", 1))
        events = (openai_events if proto == "openai" else anthropic_events)(body, r, rng)
        self.stream(cut_stream(events, r, rng), r)

    def reply_raw(self, status, data, ctype, extra=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (extra or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def reply_json(self, status, obj, extra=None):
        self.reply_raw(status, json.dumps(obj).encode(), "application/json", extra)

    def sent(self, data=b"", **mark):
        """Append one write to --sent-log, after it returned."""
        if not self.server.opts.sent_log:
            return
        line = {"n": self.n, "t": time.monotonic(), "data": base64.b64encode(data).decode()}
        line.update(mark)
        with LOCK, open(self.server.opts.sent_log, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")

    def hold(self, r, at):
        """Wait at point at when the reply holds there (see hold above)."""
        h = r.get("hold")
        if not h or h.get("at") != at:
            return
        self.sent(hold=at)
        release = os.path.join(h["until"], str(self.n))
        end = time.monotonic() + 60
        while not os.path.exists(release) and time.monotonic() < end:
            time.sleep(0.001)

    def stream(self, writes, r):
        try:
            self.hold(r, "head")
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            for k, v in r.get("headers", {}).items():
                self.send_header(k, str(v))
            self.end_headers()
            self.wfile.flush()
            self.sent(head=True)
            if r.get("stall_after_head_ms"):
                time.sleep(r["stall_after_head_ms"] / 1000)
            pause = 1.0 / r["rate"] if r.get("rate") else 0
            for i, w in enumerate(writes):
                if r.get("keepalive_ms") and i == r.get("keepalive_after", 0):
                    self.keepalive(r["keepalive_ms"], r.get("keepalive_for_ms", 0))
                if r.get("disconnect_after") is not None and i == r["disconnect_after"]:
                    self.abort(bool(r.get("reset")))
                    return
                if r.get("stall_ms") and i == r.get("stall_after", 0):
                    time.sleep(r["stall_ms"] / 1000)
                if w:
                    self.hold(r, i)
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(w), w))
                    self.wfile.flush()
                    self.sent(w)
                if pause:
                    time.sleep(pause)
            if r.get("hold_ms"):
                time.sleep(r["hold_ms"] / 1000)
            self.hold(r, "end")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            self.sent(end=True)
        except OSError:  # the client went away
            self.close_connection = True

    def keepalive(self, every_ms, for_ms):
        """Comment lines, every every_ms for for_ms: bytes, no event."""
        end = time.monotonic() + for_ms / 1000
        while time.monotonic() < end:
            w = b": keep-alive\n\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(w), w))
            self.wfile.flush()
            self.sent(w)
            time.sleep(every_ms / 1000)

    def abort(self, reset):
        """Close mid-stream: no terminating chunk. A reset (RST) comes a
        little later, so the client reads what was sent before (a RST
        discards the peer's unread data)."""
        self.close_connection = True
        self.wfile.flush()
        if reset:
            time.sleep(0.2)
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        else:
            self.connection.shutdown(socket.SHUT_RDWR)
        self.connection.close()


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], OSError):  # a client that went away is no error
            super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description="scripted fake model server")
    ap.add_argument("--script", dest="script_path", help="JSON script file")
    ap.add_argument("--record", help="append each request as a JSON line here")
    ap.add_argument("--port-file", help="write the port here too")
    ap.add_argument("--sent-log", help="append each write of a stream (monotonic time, bytes) here")
    ap.add_argument("--before-reply", help="sh -c CMD with the request body on stdin; non-zero exit: 500")
    ap.add_argument("--openai-key", default="sk-test", help="required Bearer key ('' accepts none)")
    ap.add_argument("--anthropic-key", default="ant-test", help="required x-api-key ('' accepts any)")
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), help="serve HTTPS")
    ap.add_argument("--watch-stdin", action="store_true",
                    help="exit when stdin reaches end of file (the test that started us is gone)")
    opts = ap.parse_args()
    if opts.watch_stdin:
        def watch():
            while sys.stdin.buffer.read(4096):
                pass
            os._exit(0)
        threading.Thread(target=watch, daemon=True).start()
    opts.openai_key = opts.openai_key or None
    opts.anthropic_key = opts.anthropic_key or None
    opts.script = {}
    if opts.script_path:
        with open(opts.script_path, encoding="utf-8") as f:
            opts.script = json.load(f)
    srv = Server(("127.0.0.1", 0), Handler)
    srv.opts = opts
    if opts.tls:
        import ssl
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(opts.tls[0], opts.tls[1])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    port = srv.server_address[1]
    if opts.port_file:
        tmp = opts.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        os.rename(tmp, opts.port_file)
    print(port, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
