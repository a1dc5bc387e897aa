"""
Fixtures of the HTTP suite: `pmaxent serve --port 0 --data-dir TMP` started
from PMAXENT_BIN, a client that checks every response against
api-spec/openapi.yaml (apicheck), and helpers to poll analyses.
"""
import http.client
import json as jsonlib
import os
import re
import signal
import subprocess
import time

import pytest

import apicheck
from helpers import pmaxent_bin

LISTENING = re.compile(r"pmaxent: listening on http://(\[[^\]]+\]|[^:/\s]+):(\d+)")
# ASan/valgrind builds are several times slower
SLOW = 4 if os.environ.get("ASAN_OPTIONS") else 1


class Response:
    def __init__(self, status, reason, headers, body):
        self.status, self.reason, self.headers, self.body = status, reason, headers, body

    def json(self):
        return jsonlib.loads(self.body.decode("utf-8"))

    @property
    def text(self):
        return self.body.decode("utf-8")

    def __repr__(self):
        return "<%d %s %r>" % (self.status, self.reason, self.body[:300])


class Server:
    """One `pmaxent serve` process on a free loopback port."""

    def __init__(self, workdir, data_dir, args=()):
        self.workdir, self.data_dir, self.args = str(workdir), str(data_dir), list(args)
        self.log_path = os.path.join(self.workdir, "server-%d.log" % time.monotonic_ns())
        self.proc = None
        self.host = self.port = None

    def start(self, timeout=30 * SLOW):
        env = dict(os.environ)
        # the document the binary serves when it was not embedded at build time
        env.setdefault("PMAXENT_OPENAPI", apicheck.SPEC_PATH)
        cmd = [pmaxent_bin(), "serve", "--port", "0", "--data-dir", self.data_dir] + self.args
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, cwd=self.workdir, env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = LISTENING.search(self.read_log())
            if m:
                self.host, self.port = m.group(1).strip("[]"), int(m.group(2))
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.kill()
        raise RuntimeError("pmaxent serve did not start (%s):\n%s" % (cmd, self.read_log()[-3000:]))

    def read_log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def stop(self, timeout=30 * SLOW):
        """SIGTERM, as a service manager would; returns the exit status."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return "hung"
        finally:
            self.log.close()

    def kill(self):
        """kill -9."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if not self.log.closed:
            self.log.close()


class Client:
    """HTTP/1.1 client that checks each response against the document."""

    def __init__(self, server, spec, token=None):
        self.server, self.spec, self.token = server, spec, token

    def request(self, method, path, body=None, json=None, headers=None, content_type=None,
                check=True, timeout=60 * SLOW):
        headers = dict(headers or {})
        if json is not None:
            body = jsonlib.dumps(json).encode("utf-8")
            content_type = content_type or "application/json"
        if isinstance(body, str):
            body = body.encode("utf-8")
        if content_type:
            headers["Content-Type"] = content_type
        if self.token and "Authorization" not in headers:
            headers["Authorization"] = "Bearer " + self.token
        if body is not None:
            headers["Content-Length"] = str(len(body))
        rsp = self.raw(method, path, headers, [body] if body else [], check=False,
                       timeout=timeout)
        if check:
            self.check(method, path, rsp, headers.get("Content-Type"), body)
        return rsp

    def check(self, method, path, rsp, content_type=None, body=None):
        bare = path.split("?")[0]
        self.spec.check_response(method, bare, rsp.status, rsp.headers, rsp.body)
        if 200 <= rsp.status < 300 and body:
            self.spec.check_request(method, bare, content_type, body)

    def raw(self, method, path, headers, chunks=(), check=True, timeout=60 * SLOW):
        """Headers as given (e.g. a Content-Length announcing a body that is
        never sent, or chunked transfer), then the chunks, then the answer.
        A server may answer before it has read the body (401, 413): the
        answer is read even when sending the rest fails."""
        conn = http.client.HTTPConnection(self.server.host, self.server.port, timeout=timeout)
        try:
            conn.putrequest(method, path, skip_accept_encoding=True)
            if self.token and "Authorization" not in headers:
                conn.putheader("Authorization", "Bearer " + self.token)
            for k, v in headers.items():
                conn.putheader(k, v)
            conn.endheaders()
            chunked = headers.get("Transfer-Encoding") == "chunked"
            try:
                for c in chunks:
                    conn.send(b"%x\r\n%s\r\n" % (len(c), c) if chunked else c)
                if chunked:
                    conn.send(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server answered early; read what it said
            r = conn.getresponse()
            rsp = Response(r.status, r.reason, r.headers, r.read())
        finally:
            conn.close()
        if check:
            self.check(method, path, rsp)
        return rsp

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, **kw):
        return self.request("POST", path, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    # ---- helpers ----------------------------------------------------------

    def upload(self, dataset):
        r = self.post("/v1/datasets", json=dataset)
        assert r.status == 201, r
        return r.json()

    def analyse(self, dataset_id, request=None):
        r = self.post("/v1/datasets/%s/analyses" % dataset_id, json=request or {})
        assert r.status == 202, r
        a = r.json()
        assert r.headers["Location"] == "/v1/analyses/" + a["id"]
        return a

    def wait(self, analysis_id, states=("succeeded", "failed", "cancelled"), timeout=120):
        """Polls (with If-None-Match, as a dashboard would) until the
        analysis reaches one of states; returns it."""
        deadline = time.monotonic() + timeout * SLOW
        etag, last = None, None
        while True:
            h = {"If-None-Match": etag} if etag else {}
            r = self.get("/v1/analyses/" + analysis_id, headers=h)
            if r.status == 304:
                assert r.headers["ETag"] == etag and r.body == b""
            else:
                assert r.status == 200, r
                etag, last = r.headers["ETag"], r.json()
                if last["status"] in states:
                    return last
            assert time.monotonic() < deadline, "analysis %s still %s" % (analysis_id,
                                                                            last["status"])
            time.sleep(0.05)


@pytest.fixture(scope="session")
def spec():
    return apicheck.Spec()


def _start(tmp_path_factory, name, args=()):
    work = tmp_path_factory.mktemp(name)
    return Server(work, work / "data", args).start()


def _stop(server):
    rc = server.stop()
    assert rc == 0, "pmaxent serve exited with %s on SIGTERM; log tail:\n%s" % (
        rc, server.read_log()[-3000:])


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """The main server: small body caps so that 413 is cheap to provoke."""
    s = _start(tmp_path_factory, "main",
               ["--workers", "2", "--max-body", "1000000", "--max-solve-body", "100000"])
    yield s
    _stop(s)


@pytest.fixture(scope="session")
def client(server, spec):
    return Client(server, spec)


@pytest.fixture
def make_server(tmp_path_factory):
    """Starts extra servers (own data dir unless given); stops them after the test."""
    started = []

    def make(args=(), data_dir=None, name="extra"):
        work = tmp_path_factory.mktemp(name)
        s = Server(work, data_dir or (work / "data"), args).start()
        started.append(s)
        return s

    yield make
    for s in started:
        if s.proc.poll() is None:
            _stop(s)


def pytest_terminal_summary(terminalreporter):
    seen = getattr(apicheck, "LAST_SEEN", None)
    if seen:
        terminalreporter.write_line("openapi: %d (method, route, status) combinations checked"
                                    % len(seen))


@pytest.fixture(scope="session", autouse=True)
def _record_seen(spec):
    yield
    apicheck.LAST_SEEN = spec.seen
