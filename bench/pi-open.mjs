// pi-open.mjs: the peer figure for contextd's cold index. Times Pi's own
// SessionManager.open(FILE) + buildSessionContext() (what Pi does on resume)
// and prints one JSON object: {open_ms, context_ms, total_ms, entries,
// messages, max_rss_kb}. Module loading is not timed.
//
// Usage: node bench/pi-open.mjs FILE.jsonl [0.85|1.6]   (run it on a COPY: Pi
// may rewrite files it opens; bench/run.sh copies the file first). The second
// argument picks the Pi under e2e/node_modules: 0.85 (default,
// @earendil-works/pi-coding-agent) or 1.6 (the npm alias pi-coding-agent-1.6).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const file = process.argv[2];
if (!file) {
	console.error("usage: node pi-open.mjs FILE.jsonl [0.85|1.6]");
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
