// pi-peer.mjs: what the Pi peers of the bench (pi-open.mjs, pi-list.mjs)
// share: their arguments (a path, then 0.85 or 1.6), the Pi package under
// e2e/node_modules that the version names, and a scratch agent directory
// that keeps Pi away from ~/.pi (removed by the caller when done).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const packages = { "0.85": "@earendil-works/pi-coding-agent", "1.6": "pi-coding-agent-1.6" };

/**
 * Reads argv (PATH [0.85|1.6]) and imports that Pi. usage is the line
 * printed (exit 2) when PATH is missing. Returns {path, version, pi,
 * scratch}: pi is the package's dist/index.js module, scratch a new
 * temporary directory that is also PI_CODING_AGENT_DIR's parent.
 */
export async function loadPi(usage) {
	const path = process.argv[2];
	if (!path) {
		console.error(usage);
		process.exit(2);
	}
	const version = process.argv[3] ?? "0.85";
	if (!packages[version]) {
		console.error(`unknown Pi version ${version}: pass 0.85 or 1.6`);
		process.exit(2);
	}
	const scratch = mkdtempSync(join(tmpdir(), "pi-bench-"));
	process.env.PI_CODING_AGENT_DIR ??= join(scratch, "agent");
	const root = join(dirname(fileURLToPath(import.meta.url)), "..");
	const pi = await import(pathToFileURL(join(root, "e2e/node_modules", packages[version], "dist/index.js")).href);
	return { path, version, pi, scratch };
}
