// pi-list.mjs: the peer figure for contextd's first session listing. Times
// Pi's own SessionManager.listAll(DIR) (what Pi's /resume lists: it reads
// every session file of DIR) and prints one JSON object: {list_ms,
// sessions, max_rss_kb, cpu_ms, pi}. Module loading is not timed.
//
// Usage: node bench/pi-list.mjs DIR [0.85|1.6]   (DIR holds the .jsonl
// files; Pi only reads them). The second argument picks the Pi under
// e2e/node_modules: 0.85 (default, @earendil-works/pi-coding-agent) or 1.6.

import { rmSync } from "node:fs";
import { loadPi } from "./pi-peer.mjs";

const { path: dir, version, pi, scratch } = await loadPi("usage: node pi-list.mjs DIR [0.85|1.6]");

try {
	const cpu0 = process.cpuUsage();
	const t0 = process.hrtime.bigint();
	const sessions = await pi.SessionManager.listAll(dir);
	const t1 = process.hrtime.bigint();
	const out = {
		list_ms: Number(t1 - t0) / 1e6,
		sessions: sessions.length,
		max_rss_kb: process.resourceUsage().maxRSS,
		cpu_ms: ((u) => (u.user + u.system) / 1000)(process.cpuUsage(cpu0)),
		pi: version,
	};
	process.stdout.write(`${JSON.stringify(out)}\n`);
} finally {
	rmSync(scratch, { recursive: true, force: true });
}
