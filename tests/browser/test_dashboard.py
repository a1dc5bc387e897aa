#!/usr/bin/env python3
"""The dashboard (GET /) in a real browser: Debian's chromium, headless,
driven through its DevTools protocol. A user uploads Figure 1 as CSV,
starts an analysis with a Top-(1, 1) bound, waits for it, opens the
report, starts a sweep and sees its chart; then, with access control on, the page asks for the token, keeps
it in session storage and lists the datasets. Saves a screenshot of each
(PMAXENT_SCREENSHOTS, a directory; default the test's temporary one) for
a person to look at. Exit 77 (skipped) without chromium."""
import html.parser
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import websocket

BIN = os.environ["PMAXENT_BIN"]
DATA = os.environ["PMAXENT_TEST_DATA"]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def serve(data_dir, *extra):
    p = subprocess.Popen([BIN, "serve", "--port", "0", "--data-dir", data_dir, *extra],
                         stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    assert "listening on" in line, line
    return p, line.strip().rsplit(":", 1)[1]


class Browser:
    """One headless chromium page, spoken to over the DevTools protocol."""

    def __init__(self, tmp):
        port = free_port()
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-port=%d" % port, "--user-data-dir=" + tmp,
             "--window-size=1200,1600", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                pages = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port))
                url = [p for p in pages if p["type"] == "page"][0]["webSocketDebuggerUrl"]
                break
            except Exception:
                time.sleep(0.1)
        else:
            raise RuntimeError("chromium did not start")
        self.ws = websocket.create_connection(url, timeout=30)
        self.n = 0

    def send(self, method, **params):
        self.n += 1
        self.ws.send(json.dumps({"id": self.n, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.n:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg["result"]

    def js(self, expr):
        r = self.send("Runtime.evaluate", expression=expr, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def wait(self, expr, what, seconds=60):
        end = time.time() + seconds
        while time.time() < end:
            if self.js(expr):
                return
            time.sleep(0.1)
        raise AssertionError("timed out waiting for " + what + "; message: " +
                             str(self.js("document.getElementById('message').textContent")))

    def open(self, url):
        self.send("Page.navigate", url=url)
        self.wait("document.readyState === 'complete' && !!document.getElementById('upload')",
                  "the page")

    def screenshot(self, path):
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        import base64
        with open(path, "wb") as f:
            f.write(base64.b64decode(data["data"]))
        print("screenshot:", path)

    def close(self):
        self.ws.close()
        self.proc.terminate()
        self.proc.wait()


VOID = {"meta", "br", "hr", "img", "link", "input", "col", "area", "base", "source"}


def balanced(text):
    """Are the page's elements properly nested and closed (void and
    self-closed ones aside)? What `validates as HTML` checks here."""

    class P(html.parser.HTMLParser):
        def __init__(self):
            super().__init__()
            self.stack, self.ok = [], True

        def handle_starttag(self, tag, attrs):
            if tag not in VOID:
                self.stack.append(tag)

        def handle_startendtag(self, tag, attrs):
            pass

        def handle_endtag(self, tag):
            if not self.stack or self.stack.pop() != tag:
                self.ok = False

    p = P()
    p.feed(text)
    p.close()
    return p.ok and not p.stack and text.lstrip().lower().startswith("<!doctype html>")


def click_through(b, base, shots):
    page = urllib.request.urlopen(base + "/").read().decode()
    assert balanced(page), "the dashboard's HTML is not well nested"
    b.open(base + "/")
    csv = open(os.path.join(DATA, "figure1.csv")).read()
    b.js("""(() => { const dt = new DataTransfer();
        dt.items.add(new File([%s], 'figure1.csv', {type: 'text/csv'}));
        document.getElementById('file').files = dt.files;
        document.getElementById('sa').value = 'disease';
        document.getElementById('group').value = 'group';
        document.getElementById('upload-button').click(); })()""" % json.dumps(csv))
    b.wait("document.querySelectorAll('#datasets tbody tr').length === 1", "the dataset")
    assert "figure1" in b.js("document.querySelector('#datasets tbody').innerText")
    b.js("""(() => { const row = document.querySelector('#datasets tbody tr');
        row.querySelector('.kpos').value = 1; row.querySelector('.kneg').value = 1;
        row.querySelector('.analyse').click(); })()""")
    b.wait("[...document.querySelectorAll('#analyses tbody tr')].some(r => "
           "r.innerText.includes('succeeded'))", "the analysis to succeed")
    b.js("document.querySelector('.open-report').click()")
    b.wait("(() => { const f = document.getElementById('report'); return !f.hidden && "
           "f.contentDocument && f.contentDocument.body && "
           "f.contentDocument.body.innerText.includes('Verdict'); })()", "the report")
    text = b.js("document.getElementById('report').contentDocument.body.innerText")
    assert "Privacy report: figure1" in text and "records" in text, text[:500]
    assert balanced(b.js("document.getElementById('report').srcdoc")), "the report's HTML"
    b.screenshot(os.path.join(shots, "dashboard.png"))
    # a sweep: its chart shown, growing to every point
    b.js("(() => { const row = document.querySelector('#datasets tbody tr');"
         " row.querySelector('.ks').value = '0,1,2';"
         " row.querySelector('.sweep').click(); })()")
    b.wait("[...document.querySelectorAll('#sweeps tbody tr')].some(r => "
           "r.innerText.includes('succeeded') && r.innerText.includes('9 of 9'))",
           "the sweep to succeed")
    b.wait("(() => { const c = document.getElementById('chart'); return !c.hidden && "
           "!!c.querySelector('svg') && c.innerText.includes('mixed'); })()", "the sweep's chart")
    b.js("document.getElementById('chart').scrollIntoView()")
    b.screenshot(os.path.join(shots, "dashboard-sweep.png"))


def with_token(b, base, shots):
    b.open(base + "/")
    b.wait("!document.getElementById('token-form').hidden", "the token form")
    b.js("""(() => { document.getElementById('token').value = 'sesame-sesame-sesame';
        document.querySelector('#token-form button').click(); })()""")
    b.wait("document.getElementById('token-form').hidden && "
           "sessionStorage.getItem('pmaxent-token') === 'sesame-sesame-sesame'", "the token kept")
    time.sleep(1.5)  # a poll with the token
    assert "token" not in b.js("document.getElementById('message').textContent")
    b.screenshot(os.path.join(shots, "dashboard-token.png"))


def main():
    if not CHROMIUM:
        print("skipped: no chromium (scripts/deps installs it)")
        return 77
    tmp = tempfile.mkdtemp()
    shots = os.environ.get("PMAXENT_SCREENSHOTS", tmp)
    servers, b = [], None
    try:
        srv, port = serve(os.path.join(tmp, "open"))
        servers.append(srv)
        b = Browser(os.path.join(tmp, "chromium"))
        click_through(b, "http://127.0.0.1:" + port, shots)
        tokens = os.path.join(tmp, "tokens")
        with open(tokens, "w") as f:
            f.write("sesame-sesame-sesame alice\n")
        os.chmod(tokens, 0o600)
        srv, port = serve(os.path.join(tmp, "closed"), "--token-file", tokens)
        servers.append(srv)
        with_token(b, "http://127.0.0.1:" + port, shots)
    finally:
        if b:
            b.close()
        for s in servers:
            s.terminate()
            s.wait()
    print("dashboard: upload, analysis, report and the token, in chromium")
    return 0


if __name__ == "__main__":
    sys.exit(main())
