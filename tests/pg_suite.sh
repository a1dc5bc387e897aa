#!/usr/bin/env bash
# The store suites on PostgreSQL (issue 25: one suite, run against each
# back end): a throwaway server (scripts/pg-temp), an empty database per
# suite, and the test binaries given their URIs.
#   tests/pg_suite.sh TEST_STORE TEST_STORE_CACHE TEST_STORE_JOBS TEST_STORE_DATASETS
#                     TEST_STORE_TENANTS
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d /tmp/pmaxent_pg.XXXXXX)
trap '"$root/scripts/pg-temp" stop "$dir" 2>/dev/null || true; rm -rf "$dir"' EXIT
mapfile -t uris < <("$root/scripts/pg-temp" start "$dir" --fast store threads cache jobs datasets tenants)
[ ${#uris[@]} -eq 6 ] || { echo "tests/pg_suite.sh: PostgreSQL did not start" >&2; exit 1; }
"$1" "${uris[0]}" "${uris[1]}"
"$2" "${uris[2]}"
"$3" "${uris[3]}"
"$4" "${uris[4]}"
"$5" "${uris[5]}"
