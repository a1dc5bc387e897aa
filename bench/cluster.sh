#!/usr/bin/env bash
# Analyses per second on one node and on several (issue 25), side by side
# in one run: one node on SQLite, one node on PostgreSQL, NODES nodes on
# one PostgreSQL (scripts/cluster). Each configuration gets a fresh
# database and the same N analyses of Adult posted round-robin over its
# nodes (bench/cluster.py: Top-(K, K) bounds, K and T cycled), RUNS times
# interleaved; the run with the median seconds is printed. Each node runs as many
# workers as the machine has cores (serve's default). cpu_s: the CPU
# seconds the nodes and their PostgreSQL connections used in the run.
#   bench/cluster.sh      env: N (60), NODES (3), RUNS (3), PMAXENT_BIN, ADULT_CSV
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PMAXENT_BIN:-$root/build/cli/pmaxent}
csv=${ADULT_CSV:-$root/../shared/data/adult/adult.csv}
nodes=${NODES:-3}
runs=${RUNS:-3}
export N=${N:-60}
. "$root/bench/common.sh"
bench_setup
bench_header "N=$N NODES=$nodes RUNS=$runs"
"$bin" anatomize "$csv" --sa occupation --l 5 --seed 1 \
	--qi age,type_employer,marital,relationship,race,sex,country,education >"$work/adult.json"
export DATASET=$work/adult.json
# PostgreSQL runs as postgres when this runs as root (scripts/pg-temp)
chmod 755 "$work"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cleanup() {
	[ -z "${sqlite_pid:-}" ] || kill "$sqlite_pid" 2>/dev/null || true
	"$root/scripts/cluster" stop "$work/cl" 2>/dev/null || true
}
trap 'cleanup; rm -rf "$work"' EXIT
# CPU seconds (user + system) the processes named have used so far,
# the store's included: a figure the machine's other load does not move
cpu_of() {
	local ticks=0 f
	for p in "$@"; do
		f=$(cut -d' ' -f14,15 "/proc/$p/stat" 2>/dev/null) || continue
		ticks=$((ticks + ${f% *} + ${f#* }))
	done
	python3 -c "print('%.1f' % ($ticks / $(getconf CLK_TCK)))"
}

sqlite() {
	local port
	port=$(free_port)
	rm -rf "$work/var"
	"$bin" serve --port "$port" --data-dir "$work/var" --quiet 2>"$work/sqlite.log" &
	sqlite_pid=$!
	for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
	echo "$(python3 "$root/bench/cluster.py" "http://127.0.0.1:$port") $(cpu_of "$sqlite_pid")"
	kill "$sqlite_pid"
	wait "$sqlite_pid" 2>/dev/null || true
	sqlite_pid=
}

postgres() {
	local urls
	rm -rf "$work/cl"
	mapfile -t urls < <(PMAXENT_BIN=$bin "$root/scripts/cluster" start "$work/cl" --nodes "$1" \
		--port "$(free_port)" -- --quiet)
	[ ${#urls[@]} = "$1" ] || { echo "bench/cluster.sh: the cluster did not start" >&2; exit 1; }
	local pm pids
	pm=$(head -1 "$work/cl/pg/data/postmaster.pid")
	pids=($(cat "$work"/cl/node-*.pid) "$pm" $(pgrep -P "$pm"))
	echo "$(python3 "$root/bench/cluster.py" "${urls[@]}") $(cpu_of "${pids[@]}")"
	"$root/scripts/cluster" stop "$work/cl"
}

# the configurations interleaved run by run, so that a machine's changing
# load falls on each alike; then each one's run with the median seconds
configs=("sqlite 1" "postgresql 1" "postgresql $nodes")
for r in $(seq "$runs"); do
	for c in "${!configs[@]}"; do
		set -- ${configs[$c]}
		if [ "$1" = sqlite ]; then sqlite; else postgres "$2"; fi >>"$work/rows.$c"
	done
done
printf '%-10s %5s %5s %8s %8s %9s %8s %8s %6s\n' store nodes N wall_s per_s succeeded p50_s \
	max_s cpu_s
for c in "${!configs[@]}"; do
	set -- ${configs[$c]}
	sort -k2 -n "$work/rows.$c" | sed -n "$(((runs + 1) / 2))p" |
		sed "s/^/$(printf '%-10s %5s ' "$1" "$2")/"
done
