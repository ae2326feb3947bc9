"""Every attribute key the decoders read is declared (`DECLARED` of its convention), so the
connect-your-app page generated from the declarations cannot drift from the code.

Statically: every string literal of a decoder module that looks like an attribute key
must be a declared key (or a prefix of one, or a declared event's name). Dynamically: the
keys the conventions actually read (`RecordingAttrs`, what `ragpulse inspect` calls used)
from real SDK spans of every convention match a declared key's pattern.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from collector.ingest.decode.conventions.attributes import Declared
from collector.ingest.decode.conventions.registry import DECLARED
from collector.ingest.decode.otlp_mapping import RESOURCE_ATTRIBUTES
from collector.ingest.otlp_inspect import inspect_messages
from ragpulse.docs import attributes_page, site
from tests.collector.otlp_traces import genai_llm_span, proto_message, rag_spans

DECODE = Path(__file__).resolve().parents[2] / "collector" / "ingest" / "decode"
RESOURCE = Declared("resource", "resource", "", RESOURCE_ATTRIBUTES)
READERS = {
    "conventions/plain.py": DECLARED["ragpulse"],
    "conventions/openinference.py": DECLARED["openinference"],
    "conventions/openllmetry.py": DECLARED["openllmetry"],
    "conventions/db_results.py": DECLARED["openllmetry"],
    "conventions/genai.py": DECLARED["genai"],
    "evaluations.py": DECLARED["genai"],
    "otlp_details.py": DECLARED["genai"],
    "otlp_logs.py": DECLARED["genai"],
    "otlp_mapping.py": RESOURCE,
}
"""Decoder module -> the declaration its attribute keys belong to."""
KEY = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z0-9_]+)*\.?")


def _key_literals(path: Path) -> set[str]:
    """String constants that look like dotted attribute keys, docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and "." in node.value
        and KEY.fullmatch(node.value)
    }


def _names(declared: Declared) -> set[str]:
    """The declared keys and the names of the events / records they are on."""
    keys = {a.key for a in declared.attributes}
    return keys | {a.on.partition(":")[2] for a in declared.attributes if ":" in a.on}


def _covered(literal: str, names: Iterable[str]) -> bool:
    """A declared name, or (a prefix ending with a dot) the start or a part of one."""
    for name in names:
        if literal == name:
            return True
        if literal.endswith(".") and (name.startswith(literal) or f".{literal}" in name):
            return True
    return False


@pytest.mark.parametrize("module", sorted(READERS))
def test_every_key_a_decoder_reads_is_declared(module: str) -> None:
    declared = READERS[module]
    names = _names(declared)
    literals = _key_literals(DECODE / module)
    if module.startswith("conventions/"):
        assert literals, module  # the scan finds the keys it should
    undeclared = sorted(
        lit for lit in literals if lit not in declared.not_keys and not _covered(lit, names)
    )
    assert undeclared == [], f"{module} reads keys its DECLARED does not list: {undeclared}"


def test_no_other_decoder_module_reads_attribute_keys() -> None:
    """A new module reading span attributes must be added to READERS (and declare them);
    the JSON trace's modules read paths of a JSON object, no attributes."""
    otlp = [*DECODE.glob("conventions/*.py"), *DECODE.glob("otlp*.py"), *DECODE.glob("re*.py")]
    otlp += [DECODE / "completeness.py", DECODE / "evaluations.py"]
    for path in sorted(otlp):
        name = str(path.relative_to(DECODE))
        if name in READERS:
            continue
        found = _key_literals(path)
        assert not found, f"{name} has attribute-like keys {sorted(found)}: declare them"


def test_the_scan_would_catch_an_undeclared_key() -> None:
    names = _names(DECLARED["genai"])
    assert not _covered("gen_ai.agent.id", names)
    assert _covered("gen_ai.usage.", names) and _covered("gen_ai.retrieval.documents", names)


def _pattern(key: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[ij]\}|<name>|<key>|\*)", key)
    return re.compile(
        "".join(
            r"\d+"
            if p in ("{i}", "{j}")
            else ".+"
            if p in ("<name>", "<key>", "*")
            else re.escape(p)
            for p in parts
        )
    )


def _openllmetry_spans() -> list[ReadableSpan]:
    """A Traceloop-shaped workflow > retriever > LLM trace (0.17–0.54 flattened prompt)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("opentelemetry.instrumentation.langchain")
    assoc = "traceloop.association.properties."
    with tracer.start_as_current_span(
        "RunnableSequence.workflow",
        attributes={
            "traceloop.span.kind": "workflow",
            "traceloop.workflow.name": "RunnableSequence",
            "traceloop.entity.input": json.dumps({"inputs": {"question": "Q?"}}),
            "traceloop.entity.output": json.dumps({"outputs": "A."}),
            f"{assoc}session_id": "s1",
            f"{assoc}user_id": "u1",
            f"{assoc}tenant": "acme",
        },
    ):
        with tracer.start_as_current_span(
            "vector_db_retrieve retriever",
            attributes={
                "gen_ai.operation.name": "vector_db_retrieve",
                "traceloop.entity.output": json.dumps(
                    {"documents": [{"page_content": "x", "metadata": {"id": "d1"}}]}
                ),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "ChatOpenAI.chat",
            attributes={
                "llm.request.type": "chat",
                "gen_ai.prompt.0.role": "user",
                "gen_ai.prompt.0.content": "Q?",
                "gen_ai.completion.0.role": "assistant",
                "gen_ai.completion.0.content": "A.",
                "llm.usage.total_tokens": 12,
            },
        ):
            pass
    provider.shutdown()
    return list(exporter.get_finished_spans())


def test_every_key_read_from_real_spans_matches_a_declared_pattern() -> None:
    patterns = [
        _pattern(a.key)
        for declared in DECLARED.values()
        for a in declared.attributes
        if a.on == "span"
    ]
    messages = [
        ("oi", proto_message(rag_spans())),
        ("genai", proto_message(genai_llm_span())),
        ("traceloop", proto_message(_openllmetry_spans())),
    ]
    found = inspect_messages(messages)
    used = {key for trace in found.traces for span in trace.spans for key in span.used}
    assert {"retrieval.documents.0.document.id", "gen_ai.usage.input_tokens"} <= used
    assert "traceloop.association.properties.tenant" in used
    undeclared = sorted(k for k in used if not any(p.fullmatch(k) for p in patterns))
    assert undeclared == []


def test_the_page_shows_the_documents_shape_and_is_current() -> None:
    page = (site.DOCS / attributes_page.PAGE).read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| `gen_ai.retrieval.documents`")]
    assert len(rows) == 1
    assert (
        '`{"id": str\\|int, "score": number, "content": str, "text": str, "url": str}`' in rows[0]
    )
    for declared in DECLARED.values():
        assert f"### {declared.title} (`{declared.name}`)" in page
        for attribute in declared.attributes:
            assert f"| `{attribute.key}` |" in page, attribute.key
    assert attributes_page.render(page) == page, "run `python -m ragpulse.docs`"
    with pytest.raises(ValueError, match="lacks the markers"):
        attributes_page.render("# a page without them\n")


README = DECODE.parents[2] / "README.md"
PREFIXES = (
    "gen_ai.", "llm.", "retrieval.", "reranker.", "traceloop.", "db.", "session.", "user.",
    "enduser.", "ragpulse.", "tag.", "input.", "output.", "embedding.",
)  # fmt: skip


def _expand(name: str) -> list[str]:
    """`a.{b,c}` -> `a.b`, `a.c`; `x\\|y` and `input/output` alternatives likewise."""
    name = name.replace("\\|", ",").replace("|", ",")
    found = re.search(r"\{([^{}]*,[^{}]*)\}", name)
    if found:
        head, tail = name[: found.start()], name[found.end() :]
        return [x for alt in found.group(1).split(",") for x in _expand(head + alt + tail)]
    slash = re.search(r"(\w+)/(\w+)", name)
    if slash:
        head, tail = name[: slash.start()], name[slash.end() :]
        return _expand(head + slash.group(1) + tail) + _expand(head + slash.group(2) + tail)
    return [name]


def _normal(key: str) -> str:
    key = re.sub(r"\{[ij]\}|(?<=\.)N(?=\.|$)", "N", key)
    return re.sub(r"<\w+>", "*", key)


def _agrees(name: str, keys: set[str]) -> bool:
    """A README name is a declared key, a prefix of one (`llm.input_messages`), a key with
    a path into its JSON value (`...document.metadata.url`), or a wildcard over some."""
    pattern = re.compile(".+".join(map(re.escape, name.split("*"))))
    return any(
        k == name or k.startswith(name + ".") or name.startswith(k + ".") or pattern.fullmatch(k)
        for k in keys
    )


def test_the_readme_instrumentation_table_names_only_declared_keys() -> None:
    text = README.read_text(encoding="utf-8")
    table = text.split("[start:instrumentation]", 1)[1].split("[end:instrumentation]", 1)[0]
    declared = [*DECLARED.values(), RESOURCE]
    keys = {_normal(name) for d in declared for name in _names(d)}
    names = {
        _normal(n)
        for span in re.findall(r"`([^`]+)`", table)
        if span.startswith(PREFIXES)
        for n in _expand(span)
    }
    assert len(names) > 30
    unknown = sorted(n for n in names if not _agrees(n, keys))
    assert unknown == [], "README names keys no convention declares (or reads)"
