// pi-open.mjs: the peer figure for contextd's cold index. Times Pi's own
// SessionManager.open(FILE) + buildSessionContext() (what Pi does on resume)
// and prints one JSON object: {open_ms, context_ms, total_ms, entries,
// messages, max_rss_kb}. Module loading is not timed.
//
// Usage: node bench/pi-open.mjs FILE.jsonl [0.85|1.6]   (run it on a COPY: Pi
// may rewrite files it opens; bench/run.sh copies the file first). The second
// argument picks the Pi under e2e/node_modules: 0.85 (default,
// @earendil-works/pi-coding-agent) or 1.6 (the npm alias pi-coding-agent-1.6).

import { rmSync } from "node:fs";
import { join } from "node:path";
import { loadPi } from "./pi-peer.mjs";

const { path: file, version, pi, scratch } = await loadPi("usage: node pi-open.mjs FILE.jsonl [0.85|1.6]");

try {
	const cpu0 = process.cpuUsage();
	const t0 = process.hrtime.bigint();
	const sm = pi.SessionManager.open(file, join(scratch, "sessions"));
	const t1 = process.hrtime.bigint();
	const ctx = sm.buildSessionContext();
	const t2 = process.hrtime.bigint();
	const ms = (a, b) => Number(b - a) / 1e6;
	const out = {
		open_ms: ms(t0, t1),
		context_ms: ms(t1, t2),
		total_ms: ms(t0, t2),
		entries: sm.getEntries().length,
		messages: ctx.messages.length,
		max_rss_kb: process.resourceUsage().maxRSS,
		cpu_ms: ((u) => (u.user + u.system) / 1000)(process.cpuUsage(cpu0)),
		pi: version,
	};
	process.stdout.write(`${JSON.stringify(out)}\n`);
} finally {
	rmSync(scratch, { recursive: true, force: true });
}
