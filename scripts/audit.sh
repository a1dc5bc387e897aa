#!/usr/bin/env bash
# A whole disclosure audit of the Adult data over the HTTP API, with curl
# (and jq to read the answers):
#
#   1. bucketize: the Adult CSV (../shared/data/adult/adult.csv) has no group
#      column - it is the raw table, not a release. The publisher's step that
#      makes the release is Anatomy, which the service does not offer, so it
#      runs locally once: `pmaxent anatomize --sa occupation --qi
#      age,type_employer,marital,relationship,race,sex,country,education --l 5
#      --seed 1` (the setting of bench/). Its records-form JSON is turned into
#      the CSV a publisher would hold (QI columns, `group`, `occupation`) and
#      cached in $WORK. Give DATASET_CSV (with SA and GROUP) to audit an
#      already bucketized CSV instead and skip this step.
#   2. upload that CSV: POST /v1/datasets?sa=occupation&group=group (text/csv)
#   3. start an analysis with a Top-(K+,K-) bound:
#      POST /v1/datasets/{id}/analyses {"knowledge": {"mine": {"positive": 50,
#      "negative": 50}}}
#   4. poll GET /v1/analyses/{id} (with If-None-Match, as a dashboard would)
#      until it is done, showing progress
#   5. print the estimation accuracy (and the no-knowledge baseline) and the
#      10 worst posteriors: the QI tuples with the highest max_s P*(s|q); save
#      the whole posterior as CSV (Accept: text/csv) in $WORK.
#
# Start the service first (./scripts/serve). Settings (environment):
#   BASE_URL     service address (default http://127.0.0.1:8080)
#   TOKEN        bearer token, when the service runs with --token-file
#   K            K+ = K- of the bound (default 50)
#   ADULT        the raw Adult CSV (default ../shared/data/adult/adult.csv)
#   PMAXENT      the pmaxent binary for step 1 (default build/cli/pmaxent)
#   WORK         where the bucketized CSV and the posterior go
#                (default ${TMPDIR:-/tmp}/pmaxent-audit)
#   DATASET_CSV, SA, GROUP   audit this bucketized CSV instead of Adult
#   KEEP=0       delete the dataset (and its analysis) at the end
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BASE_URL=${BASE_URL:-http://127.0.0.1:8080}
BASE_URL=${BASE_URL%/}
K=${K:-50}
ADULT=${ADULT:-$here/../shared/data/adult/adult.csv}
PMAXENT=${PMAXENT:-$here/build/cli/pmaxent}
WORK=${WORK:-${TMPDIR:-/tmp}/pmaxent-audit}
SA=${SA:-occupation}
GROUP=${GROUP:-group}
KEEP=${KEEP:-1}
QI=age,type_employer,marital,relationship,race,sex,country,education

for tool in curl jq; do
	command -v "$tool" >/dev/null || { echo "audit: $tool is needed (./scripts/deps installs it)" >&2; exit 2; }
done
mkdir -p "$WORK"
body="$WORK/body.json"
auth=()
[ -n "${TOKEN:-}" ] && auth=(-H "Authorization: Bearer $TOKEN")

# api METHOD PATH [curl args...]: the response body goes to $body, the HTTP
# status to stdout; a problem document (4xx/5xx) is printed and ends the audit.
api() {
	local method=$1 path=$2 code
	shift 2
	code=$(curl -sS -o "$body" -w '%{http_code}' -X "$method" "${auth[@]}" "$@" \
		"$BASE_URL$path") || { echo "audit: cannot reach $BASE_URL (is ./scripts/serve running?)" >&2; exit 1; }
	if [ "$code" -ge 400 ]; then
		echo "audit: $method $path -> $code" >&2
		jq -r '"  \(.title): \(.detail)" + (if .field then " [field \(.field)]" else "" end)' \
			"$body" >&2 2>/dev/null || cat "$body" >&2
		exit 1
	fi
	echo "$code"
}

api GET /healthz >/dev/null

# 1. the bucketized CSV
if [ -n "${DATASET_CSV:-}" ]; then
	csv=$DATASET_CSV
else
	csv="$WORK/adult-anatomy-l5.csv"
	if [ ! -s "$csv" ]; then
		[ -f "$ADULT" ] || { echo "audit: no Adult data at $ADULT (set ADULT)" >&2; exit 2; }
		[ -x "$PMAXENT" ] || { echo "audit: no pmaxent binary at $PMAXENT (run ./scripts/serve or set PMAXENT)" >&2; exit 2; }
		echo "1. bucketizing $(basename "$ADULT") (Anatomy, l = 5, SA $SA)"
		"$PMAXENT" anatomize "$ADULT" --sa "$SA" --qi "$QI" --l 5 --seed 1 |
			jq -r '(.qi_attributes + ["group", .sa_attribute]),
			       (.records[] | .qi + [(.group | tostring), .sa]) | @csv' >"$csv.tmp"
		mv "$csv.tmp" "$csv"
	fi
fi
echo "1. bucketized table: $csv ($(($(wc -l <"$csv") - 1)) records)"

# 2. upload
t0=$(date +%s%N)
api POST "/v1/datasets?sa=$SA&group=$GROUP&name=$(basename "$csv" .csv)" \
	-H 'Content-Type: text/csv' --data-binary @"$csv" >/dev/null
ds=$(jq -r .id "$body")
t1=$(date +%s%N)
jq -r '"2. dataset \(.id): \(.records) records, \(.groups) groups, \(.tuples) QI tuples, SA \(.sa_attribute) (\(.sa_domain | length) values)"' "$body"
ms() { echo "$(( ($2 - $1) / 1000000 ))"; }
echo "   uploaded in $(ms "$t0" "$t1") ms"

# 3. analysis with the Top-(K+, K-) bound
api POST "/v1/datasets/$ds/analyses" -H 'Content-Type: application/json' \
	--data "{\"knowledge\": {\"mine\": {\"positive\": $K, \"negative\": $K}}}" >/dev/null
an=$(jq -r .id "$body")
echo "3. analysis $an: Top-($K+, $K-) rules, $(jq -r .status "$body")"

# 4. poll; a 304 costs the server almost nothing
etag=
while :; do
	headers="$WORK/headers.txt"
	cond=()
	[ -n "$etag" ] && cond=(-H "If-None-Match: $etag")
	code=$(curl -sS -D "$headers" -o "$body.new" -w '%{http_code}' "${auth[@]}" \
		"${cond[@]}" "$BASE_URL/v1/analyses/$an")
	if [ "$code" = 200 ]; then
		mv "$body.new" "$body"
		etag=$(sed -n 's/^[Ee][Tt][Aa][Gg]: *\([^[:space:]]*\).*/\1/p' "$headers")
		status=$(jq -r .status "$body")
		case $status in
		succeeded | failed | cancelled) break ;;
		running) jq -r '"   running: \(.progress.iterations) iterations, max violation \(.progress.max_violation // "-") records"' "$body" ;;
		*) echo "   $status" ;;
		esac
	elif [ "$code" != 304 ]; then
		echo "audit: GET /v1/analyses/$an -> $code" >&2
		cat "$body.new" >&2
		exit 1
	fi
	sleep 0.5
done
rm -f "$body.new"
t2=$(date +%s%N)
echo "4. $status: $(ms "$t1" "$t2") ms after the analysis started, $(ms "$t0" "$t2") ms after the upload began"
if [ "$status" != succeeded ]; then
	jq -r '.problem | "   \(.title): \(.detail)"' "$body" >&2
	exit 1
fi

# 5. what the adversary learns
jq -r 'def f4: (. * 10000 | round) as $n
         | "\($n / 10000 | floor).\("0000\($n % 10000)" | .[-4:])";
  .result |
  "5. solver: \(.status), \(.iterations) iterations, max violation \(.max_violation) records, \(.seconds) s",
  "   knowledge: \(.rules | length) rules; constraints: \(.constraints.variables) variables, \(.constraints.forced_zeros) forced zeros",
  "   estimation accuracy: \(if .estimation_accuracy_infinite then "infinite" else .estimation_accuracy end) nats",
  "   baseline (no knowledge): \(if .baseline_accuracy_infinite then "infinite" else .baseline_accuracy end) nats",
  "   (lower is worse: the more the adversary learns)",
  "",
  "   the 10 worst posteriors (highest max P*(s|q)):",
  "   max P*   s                   records  QI tuple",
  (.posterior
   | map(. + {top: (.p | to_entries | max_by(.value))})
   | sort_by(-.top.value, -.count) | .[:10][]
   | "   \(.top.value | f4)   \(.top.key + "                    " | .[:20]) \(.count | tostring | "       " + . | .[-7:])  \(.qi | join(", "))")' "$body"

post="$WORK/posterior-$an.csv"
curl -sS -f "${auth[@]}" -H 'Accept: text/csv' -o "$post" "$BASE_URL/v1/analyses/$an/posterior"
echo "   whole posterior: $post ($(($(wc -l <"$post") - 1)) rows)"

if [ "$KEEP" = 0 ]; then
	api DELETE "/v1/datasets/$ds" >/dev/null
	echo "   dataset $ds deleted"
else
	echo "   kept: $BASE_URL/v1/datasets/$ds, $BASE_URL/v1/analyses/$an"
fi
