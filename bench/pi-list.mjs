// pi-list.mjs: the peer figure for contextd's first session listing. Times
// Pi's own SessionManager.listAll(DIR) (what Pi's /resume lists: it reads
// every session file of DIR) and prints one JSON object: {list_ms,
// sessions, max_rss_kb, cpu_ms, pi}. Module loading is not timed.
//
// Usage: node bench/pi-list.mjs DIR [0.85|1.6]   (DIR holds the .jsonl
// files; Pi only reads them). The second argument picks the Pi under
// e2e/node_modules: 0.85 (default, @earendil-works/pi-coding-agent) or 1.6.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const dir = process.argv[2];
if (!dir) {
	console.error("usage: node pi-list.mjs DIR [0.85|1.6]");
	process.exit(2);
}
const version = process.argv[3] ?? "0.85";
const packages = { "0.85": "@earendil-works/pi-coding-agent", "1.6": "pi-coding-agent-1.6" };
if (!packages[version]) {
	console.error(`unknown Pi version ${version}: pass 0.85 or 1.6`);
	process.exit(2);
}
const scratch = mkdtempSync(join(tmpdir(), "pi-bench-"));
process.env.PI_CODING_AGENT_DIR ??= join(scratch, "agent"); // keep Pi away from ~/.pi

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const pi = await import(pathToFileURL(join(root, "e2e/node_modules", packages[version], "dist/index.js")).href);

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
