"""A local OpenAI-compatible HTTP server for the official `openai` client: chat completions,
the Responses API and embeddings, answering from a table.

The instrumentors under test patch the real `openai` client, so the client must talk HTTP to
something that answers like the API: `tests/fixtures/llm_server.py` serves only chat
completions, while an instrumented RAG app also embeds its query and may use the Responses
API. Replies are looked up by a substring of the request's text (`answers`); usage counts
are derived from the text lengths, with a fixed share of the prompt reported as cached (so
the instrumentor's cache-token attributes are exercised), and `delay_s` makes each call
take measurable time (for stage latencies).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CACHED_SHARE = 4
"""One prompt token in this many is reported as read from the provider's cache."""


@dataclass
class FakeOpenAI:
    """The server's state: the answer table and the requests seen."""

    answers: Mapping[str, str]
    delay_s: float = 0.0
    port: int = 0
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def answer(self, text: str) -> str:
        found = [reply for key, reply in self.answers.items() if key in text]
        if len(found) != 1:
            raise LookupError(f"{len(found)} answers match the request {text[:80]!r}")
        return found[0]

    def handle(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append((path, body))
        time.sleep(self.delay_s)
        model = str(body.get("model") or "fake")
        if path.endswith("/embeddings"):
            return _embeddings(model, body.get("input"))
        if path.endswith("/chat/completions"):
            prompt = "\n".join(_text(m.get("content")) for m in body.get("messages", []))
            return _chat(model, prompt, self.answer(prompt))
        if path.endswith("/responses"):
            prompt = "\n".join((_text(body.get("instructions")), _text(body.get("input"))))
            return _response(model, prompt, self.answer(prompt))
        raise LookupError(f"unknown path {path}")


def _text(content: Any) -> str:
    """The text of a message content: a string, or a list of text parts / input items."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(p.get("text") or p.get("content")) for p in content)
    return ""


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _chat(model: str, prompt: str, reply: str) -> dict[str, Any]:
    prompt_tokens, completion_tokens = _tokens(prompt), _tokens(reply)
    return {
        "id": f"chatcmpl-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": f"{model}-2026-01",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": prompt_tokens // CACHED_SHARE},
        },
    }


def _response(model: str, prompt: str, reply: str) -> dict[str, Any]:
    input_tokens, output_tokens = _tokens(prompt), _tokens(reply)
    return {
        "id": f"resp_{time.monotonic_ns()}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": f"{model}-2026-01",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
            "input_tokens_details": {"cached_tokens": input_tokens // CACHED_SHARE},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _embeddings(model: str, given: Any) -> dict[str, Any]:
    texts = [given] if isinstance(given, str) else list(given or [])
    data = []
    for i, text in enumerate(texts):
        digest = hashlib.sha256(str(text).encode()).digest()
        data.append({"object": "embedding", "index": i, "embedding": [b / 255 for b in digest[:8]]})
    tokens = sum(_tokens(str(t)) for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _handler(state: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            try:
                status, payload = 200, state.handle(self.path.rstrip("/"), body)
            except LookupError as exc:
                status, payload = 400, {"error": {"message": str(exc), "type": "invalid"}}
            data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def serving(answers: Mapping[str, str], delay_s: float = 0.0) -> Iterator[FakeOpenAI]:
    """The server on a free port of 127.0.0.1 for the block."""
    state = FakeOpenAI(answers=answers, delay_s=delay_s)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.port = int(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, name="fake-openai", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
