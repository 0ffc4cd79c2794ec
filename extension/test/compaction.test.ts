// Pi's compaction in Local and Remote (src/compaction.ts; docs/design.md
// §5.3.1 row "Auto-compaction, manual /compact"): the summarizer gets the
// current window only, and a boundary the kept range cut away is sent again.
// Branches are written by hand: window 0 (b0, u1, a1), window 1 (b1, u2,
// a2, u3, a3); Pi's preparation lists the messages of the entries before
// firstKeptEntryId, as prepareCompaction does (compaction.js).
import assert from "node:assert/strict";
import { test } from "node:test";
import { type CompactEntry, limitToCurrentWindow, type Preparation, type PrepMessage, withBoundary } from "../src/compaction.ts";

const id = (cur: string, n: number) => ({ protocol: 1, kind: "window", firstWindowId: "w0", currentWindowId: cur, windowNumber: n, ...(n > 0 ? { previousWindowId: "w0" } : {}) });
const boundary = (eid: string, cur: string, n: number): CompactEntry => ({
	type: "custom_message",
	id: eid,
	customType: "codex-context-window",
	content: `boundary ${cur}`,
	display: true,
	details: { contextManagement: id(cur, n) },
	timestamp: "2026-12-01T10:00:00.000Z",
});
const msg = (eid: string): CompactEntry => ({ type: "message", id: eid });
const branch: CompactEntry[] = [boundary("b0", "w0", 0), msg("u1"), msg("a1"), boundary("b1", "w1", 1), msg("u2"), msg("a2"), msg("u3"), msg("a3")];

/** The message Pi makes of each entry (a boundary becomes a custom message). */
function asMessage(e: CompactEntry): PrepMessage {
	if (e.type === "custom_message") return { role: "custom", customType: e.customType, details: e.details, content: e.content };
	if (e.id.startsWith("a")) return { role: "assistant", content: [{ type: "toolCall", name: "read", arguments: { path: `${e.id}.txt` } }] };
	return { role: "user", content: e.id };
}

function prep(entries: CompactEntry[], firstKept: string, previousSummary?: string): Preparation {
	const k = entries.findIndex((e) => e.id === firstKept);
	const summarized = entries.slice(0, k).filter((e) => e.type !== "compaction").map(asMessage);
	const ops = { read: new Set<string>(), written: new Set<string>(), edited: new Set<string>() };
	for (const e of entries.slice(0, k)) if (e.id.startsWith("a")) ops.read.add(`${e.id}.txt`);
	return { firstKeptEntryId: firstKept, messagesToSummarize: summarized, turnPrefixMessages: [], isSplitTurn: false, previousSummary, fileOps: ops };
}

test("a cut inside the current window: only the window's messages after its boundary are summarized", () => {
	const p = prep(branch, "u3");
	const plan = limitToCurrentWindow(p, branch);
	assert.equal(plan.action, "limited");
	assert.equal(plan.action === "limited" && plan.dropped, 4); // b0, u1, a1, b1
	assert.deepEqual(
		p.messagesToSummarize.map((m) => m.content),
		["u2", [{ type: "toolCall", name: "read", arguments: { path: "a2.txt" } }]],
	);
	// a1 was read in window 0: not listed under window 1's summary.
	assert.deepEqual([...p.fileOps.read], ["a2.txt"]);
});

test("the kept range holds the whole window: nothing to compact, cancelled with the window's number", () => {
	const p = prep(branch, "b1");
	const plan = limitToCurrentWindow(p, branch);
	assert.deepEqual(plan, {
		action: "cancel",
		reason: "contextd: nothing to compact: context window 1 is short enough to be kept whole; earlier windows are not sent to the model and stay readable with the history tool",
	});
	assert.equal(p.messagesToSummarize.length, 3, "a cancelled preparation is left as Pi made it");
});

test("the cut right after the boundary: the window holds nothing to summarize", () => {
	const plan = limitToCurrentWindow(prep(branch, "u2"), branch);
	assert.equal(plan.action, "cancel");
});

test("a previous compaction in a closed window: its summary is dropped", () => {
	const withOld: CompactEntry[] = [boundary("b0", "w0", 0), msg("u1"), { type: "compaction", id: "c0", firstKeptEntryId: "u1" }, msg("a1"), ...branch.slice(3)];
	const p = prep(withOld, "u3", "summary of window 0");
	const plan = limitToCurrentWindow(p, withOld);
	assert.equal(plan.action, "limited");
	assert.equal(p.previousSummary, undefined);
	assert.equal(p.messagesToSummarize[0].content, "u2");
});

test("a previous compaction inside the current window: Pi's range is left alone, its summary kept", () => {
	const inWindow: CompactEntry[] = [...branch.slice(0, 6), { type: "compaction", id: "c1", firstKeptEntryId: "a2" }, msg("u3"), msg("a3"), msg("u4"), msg("a4")];
	// Pi's range starts at the previous kept entry a2.
	const p: Preparation = { ...prep(inWindow, "u4", "summary of u2"), messagesToSummarize: [asMessage(msg("a2")), asMessage(msg("u3")), asMessage(msg("a3"))] };
	assert.deepEqual(limitToCurrentWindow(p, inWindow), { action: "pi" });
	assert.equal(p.previousSummary, "summary of u2");
	assert.equal(p.messagesToSummarize.length, 3);
});

test("a split turn whose prefix holds the boundary: the prefix is cut at the boundary, nothing before it summarized", () => {
	const p: Preparation = { ...prep(branch, "u2"), firstKeptEntryId: "a2", isSplitTurn: true, turnPrefixMessages: [asMessage(branch[3]), asMessage(branch[4])] };
	p.messagesToSummarize = branch.slice(0, 3).map(asMessage);
	const plan = limitToCurrentWindow(p, branch);
	assert.equal(plan.action, "limited");
	assert.deepEqual(p.messagesToSummarize, []);
	assert.deepEqual(p.turnPrefixMessages.map((m) => m.content), ["u2"]);
});

test("no boundary on the branch: Pi's compaction as it is", () => {
	const plain = [msg("u1"), msg("a1"), msg("u2")];
	assert.deepEqual(limitToCurrentWindow(prep(plain, "u2"), plain), { action: "pi" });
});

test("withBoundary: the boundary a compaction cut away goes back before the summary, after system messages", () => {
	const compacted = [...branch, { type: "compaction", id: "c1", firstKeptEntryId: "u3" }];
	const msgs = [{ role: "system" }, { role: "compactionSummary" }, { role: "user" }, { role: "assistant" }];
	const out = withBoundary(msgs, compacted);
	assert.deepEqual(
		out.map((m) => m.role),
		["system", "custom", "compactionSummary", "user", "assistant"],
	);
	assert.deepEqual(out[1], {
		role: "custom",
		customType: "codex-context-window",
		content: "boundary w1",
		display: true,
		details: { contextManagement: id("w1", 1) },
		timestamp: Date.parse("2026-12-01T10:00:00.000Z"),
	});
	// Pi sends the boundary itself, or no compaction follows it: unchanged.
	const kept = [{ role: "compactionSummary" }, { role: "custom", customType: "codex-context-window", details: { contextManagement: id("w1", 1) } }];
	assert.equal(withBoundary(kept, compacted), kept);
	assert.equal(withBoundary(msgs, branch), msgs);
});
