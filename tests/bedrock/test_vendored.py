"""minagent-bedrock vendored alone beside a copy of the core, on the standard library
only (PV-1, PV-41, PV-43, BR-13, BR-16, BR-21).

``minagent/`` and ``minagent_bedrock/`` are copied under ``myapp/_vendor/``; a
subprocess run with ``python -I -S`` (no site-packages: no aiohttp, no botocore) serves
Converse and ConverseStream on 127.0.0.1 with ``http.server`` in a thread and asks the
vendored client in both modes. The server checks the SigV4 signature with the vendored
signer's canonical request rebuilt from what arrived (the signature itself is checked
against botocore in test_sigv4 and test_sdk_parity).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "plugins" / "bedrock" / "minagent_bedrock"

SCRIPT = r"""
import asyncio, datetime, json, os, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from myapp._vendor.minagent import Message
from myapp._vendor.minagent_bedrock import BedrockChatClient, Credentials, encode_message, sign_headers

CREDS = Credentials("AKIDVENDOR", "vendor-secret")
SEEN = []


def event(kind, payload):
    headers = {":event-type": kind, ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, json.dumps(payload).encode())


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        signed = self.headers["Authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
        headers = {n: self.headers[n] for n in signed if n not in ("host", "x-amz-date")}
        when = datetime.datetime.strptime(self.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ")
        url = f"http://{self.headers['Host']}{self.path}"
        again = sign_headers("POST", url, headers, body, credentials=CREDS, region="us-east-1",
                             now=when.replace(tzinfo=datetime.timezone.utc))
        SEEN.append({"path": self.path, "valid": again["Authorization"] == self.headers["Authorization"]})
        if self.path.endswith("/converse-stream"):
            data = b"".join([
                event("messageStart", {"role": "assistant"}),
                event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hello "}}),
                event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "vendored."}}),
                event("contentBlockStop", {"contentBlockIndex": 0}),
                event("messageStop", {"stopReason": "end_turn"}),
                event("metadata", {"usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}}),
            ])
            content_type = "application/vnd.amazon.eventstream"
        else:
            data = json.dumps({
                "output": {"message": {"role": "assistant", "content": [{"text": "Hello vendored."}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3},
            }).encode()
            content_type = "application/json"
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


async def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = BedrockChatClient(
        "amazon.nova-lite-v1:0", region="us-east-1", base_url=f"http://127.0.0.1:{server.server_port}",
        aws_access_key_id=CREDS.access_key, aws_secret_access_key=CREDS.secret_key, api_key="",
    )
    texts = []
    async with client:
        plain = await client.get_response([Message("user", ["Hi"])])
        texts.append(plain.text)
        streamed = await client.get_response([Message("user", ["Hi"])], stream=True).get_final_response()
        texts.append(streamed.text)
        transport = type(client.signing.inner)
    server.shutdown()
    unwanted = ("aiohttp", "yarl", "botocore", "minagent", "minagent_bedrock")
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in unwanted)
    print(json.dumps({
        "texts": texts,
        "seen": SEEN,
        "transport": f"{transport.__module__}.{transport.__name__}",
        "loaded": loaded,
        "path": sys.path,
    }))


asyncio.run(main())
"""


def test_vendored_alone_on_the_standard_library(tmp_path: Path) -> None:
    """PV-41, PV-43, BR-21: vendored beside a copy of the core and run without
    site-packages, the client picks StdlibTransport, signs every request (both paths),
    reads Converse and ConverseStream; no aiohttp, botocore or top-level minagent is
    loaded."""
    vendor = tmp_path / "app" / "myapp" / "_vendor"
    vendor.mkdir(parents=True)
    (vendor.parent / "__init__.py").write_text("")
    (vendor / "__init__.py").write_text("")
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "minagent", vendor / "minagent", ignore=ignore)
    shutil.copytree(PACKAGE, vendor / "minagent_bedrock", ignore=ignore)
    script = tmp_path / "app" / "check.py"
    script.write_text(SCRIPT)
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "PYTHONPATH"
        and not k.lower().endswith("_proxy")
        and not k.startswith("AWS_")
    }
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(script)],
        cwd=script.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["texts"] == ["Hello vendored.", "Hello vendored."]
    assert [s["path"] for s in report["seen"]] == [
        "/model/amazon.nova-lite-v1:0/converse",
        "/model/amazon.nova-lite-v1:0/converse-stream",
    ]
    assert all(s["valid"] for s in report["seen"])
    assert (
        report["transport"] == "myapp._vendor.minagent.providers.stdlib.StdlibTransport"
    )
    assert report["loaded"] == []
    assert all("site-packages" not in p for p in report["path"])


def test_only_the_locator_names_the_core_and_nothing_imports_aiohttp() -> None:
    """PV-43, PV-1: every module of minagent_bedrock imports the core through
    ``_minagent`` only, and none imports aiohttp outside TYPE_CHECKING."""
    modules = sorted(PACKAGE.glob("*.py"))
    assert len(modules) >= 8
    for path in modules:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        guarded = {
            id(node)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
            for node in ast.walk(block)
        }
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if id(node) not in guarded:
                    assert top != "aiohttp", (path.name, name)
                if path.name != "_minagent.py":
                    assert top != "minagent", (path.name, name)
