#!/usr/bin/env python3
"""test_fake_model.py — the fake model server is itself held to what it
claims: strict like the real APIs (keys, versions, histories, error JSON
shapes), rejected requests take no scripted reply, streams reassemble to
the scripted text with UTF-8 characters split across writes, tool-call
deltas, in-stream errors, Retry-After, the record, --before-reply, the
sent log, a reply held at a point until released, keep-alive comments, a
reply without [DONE] held open, a trickle, a redirect.
Prints TAP; run by tests/cli/test_fake_model.sh."""
import json
import os
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
N = 0
FAILED = False


def check(desc, cond, *why):
    global N, FAILED
    N += 1
    if cond:
        print(f"ok {N} - {desc}")
    else:
        FAILED = True
        print(f"not ok {N} - {desc}")
        for w in why:
            print(f"#   {w}")


class Fake:
    def __init__(self, script, *extra):
        self.dir = tempfile.mkdtemp(prefix="fake-")
        self.record = os.path.join(self.dir, "record.jsonl")
        sp = os.path.join(self.dir, "script.json")
        with open(sp, "w") as f:
            json.dump(script, f)
        self.p = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_model.py"), "--script", sp,
                                   "--record", self.record, "--watch-stdin", *extra],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.port = int(self.p.stdout.readline())

    def stop(self):
        self.p.stdin.close()
        self.p.wait()

    def requests(self):
        if not os.path.exists(self.record):
            return []
        with open(self.record) as f:
            return [json.loads(line) for line in f]

    def raw(self, path, headers, body):
        """(status, headers dict, [chunks]) read off the socket, chunked framing kept apart."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        s = socket.create_connection(("127.0.0.1", self.port))
        head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\nConnection: close\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        s.sendall(head.encode() + data)
        buf = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            buf += b
        s.close()
        top, _, rest = buf.partition(b"\r\n\r\n")
        lines = top.decode().split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = {k.lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:])}
        if hdrs.get("transfer-encoding") != "chunked":
            return status, hdrs, [rest]
        chunks = []
        while rest:
            size, _, rest = rest.partition(b"\r\n")
            n = int(size, 16)
            if n == 0:
                break
            chunks.append(rest[:n])
            rest = rest[n + 2:]
        return status, hdrs, chunks


OA = {"Authorization": "Bearer sk-test"}
AN = {"x-api-key": "ant-test", "anthropic-version": "2023-06-01"}


def events(chunks):
    """SSE (event, data) pairs of a body."""
    out = []
    for block in b"".join(chunks).decode().split("\n\n"):
        if not block.strip():
            continue
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith(":"):
                continue
            k, _, v = line.partition(": ")
            if k == "event":
                name = v
            elif k == "data":
                data.append(v)
        if data:
            out.append((name, "\n".join(data)))
    return out


def main():
    text = "Grüße, 世界! 😀 a reply in pieces"
    f = Fake({"replies": [
        {"text": text, "pieces": 7, "seed": 3},
        {"text": "ok", "tool_calls": [{"id": "call_1", "name": "read_file", "arguments": "{\"path\":\"a b\"}"}]},
        {"status": 429, "headers": {"Retry-After": "7"}, "error": {"message": "quota", "code": "insufficient_quota"}},
        {"text": "partial", "stream_error": {"type": "server_error", "message": "boom"}},
    ]})
    chat = {"model": "m", "stream": True, "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "hi"}]}
    try:
        st, _, ch = f.raw("/v1/chat/completions", {}, chat)
        err = json.loads(b"".join(ch))
        check("openai: no key is 401 with the API's error shape", st == 401 and
              set(err["error"]) == {"message", "type", "param", "code"}, st, err)
        st, _, ch = f.raw("/v1/chat/completions", {"Authorization": "Bearer nope"}, chat)
        check("openai: a wrong key is 401 invalid_api_key",
              st == 401 and json.loads(b"".join(ch))["error"]["code"] == "invalid_api_key")
        st, _, _ = f.raw("/v1/chat/completions", OA, b"{not json")
        check("openai: a malformed body is 400", st == 400)
        bad = dict(chat, messages=[{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}}]},
            {"role": "user", "content": "?"}])
        st, _, ch = f.raw("/v1/chat/completions", OA, bad)
        check("openai: a tool call without its tool message is 400",
              st == 400 and "c1" in json.loads(b"".join(ch))["error"]["message"])
        st, _, _ = f.raw("/v1/chat/completions", OA, dict(chat, messages=[
            {"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "zz", "content": "r"}]))
        check("openai: a tool message without its call is 400", st == 400)
        st, _, _ = f.raw("/v1/chat/completions", OA, dict(chat, tools=[]))
        check("openai: an empty tools list is 400", st == 400)

        st, hd, ch = f.raw("/v1/chat/completions", OA, chat)
        ev = events(ch)
        got = "".join(json.loads(d)["choices"][0]["delta"].get("content", "") for _, d in ev[:-2]
                      if json.loads(d)["choices"])
        check("openai: rejected requests took no reply; the text reassembles",
              st == 200 and got == text, st, got)
        check("openai: usage chunk then [DONE] last",
              ev[-1][1] == "[DONE]" and json.loads(ev[-2][1])["usage"]["completion_tokens"] == 5)
        split = any(c and 0x80 <= c[0] <= 0xBF for c in ch)
        check("the byte stream is cut inside UTF-8 characters", split and len(ch) > 10,
              [c[:4] for c in ch])

        st, _, ch = f.raw("/v1/chat/completions", OA, chat)
        ev = [json.loads(d) for _, d in events(ch)[:-1]]
        args = "".join(tc["function"].get("arguments", "") for e in ev if e["choices"]
                       for tc in e["choices"][0]["delta"].get("tool_calls", []))
        fin = [e["choices"][0]["finish_reason"] for e in ev if e["choices"] and e["choices"][0]["finish_reason"]]
        check("openai: tool-call deltas reassemble, finish_reason tool_calls",
              json.loads(args) == {"path": "a b"} and fin == ["tool_calls"], args, fin)

        st, hd, ch = f.raw("/v1/chat/completions", OA, chat)
        err = json.loads(b"".join(ch))
        check("openai: 429 with Retry-After and insufficient_quota",
              st == 429 and hd.get("retry-after") == "7" and err["error"]["code"] == "insufficient_quota")
        st, _, ch = f.raw("/v1/chat/completions", OA, chat)
        last = json.loads(events(ch)[-1][1])
        check("openai: an error object inside the stream, no [DONE]",
              st == 200 and last["error"]["message"] == "boom")
        st, _, _ = f.raw("/v1/chat/completions", OA, chat)
        check("a 500 once the script runs out", st == 500)
        rec = f.requests()
        check("every request recorded with headers and body, rejected ones with reply null",
              len(rec) == 11 and rec[0]["reply"] is None and rec[6]["reply"] == 0 and
              rec[6]["body"]["model"] == "m" and rec[6]["headers"]["authorization"] == "Bearer sk-test")
    finally:
        f.stop()

    f = Fake({"replies": [
        {"reasoning": "hmm", "signature": "s1", "text": "Hé", "tool_calls": [
            {"id": "toolu_1", "name": "grep", "arguments": "{\"q\":\"x\"}"}], "comments": True},
        {"text": "part", "stream_error": {"type": "overloaded_error", "message": "Overloaded"}},
        {"status": 529},
    ]})
    msg = {"model": "m", "max_tokens": 8, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    try:
        st, _, ch = f.raw("/v1/messages", {"anthropic-version": "2023-06-01"}, msg)
        err = json.loads(b"".join(ch))
        check("anthropic: no x-api-key is 401 authentication_error",
              st == 401 and err == {"type": "error", "error": {"type": "authentication_error",
                                                              "message": "x-api-key header is required"}})
        st, _, _ = f.raw("/v1/messages", {"x-api-key": "ant-test"}, msg)
        check("anthropic: no anthropic-version is 400", st == 400)
        st, _, _ = f.raw("/v1/messages", AN, {k: v for k, v in msg.items() if k != "max_tokens"})
        check("anthropic: no max_tokens is 400", st == 400)
        cases = {
            "a first message from the assistant": [{"role": "assistant", "content": "x"}],
            "a tool_use without its tool_result": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]},
                {"role": "user", "content": "no"}],
            "a tool_result without its tool_use": [
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t9", "content": "r"}]}],
            "a thinking block without its signature": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "t"}, {"type": "text", "text": "a"}]},
                {"role": "user", "content": "go"}],
            "an empty text block": [{"role": "user", "content": [{"type": "text", "text": ""}]}],
            "an empty message before the last": [{"role": "user", "content": ""},
                                                 {"role": "assistant", "content": "x"}],
            "a system role in messages": [{"role": "system", "content": "x"}],
        }
        for desc, msgs in cases.items():
            st, _, ch = f.raw("/v1/messages", AN, dict(msg, messages=msgs))
            body = json.loads(b"".join(ch))
            check(f"anthropic: {desc} is 400 invalid_request_error",
                  st == 400 and body["type"] == "error" and body["error"]["type"] == "invalid_request_error",
                  st, body)
        st, _, ch = f.raw("/v1/messages", AN, msg)
        ev = events(ch)
        names = [n for n, _ in ev]
        check("anthropic: the event sequence of a message",
              names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"] and
              "ping" in names and names.count("content_block_start") == 3 == names.count("content_block_stop"),
              names)
        deltas = [json.loads(d)["delta"] for n, d in ev if n == "content_block_delta"]
        check("anthropic: thinking with its signature, text, tool input deltas",
              "".join(d.get("thinking", "") for d in deltas) == "hmm" and
              [d["signature"] for d in deltas if d["type"] == "signature_delta"] == ["s1"] and
              "".join(d.get("text", "") for d in deltas) == "Hé" and
              json.loads("".join(d.get("partial_json", "") for d in deltas)) == {"q": "x"})
        stop = json.loads(ev[-2][1])["delta"]["stop_reason"]
        check("anthropic: stop_reason tool_use", stop == "tool_use", stop)
        st, _, ch = f.raw("/v1/messages", AN, msg)
        ev = events(ch)
        check("anthropic: an error event inside the stream, no message_stop",
              ev[-1][0] == "error" and json.loads(ev[-1][1])["error"]["type"] == "overloaded_error")
        st, _, ch = f.raw("/v1/messages", AN, msg)
        check("anthropic: 529 overloaded_error",
              st == 529 and json.loads(b"".join(ch))["error"]["type"] == "overloaded_error")
    finally:
        f.stop()

    d = tempfile.mkdtemp(prefix="fake-hook-")
    seen = os.path.join(d, "seen")
    f = Fake({"replies": [{"text": "a"}, {"text": "b"}]},
             "--before-reply", f"cat > {seen}; grep -q '\"allow\"' {seen}")
    try:
        st, _, ch = f.raw("/v1/chat/completions", OA, dict(chat, user="allow"))
        with open(seen) as s:
            got = json.load(s)
        check("--before-reply gets the body on stdin; exit 0 lets the reply go",
              st == 200 and got["user"] == "allow")
        st, _, ch = f.raw("/v1/chat/completions", OA, dict(chat, user="deny"))
        check("--before-reply exiting non-zero makes the answer a 500",
              st == 500 and "before-reply" in json.loads(b"".join(ch))["error"]["message"])
    finally:
        f.stop()
    d = tempfile.mkdtemp(prefix="fake-sent-")
    sent_log = os.path.join(d, "sent.jsonl")
    f = Fake({"replies": [{"text": "in order", "pieces": 2}],
              "routes": [{"prompt_prefix": "slow ", "reply": {"text": "abcdefghij", "pieces": 10,
                                                               "split": "event", "rate": 50}}]},
             "--sent-log", sent_log)
    try:
        import base64
        import time
        t0 = time.monotonic()
        st, _, ch = f.raw("/v1/chat/completions", OA, dict(chat, messages=[{"role": "user", "content": "slow 1"}]))
        t1 = time.monotonic()
        slow_body = b"".join(ch)
        got = "".join(json.loads(d)["choices"][0]["delta"].get("content", "") for _, d in events(ch)[:-2]
                      if json.loads(d)["choices"])
        check("a route answers the prompt its prefix matches", st == 200 and got == "abcdefghij", st, got)
        st, _, ch = f.raw("/v1/messages", AN, dict(msg, messages=[
            {"role": "user", "content": [{"type": "text", "text": "slow 2"}]}]))
        check("... as often as it matches, Anthropic's text blocks too", st == 200 and "abcdefghij" in "".join(
            json.loads(d)["delta"].get("text", "") for n, d in events(ch) if n == "content_block_delta"))
        st, _, ch = f.raw("/v1/chat/completions", OA, chat)
        got = "".join(json.loads(d)["choices"][0]["delta"].get("content", "") for _, d in events(ch)[:-2]
                      if json.loads(d)["choices"])
        check("... and takes no reply from the list: the others get theirs in order", got == "in order", got)
        rec = f.requests()
        check("the record numbers requests and names the route or reply",
              [(r["n"], r["route"], r["reply"]) for r in rec] == [(0, 0, None), (1, 0, None), (2, None, 0)], rec)
        with open(sent_log) as s:
            lines = [json.loads(x) for x in s]
        first = [x for x in lines if x["n"] == 0]
        body = b"".join(base64.b64decode(x["data"]) for x in first)
        ts = [x["t"] for x in first]
        check("--sent-log: head, every write (the body the client read), end, in time order",
              first[0].get("head") and first[-1].get("end") and ts == sorted(ts) and
              t0 <= ts[0] and ts[-1] <= t1 and body == slow_body and
              len(first) == 2 + len(events([body])), first[:3])
        got = "".join(json.loads(d)["choices"][0]["delta"].get("content", "") for _, d in events([body])[:-2]
                      if json.loads(d)["choices"])
        check("... its bytes are the body, paced by the rate (one event per write at 50/s)",
              got == "abcdefghij" and ts[-2] - ts[1] >= 0.9 * (len(first) - 3) / 50, got, ts[-2] - ts[1])
        check("... for every streamed request", sorted({x["n"] for x in lines}) == [0, 1, 2])
    finally:
        f.stop()
    d = tempfile.mkdtemp(prefix="fake-hold-")
    sent_log = os.path.join(d, "sent.jsonl")
    held = {"text": "abc", "pieces": 3, "split": "event"}
    f = Fake({"routes": [{"prompt_prefix": f"{at} ", "reply": dict(held, hold={"at": at, "until": d})}
                         for at in ("head", 1, "end")]}, "--sent-log", sent_log)
    try:
        import threading
        import time
        for n, at in enumerate(("head", 1, "end")):
            got = []
            t = threading.Thread(target=lambda: got.append(f.raw("/v1/chat/completions", OA, dict(
                chat, messages=[{"role": "user", "content": f"{at} {n}"}]))))
            t.start()

            def lines():
                if not os.path.exists(sent_log):
                    return []
                with open(sent_log) as s:
                    return [json.loads(x) for x in s if json.loads(x)["n"] == n]
            end = time.monotonic() + 10
            while not any("hold" in x for x in lines()) and time.monotonic() < end:
                time.sleep(0.01)
            time.sleep(0.2)
            before = lines()
            still = t.is_alive()
            open(os.path.join(d, str(n)), "w").close()
            t.join(10)
            after = lines()
            written = [x for x in after if "hold" not in x]
            where = {"head": 0, 1: 2, "end": len(written) - 1}[at]
            check(f"hold at {at}: a line says so, nothing more is written until the release file exists, "
                  "then the reply goes on whole",
                  still and before[-1].get("hold") == at and len(before) == where + 1 and
                  after.index(before[-1]) == where and got and got[0][0] == 200 and
                  written[0].get("head") and written[-1].get("end"), before, after[-3:], still)
    finally:
        f.stop()
    f = Fake({"replies": [{"text": "from the list"}],
              "routes": [{"prompt_prefix": "loop ", "reply": {"text": "tools"}},
                         {"prompt_prefix": "loop ", "after_tool": True, "reply": {"text": "after"}}]})
    try:
        call = {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}
        oa_after = [{"role": "user", "content": "loop 1"}, {"role": "assistant", "content": None,
                                                            "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": "c1", "content": "out"}]
        use = {"type": "tool_use", "id": "c1", "name": "shell", "input": {}}
        res = {"type": "tool_result", "tool_use_id": "c1", "content": "out"}
        an_after = [{"role": "user", "content": "loop 2"}, {"role": "assistant", "content": [use]},
                    {"role": "user", "content": [res]}]
        an_next = an_after[:2] + [{"role": "user", "content": [res, {"type": "text", "text": "loop 3"}]}]
        f.raw("/v1/chat/completions", OA, dict(chat, messages=oa_after))
        f.raw("/v1/messages", AN, dict(msg, messages=an_after))
        f.raw("/v1/messages", AN, dict(msg, messages=an_next))
        f.raw("/v1/chat/completions", OA, dict(chat, messages=oa_after[:2] + [
            {"role": "tool", "tool_call_id": "c1", "content": "out"}, {"role": "user", "content": "other"}]))
        rec = [(r["route"], r["reply"]) for r in f.requests()]
        check("an after_tool route answers the request after the tools by the prompt that began the loop "
              "(OpenAI, Anthropic); a prompt after results takes the plain route; others the list",
              rec == [(1, None), (1, None), (0, None), (None, 0)], rec)
    finally:
        f.stop()
    f = Fake({"replies": [
        {"text": "thought", "split": "event", "keepalive_ms": 50, "keepalive_for_ms": 400},
        {"text": "ab", "deltas": ["a", "b"], "split": "event", "keepalive_ms": 50, "keepalive_for_ms": 300,
         "keepalive_after": 2},
        {"text": "done", "no_done": True, "hold_ms": 500},
        {"text": "drip", "split": 1, "rate": 200},
        {"status": 302, "headers": {"Location": "ftp://127.0.0.1:21/x"}, "body": ""},
    ]})
    try:
        import time
        t0 = time.monotonic()
        st, _, ch = f.raw("/v1/chat/completions", OA, chat)
        t1 = time.monotonic()
        lead = [c for c in ch[:3]]
        comments = [c for c in ch if c == b": keep-alive\n\n"]
        check("keepalive: comment lines, no event, for keepalive_for_ms before the first event",
              st == 200 and all(c == b": keep-alive\n\n" for c in lead) and len(comments) >= 4 and
              t1 - t0 >= 0.4 and ch[len(comments)].startswith(b"data: "), lead, len(comments), t1 - t0)
        st, _, ch = f.raw("/v1/chat/completions", OA, chat)
        at = [i for i, c in enumerate(ch) if c == b": keep-alive\n\n"]
        check("... after keepalive_after writes: the events before them are whole",
              at and at[0] == 2 and ch[0].startswith(b"data: ") and ch[1].startswith(b"data: ") and
              events(ch[:2])[-1][1].find('"a"') > 0, at)
        t0 = time.monotonic()
        st, _, ch = f.raw("/v1/chat/completions", OA, chat)
        t1 = time.monotonic()
        ev = events(ch)
        fin = [json.loads(d)["choices"][0]["finish_reason"] for _, d in ev if json.loads(d)["choices"]]
        check("no_done: finish_reason stop and the usage chunk, no [DONE]; hold_ms: the body ends that late",
              fin[-1] == "stop" and json.loads(ev[-1][1])["usage"]["completion_tokens"] == 5 and
              all(d != "[DONE]" for _, d in ev) and t1 - t0 >= 0.5, fin, t1 - t0)
        st, _, ch = f.raw("/v1/chat/completions", OA, chat)
        check("split 1 with a rate: a trickle of one byte per write",
              len(ch) > 100 and all(len(c) == 1 for c in ch) and
              "drip" in "".join(json.loads(d)["choices"][0]["delta"].get("content", "")
                                for _, d in events(ch) if d != "[DONE]" and json.loads(d)["choices"]),
              len(ch))
        st, hd, ch = f.raw("/v1/chat/completions", OA, chat)
        check("a redirect: the status and its Location, an empty body",
              st == 302 and hd.get("location") == "ftp://127.0.0.1:21/x" and b"".join(ch) == b"", st, hd)
    finally:
        f.stop()
    print(f"1..{N}")
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()
