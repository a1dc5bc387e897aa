"""
Operating the service (issue 36): GET /readyz on PostgreSQL (a throwaway
server from scripts/pg-temp). While the database is down, /healthz stays
200 (the process runs) and /readyz answers 503 naming the store, without
the database URI or its socket directory, which the server log has; once
the database is back, /readyz is 200 again.
"""
import subprocess
import time

from conftest import SLOW, Client
from test_cluster import PG_TEMP, pg  # noqa: F401 (the fixture)


def test_readyz_follows_the_database(pg, make_server, spec):  # noqa: F811
    database, d = pg
    uri = database("ready")
    node = make_server(["--database", uri, "--quiet"], name="ready")
    c = Client(node, spec)
    r = c.get("/readyz")
    assert r.status == 200 and r.json() == {"status": "ready"}, r.text
    subprocess.run([PG_TEMP, "stop", d], check=True, capture_output=True)
    try:
        assert c.get("/healthz").status == 200
        r = c.get("/readyz")
        assert r.status == 503 and r.json()["field"] == "store", r.text
        assert r.headers.get("Retry-After"), r
        assert uri not in r.text and d not in r.text and "postgres" not in r.text.lower(), r.text
        # a store error of any route: no URI either
        r = c.get("/v1/datasets")
        assert r.status == 503 and d not in r.text and "postgres" not in r.text.lower(), r.text
        assert "pmaxent: database " in node.read_log()
    finally:
        subprocess.run([PG_TEMP, "start", d], check=True, capture_output=True)
    deadline = time.monotonic() + 30 * SLOW
    while c.get("/readyz").status != 200:
        assert time.monotonic() < deadline, "/readyz did not come back"
        time.sleep(0.2)
