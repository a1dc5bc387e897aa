"""
The OpenAPI document as a test oracle: every response the suite receives is
checked against the document's description of that route, status and
content type (headers, media type, body schema), so that the document and
the server cannot drift apart. Plain jsonschema (Debian's python3-jsonschema,
4.10 or later) with the 2020-12 dialect of OpenAPI 3.1; $refs resolve inside
the document.
"""
import json
import os
import re

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC_PATH = os.path.normpath(os.path.join(HERE, "..", "..", "api-spec", "openapi.yaml"))
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def format_checker():
    """date-time checked without optional packages (jsonschema only checks
    it when rfc3339-validator is installed)."""
    fc = jsonschema.FormatChecker()

    @fc.checks("date-time")
    def _date_time(value):
        return not isinstance(value, str) or bool(_RFC3339.match(value))

    return fc


def load_spec(path=SPEC_PATH):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


class SpecError(AssertionError):
    """A response (or request) that the document does not describe."""


class Spec:
    def __init__(self, doc=None):
        self.doc = doc if doc is not None else load_spec()
        self.fc = format_checker()
        # literal paths first, so /v1/datasets never matches a template
        self.routes = []
        for tmpl in sorted(self.doc["paths"], key=lambda p: (p.count("{"), p)):
            rx = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(tmpl)) + "$"
            self.routes.append((re.compile(rx), tmpl))
        self.seen = set()  # (method, template, status) actually checked

    # ---- lookup ---------------------------------------------------------

    def resolve(self, obj):
        """Follows local $refs (#/a/b) until obj is not a reference."""
        while isinstance(obj, dict) and "$ref" in obj:
            ref = obj["$ref"]
            if not ref.startswith("#/"):
                raise SpecError("external $ref %r" % ref)
            obj = self.doc
            for part in ref[2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                obj = obj[part]
        return obj

    def route(self, path):
        """The path template that a request path (no query) matches, or None."""
        for rx, tmpl in self.routes:
            if rx.match(path):
                return tmpl
        return None

    def operation(self, method, path):
        tmpl = self.route(path)
        if tmpl is None:
            return None, None
        return tmpl, self.doc["paths"][tmpl].get(method.lower())

    def methods(self, tmpl):
        return [m.upper() for m in METHODS if m in self.doc["paths"][tmpl]]

    # ---- schema validation ----------------------------------------------

    def validate(self, instance, schema, what):
        """instance against a schema of the document (inline or $ref)."""
        root = dict(schema)
        # a $ref such as #/components/schemas/X resolves against this root
        root["components"] = self.doc["components"]
        validator = jsonschema.Draft202012Validator(root, format_checker=self.fc)
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
        if errors:
            lines = []
            for e in errors[:5]:
                where = "/".join(str(p) for p in e.absolute_path) or "(root)"
                lines.append("  at %s: %s" % (where, _short(e.message)))
            raise SpecError("%s does not match the document:\n%s\nbody: %s"
                            % (what, "\n".join(lines), _short(json.dumps(instance), 600)))

    def schema_of(self, name):
        return {"$ref": "#/components/schemas/" + name}

    # ---- requests and responses -----------------------------------------

    def response_spec(self, method, path, status):
        """(template or None, response object) for a response, or raises."""
        tmpl, op = self.operation(method, path)
        if status == 401 and (op is None or "401" not in op["responses"]) and \
                path != "/healthz":
            # authentication comes first, even for unknown routes and methods
            return tmpl, self.resolve({"$ref": "#/components/responses/Unauthorized"})
        if tmpl is None:
            # no such route: only a 404 problem is acceptable
            if status != 404:
                raise SpecError("%s %s: undocumented path answered %d" % (method, path, status))
            return None, self.resolve({"$ref": "#/components/responses/NotFound"})
        if op is None:
            if status != 405:
                raise SpecError("%s %s: method not in the document, yet the answer was %d, not 405"
                                % (method, path, status))
            return tmpl, self.resolve({"$ref": "#/components/responses/MethodNotAllowed"})
        responses = op["responses"]
        key = str(status)
        if key not in responses:
            key = "%dXX" % (status // 100)
        if key not in responses:
            # "default" stands for unexpected server errors only; a 4xx the
            # document does not list is drift
            if status < 500 or "default" not in responses:
                raise SpecError("%s %s (%s): status %d is not documented (documented: %s)"
                                % (method, path, op.get("operationId"), status,
                                   ", ".join(sorted(responses))))
            key = "default"
        return tmpl, self.resolve(responses[key])

    def check_response(self, method, path, status, headers, body):
        """headers: a case-insensitive mapping (http.client's); body: bytes."""
        tmpl, rsp = self.response_spec(method, path, status)
        self.seen.add((method.upper(), tmpl, status))
        what = "%s %s -> %d" % (method, path, status)
        for name, h in (rsp.get("headers") or {}).items():
            h = self.resolve(h)
            value = headers.get(name)
            if value is None:
                if h.get("required"):
                    raise SpecError("%s: required header %s is missing" % (what, name))
                continue
            if "schema" in h:
                self.validate(value, h["schema"], "%s header %s" % (what, name))
        if status == 405 and tmpl is not None:
            allow = {m.strip() for m in (headers.get("Allow") or "").split(",")}
            missing = set(self.methods(tmpl)) - allow
            if missing:
                raise SpecError("%s: Allow %r lacks %s" % (what, headers.get("Allow"),
                                                           sorted(missing)))
        content = rsp.get("content")
        if method.upper() == "HEAD":
            return
        if not content:
            if body:
                raise SpecError("%s: the document says no body, got %r" % (what, body[:200]))
            return
        ctype = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype not in content:
            raise SpecError("%s: Content-Type %r is not documented (documented: %s)"
                            % (what, headers.get("Content-Type"), ", ".join(content)))
        schema = content[ctype].get("schema")
        if schema is None:
            return
        if is_json(ctype):
            try:
                doc = json.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as e:
                raise SpecError("%s: body is not JSON (%s): %r" % (what, e, body[:200]))
            self.validate(doc, schema, what + " body")
            if ctype == "application/problem+json" and doc.get("status") != status:
                raise SpecError("%s: problem status %r differs from the HTTP status"
                                % (what, doc.get("status")))
        else:
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError as e:
                raise SpecError("%s: body is not UTF-8 text: %s" % (what, e))
            self.validate(text, schema, what + " body")

    def check_request(self, method, path, content_type, body):
        """A request the server accepted (2xx) must be one the document
        accepts too, or the document is stricter than the server."""
        tmpl, op = self.operation(method, path)
        if op is None or body is None:
            return
        rb = self.resolve(op.get("requestBody") or {})
        content = rb.get("content") or {}
        ctype = (content_type or "").split(";")[0].strip().lower()
        if is_json(ctype) and ctype not in content:
            ctype = "application/json"  # documented: any application/*+json is JSON
        if ctype not in content:
            raise SpecError("%s %s: the server accepted a %r body the document does not list"
                            % (method, path, content_type))
        schema = content[ctype].get("schema")
        if schema is not None and is_json(ctype):
            self.validate(json.loads(body.decode("utf-8")), schema,
                          "%s %s request body (accepted by the server)" % (method, path))


def is_json(ctype):
    return ctype == "application/json" or ctype.endswith("+json")


def _short(s, n=300):
    return s if len(s) <= n else s[:n] + "..."
