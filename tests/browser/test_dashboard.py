#!/usr/bin/env python3
"""The dashboard (GET /) in a real browser: Debian's chromium, headless,
driven through its DevTools protocol. A user uploads Figure 1 as CSV,
starts an analysis with a Top-(1, 1) bound, waits for it, opens the
report, starts a sweep and sees its chart; then, with access control on, the page asks for the token, keeps
it in session storage and lists the datasets. All of it under the
page's Content-Security-Policy: the console reports no violation (and
does report one provoked on purpose), the report is in a sandboxed frame
of its own origin, the chart is an image. Saves a screenshot of each
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
        self.events = []
        self.send("Log.enable")
        self.send("Runtime.enable")

    def send(self, method, session=None, **params):
        self.n += 1
        msg = {"id": self.n, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        while True:
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self.events.append(msg)
            if msg.get("id") == self.n:
                if "error" in msg:
                    raise RuntimeError("%s: %s" % (method, msg["error"]))
                return msg["result"]

    def js(self, expr):
        r = self.send("Runtime.evaluate", expression=expr, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def frame_js(self, frame, expr):
        """expr in a child frame (the sandboxed report): in the page's
        process, an isolated world of its own; in one of its own (site
        isolation puts sandboxed frames there), a session attached to it.
        Either way the page itself cannot look in."""
        if frame.get("targetId"):
            session = self.send("Target.attachToTarget", targetId=frame["targetId"],
                                flatten=True)["sessionId"]
            r = self.send("Runtime.evaluate", session, expression=expr, returnByValue=True)
        else:
            ctx = self.send("Page.createIsolatedWorld", frameId=frame["id"],
                            worldName="test")["executionContextId"]
            r = self.send("Runtime.evaluate", expression=expr, contextId=ctx,
                          returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (expr, r["exceptionDetails"]))
        return r["result"].get("value")

    def child_frames(self):
        """The page's child frames: in its process (the frame tree) or in
        their own (iframe targets)."""
        tree = self.send("Page.getFrameTree")["frameTree"]
        own = [{"id": t["targetId"], "targetId": t["targetId"], "url": t["url"]}
               for t in self.send("Target.getTargets")["targetInfos"]
               if t["type"] == "iframe" and t.get("parentFrameId") == tree["frame"]["id"]]
        ids = {f["id"] for f in own}
        return own + [c["frame"] for c in tree.get("childFrames", [])
                      if c["frame"]["id"] not in ids]

    def csp_violations(self):
        """What the console said about the Content-Security-Policy."""
        self.js("0")  # takes in the events sent so far
        out = []
        for e in self.events:
            p = e.get("params", {})
            text = ""
            if e["method"] == "Log.entryAdded":
                text = p["entry"].get("text", "")
            elif e["method"] == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", "")) for a in p.get("args", []))
            elif e["method"] == "Runtime.exceptionThrown":
                d = p["exceptionDetails"]
                text = d.get("text", "") + " " + d.get("exception", {}).get("description", "")
            if "Content Security Policy" in text or "Content-Security-Policy" in text:
                out.append(text)
        return out

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
    assert "innerHTML" not in page, "the dashboard inserts markup"
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
           "f.srcdoc.includes('Verdict'); })()", "the report")
    # sandboxed with no permission at all: the page cannot reach into it
    assert b.js("(() => { const f = document.getElementById('report'); "
                "return f.hasAttribute('sandbox') && f.sandbox.length === 0 && "
                "f.contentDocument === null; })()"), "the report's frame is not sandboxed"
    end, frames, text = time.time() + 30, [], ""
    while "Verdict" not in text and time.time() < end:
        time.sleep(0.1)
        frames = b.child_frames()
        try:
            text = frames and b.frame_js(frames[0], "document.body ? document.body.innerText : ''")
        except RuntimeError:  # the frame is still being made
            text = ""
        text = text or ""
    assert len(frames) == 1, frames
    text = b.frame_js(frames[0], "document.body.innerText")
    assert "Privacy report: figure1" in text and "records" in text, text[:500]
    # a unique origin, without the dashboard's storage (and token)
    assert b.frame_js(frames[0], "self.origin") == "null"
    assert balanced(b.js("document.getElementById('report').srcdoc")), "the report's HTML"
    b.screenshot(os.path.join(shots, "dashboard.png"))
    # a sweep: its chart shown, growing to every point
    b.js("(() => { const row = document.querySelector('#datasets tbody tr');"
         " row.querySelector('.ks').value = '0,1,2';"
         " row.querySelector('.sweep').click(); })()")
    b.wait("[...document.querySelectorAll('#sweeps tbody tr')].some(r => "
           "r.innerText.includes('succeeded') && r.innerText.includes('9 of 9'))",
           "the sweep to succeed")
    # an image from a blob: URL, decoded, never markup in the page
    b.wait("(() => { const c = document.getElementById('chart'), i = c.querySelector('img'); "
           "return !c.hidden && !c.querySelector('svg') && !!i && i.src.startsWith('blob:') && "
           "i.complete && i.naturalWidth > 0; })()", "the sweep's chart")
    sw = b.js("document.querySelector('#sweeps tbody tr').dataset.id")
    svg = urllib.request.urlopen(base + "/v1/sweeps/" + sw + "/chart.svg").read().decode()
    assert "mixed" in svg, svg[:300]
    width = int(svg.split('width="', 1)[1].split('"', 1)[0])
    assert b.js("document.querySelector('#chart img').naturalWidth") == width
    b.js("document.getElementById('chart').scrollIntoView()")
    b.screenshot(os.path.join(shots, "dashboard-sweep.png"))


def provoke(b):
    """The console does report violations: an image from elsewhere and an
    inline script (one an injection could add), both refused by the
    page's policy; the script does not run."""
    b.js("document.body.appendChild(Object.assign(document.createElement('img'), "
         "{src: 'http://127.0.0.1:9/provoked.png'})); "
         "document.body.appendChild(Object.assign(document.createElement('script'), "
         "{textContent: 'window.provoked = 1'}))")
    end = time.time() + 10
    while len(b.csp_violations()) < 2 and time.time() < end:
        time.sleep(0.1)
    seen = b.csp_violations()
    assert any("provoked.png" in v for v in seen), seen
    assert any("inline script" in v for v in seen), seen
    assert b.js("window.provoked === undefined")


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
        assert not b.csp_violations(), b.csp_violations()
        tokens = os.path.join(tmp, "tokens")
        with open(tokens, "w") as f:
            f.write("sesame-sesame-sesame alice\n")
        os.chmod(tokens, 0o600)
        srv, port = serve(os.path.join(tmp, "closed"), "--token-file", tokens)
        servers.append(srv)
        with_token(b, "http://127.0.0.1:" + port, shots)
        assert not b.csp_violations(), b.csp_violations()
        provoke(b)
    finally:
        if b:
            b.close()
        for s in servers:
            s.terminate()
            s.wait()
    print("dashboard: upload, analysis, report, chart and the token, in chromium, "
          "with no CSP violation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
