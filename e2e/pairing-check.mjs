// pairing-check.mjs: the provider request a contextd-managed Pi sends, checked for tool-call pairing.
//
// usage: node pairing-check.mjs JOBS.jsonl   (PI_VERSION selects the Pi, see pi-version.mjs)
// Each job line is {"file": path, "leaf": entry id, "projection": /context's projection}. For each:
// Pi's buildSessionContext(entries, leaf) gives the context event's messages; the extension's own
// applyProjection (extension/src/projection.ts) applies contextd's answer; Pi's convertToLlm and
// pi-ai's transformMessages (dist/api/transform-messages.js, what every provider calls) build the
// request. The check: every toolResult directly follows (after sibling results) the assistant that
// holds its toolCall, and every call id of the request has exactly one result.
// PAIRING_CHECK_UNREPAIRED=1 applies only contextd's slice and hidden summaries (no result drops,
// no moves): the control run that shows the check finds the damage the repairs fix.
// Prints one JSON line per failing job ({file, leaf, error | violations, roles}) and a final
// {"checked": n, "failed": m} line.
import { readFileSync } from "node:fs";
import { importPi, PI_PACKAGES, piLine } from "./pi-version.mjs";

const pi = await importPi();
const tm = await import(new URL(`./node_modules/${PI_PACKAGES[piLine].ai}/dist/api/transform-messages.js`, import.meta.url));
const { applyProjection } = await import(new URL("../extension/src/projection.ts", import.meta.url));
const model = { provider: "anthropic", api: "anthropic-messages", id: "claude-check", input: ["text", "image"] };

const files = new Map();
function entriesOf(file) {
	let f = files.get(file);
	if (!f) {
		const entries = readFileSync(file, "utf8").split("\n").filter(Boolean)
			.flatMap((l) => { try { return [JSON.parse(l)]; } catch { return []; } })
			.filter((e) => e.type !== "session");
		f = { entries, byId: new Map(entries.map((e) => [e.id, e])) };
		files.set(file, f);
	}
	return f;
}

function violations(out) {
	const bad = [];
	const per = new Map();
	for (const m of out) {
		if (m.role === "assistant") for (const b of m.content) if (b.type === "toolCall" && !per.has(b.id)) per.set(b.id, 0);
	}
	for (let k = 0; k < out.length; k++) {
		const m = out[k];
		if (m.role !== "toolResult") continue;
		per.set(m.toolCallId, (per.get(m.toolCallId) ?? 0) + 1);
		let j = k - 1;
		while (j >= 0 && out[j].role === "toolResult") j--;
		const a = out[j];
		if (!a || a.role !== "assistant" || !a.content.some((b) => b.type === "toolCall" && b.id === m.toolCallId)) {
			bad.push(`result for ${m.toolCallId} does not follow its call`);
		}
	}
	for (const [id, n] of per) if (n !== 1) bad.push(`call ${id} has ${n} results`);
	return bad;
}

const jobs = readFileSync(process.argv[2], "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
let failed = 0;
for (const job of jobs) {
	const { entries, byId } = entriesOf(job.file);
	let out;
	try {
		const messages = pi.buildSessionContext(entries, job.leaf, byId).messages;
		let p = job.projection;
		if (process.env.PAIRING_CHECK_UNREPAIRED) {
			p = { start_at: p.start_at, drop: p.drop.filter((k) => k.role !== "toolResult") };
			if (p.start_at?.role === "assistant") p.start_at = null;
		}
		const projected = applyProjection(messages, p);
		out = tm.transformMessages(pi.convertToLlm(projected), model);
	} catch (err) {
		failed++;
		console.log(JSON.stringify({ file: job.file, leaf: job.leaf, error: String(err?.message ?? err) }));
		continue;
	}
	const bad = violations(out);
	if (bad.length > 0) {
		failed++;
		const roles = out.map((m) => (m.role === "toolResult" ? `toolResult(${m.toolCallId})` : m.role === "assistant" ? `assistant[${m.content.filter((b) => b.type === "toolCall").map((b) => b.id)}]` : m.role));
		console.log(JSON.stringify({ file: job.file, leaf: job.leaf, violations: bad, roles }));
	}
}
console.log(JSON.stringify({ checked: jobs.length, failed }));
