#!/usr/bin/env python3
"""Embeds server/dashboard.html into the binary (server/meson.build):
writes its bytes as a C array (dashboard_html.h) and the sha256 of its one
inline script as a Content-Security-Policy source (dashboard_csp.h), so
that the page's policy allows that script and nothing else inline. The
hash is of the exact bytes between <script> and </script>, as the browser
computes it; a page with any other number of inline scripts, or a script
with attributes, fails the build rather than the browser."""
import base64
import hashlib
import re
import sys

src, html_h, csp_h = sys.argv[1:4]
data = open(src, "rb").read()
scripts = re.findall(rb"<script\b([^>]*)>(.*?)</script>", data, re.S)
if len(scripts) != 1 or scripts[0][0].strip():
    sys.exit("%s: needs exactly one inline <script> without attributes, found %d"
             % (src, len(scripts)))
digest = base64.b64encode(hashlib.sha256(scripts[0][1]).digest()).decode()
with open(html_h, "w") as f:
    f.write("static const unsigned char dashboard_html[] = {" +
            ",".join(str(b) for b in data) + ",0};\n")
with open(csp_h, "w") as f:
    f.write("#define DASHBOARD_SCRIPT_SOURCE \"'sha256-%s'\"\n" % digest)
