#!/usr/bin/env python3
"""scripted_llm_server: a TEST DOUBLE of an OpenAI-compatible chat-completions endpoint.

It is not an LLM and calls none: it answers POST .../chat/completions from a script, one step per
request, in order, so that the LLM proposer (workers/proposers/llm/) can be tested on loopback
without any LLM service. Python 3 standard library only.

Usage:
  scripted_llm_server.py --script STEPS.json [--port-file FILE] [--log FILE.jsonl]
                         [--require-key] [--host 127.0.0.1] [--port 0]

The port it listens on (chosen by the system unless --port) is printed as stdout's first line and,
with --port-file, written to FILE (atomically: FILE appears complete or not at all).

STEPS.json is a JSON list; each step answers one request:
  {"content": "..."}                 200 with one choice holding that content
  {"contents": ["...", "..."]}       200 with one choice per string (for requests with `n`)
  {"finish_reason": "length"}        with content(s): the choices' finish_reason (default "stop")
  {"status": 500, "message": "..."}  that HTTP status with {"error": {"message": ...}}
  {"retry_after": 1}                 with status: a Retry-After header, in seconds
  {"hang_s": 30}                     wait that long before answering (then the step's answer, if
                                     any, else a 200 with content "")
  {"close": true}                    close the connection without answering
  {"echo_authorization": true}       put the request's Authorization header into the content or
                                     error message: a careless server, to test redaction
Requests beyond the script get a 500 "script exhausted".

--log FILE.jsonl appends one JSON object per request: {"step", "path", "has_authorization",
"authorization_ok", "body"}; the Authorization value itself is never logged.
--require-key answers 401 unless `Authorization: Bearer <RPL_LLM_API_KEY of this process>`.
"""

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="scripted_llm_server.py",
        description="Test double of an OpenAI-compatible chat-completions endpoint, answering "
        "from a script (see the module docstring for the step format).",
    )
    parser.add_argument("--script", required=True, help="JSON list of steps, one per request")
    parser.add_argument("--port-file", help="write the chosen port here")
    parser.add_argument("--log", help="append each request (JSON lines) here")
    parser.add_argument("--require-key", action="store_true",
                        help="answer 401 unless Authorization is Bearer $RPL_LLM_API_KEY")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port to bind (default: any free one)")
    return parser.parse_args(argv)


def load_script(path):
    try:
        with open(path, encoding="utf-8") as f:
            steps = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"scripted_llm_server: cannot read the script {path}: {e}; "
                 "fix: pass --script with a JSON list of steps")
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        sys.exit(f"scripted_llm_server: {path} must hold a JSON list of objects (steps); "
                 "fix: see the usage in scripted_llm_server.py")
    return steps


class Script:
    def __init__(self, steps, log_path, expected_key):
        self.steps = steps
        self.log_path = log_path
        self.expected_key = expected_key
        self.lock = threading.Lock()
        self.next = 0

    def take(self):
        with self.lock:
            index = self.next
            self.next += 1
        step = self.steps[index] if index < len(self.steps) else None
        return index, step

    def record(self, entry):
        if not self.log_path:
            return
        line = json.dumps(entry) + "\n"
        with self.lock, open(self.log_path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()


def make_handler(script):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "scripted-llm-server/1"

        def log_message(self, format, *args):  # noqa: A002 - the base class's name
            sys.stderr.write("scripted_llm_server: " + (format % args) + "\n")

        def send_json(self, status, payload, extra_headers=()):
            data = json.dumps(payload).encode("utf-8")
            self.close_connection = False
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in extra_headers:
                self.send_header(name, value)
            self.end_headers()
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a hang step outlived its timeout)

        def do_GET(self):  # noqa: N802 - http.server's naming
            if self.path.rstrip("/").endswith("/models"):
                models = [{"id": "scripted", "object": "model"}]
                self.send_json(200, {"object": "list", "data": models})
            else:
                self.send_json(404, {"error": {"message": f"no route GET {self.path}"}})

        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length > 0 else b""
            try:
                body = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                body = None
            authorization = self.headers.get("Authorization")
            authorization_ok = (script.expected_key is not None
                                and authorization == f"Bearer {script.expected_key}")
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self.send_json(404, {"error": {"message": f"no route POST {self.path}"}})
                return
            index, step = script.take()
            script.record({"step": index, "path": self.path,
                           "has_authorization": authorization is not None,
                           "authorization_ok": authorization_ok, "body": body})
            if body is None:
                self.send_json(400, {"error": {"message": "the body is not JSON"}})
                return
            if script.expected_key is not None and not authorization_ok:
                self.send_json(401, {"error": {"message": "missing or wrong API key"}})
                return
            if step is None:
                self.send_json(500, {"error": {"message": f"script exhausted at request {index}"}})
                return
            echo = f" [Authorization: {authorization}]" if step.get("echo_authorization") else ""
            if "hang_s" in step:
                time.sleep(float(step["hang_s"]))
            if step.get("close"):
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if "status" in step and int(step["status"]) != 200:
                message = step.get("message", f"scripted status {step['status']}") + echo
                headers = []
                if "retry_after" in step:
                    headers.append(("Retry-After", str(step["retry_after"])))
                self.send_json(int(step["status"]), {"error": {"message": message}}, headers)
                return
            contents = step.get("contents")
            if contents is None:
                contents = [step.get("content", "")]
            reason = step.get("finish_reason", "stop")
            choices = [{"index": i, "message": {"role": "assistant", "content": c + echo},
                        "finish_reason": reason} for i, c in enumerate(contents)]
            self.send_json(200, {
                "id": f"scripted-{index}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "") if isinstance(body, dict) else "",
                "choices": choices,
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            })

    return Handler


def main(argv):
    args = parse_args(argv)
    steps = load_script(args.script)
    expected_key = None
    if args.require_key:
        expected_key = os.environ.get("RPL_LLM_API_KEY")
        if not expected_key:
            sys.exit("scripted_llm_server: --require-key needs RPL_LLM_API_KEY in the environment; "
                     "fix: set it to the key the client will send")
    script = Script(steps, args.log, expected_key)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(script))
    server.daemon_threads = True  # a hanging step never blocks the exit
    port = server.server_address[1]
    if args.port_file:
        partial = args.port_file + ".partial"
        with open(partial, "w", encoding="utf-8") as f:
            f.write(f"{port}\n")
        os.replace(partial, args.port_file)
    print(port, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
