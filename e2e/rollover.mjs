// rollover.mjs: drive whole contextd rollovers with Pi's own SessionManager.
//
// Usage: node rollover.mjs SCENARIO SESSIONS_DIR [FILE]
// Env:   CONTEXTD_URL   base URL of a running contextd (e.g. http://127.0.0.1:41234)
//        CONTEXTD_TOKEN its token (X-Contextd-Token)
//
// contextd never writes a session file: this script plays the extension. Every line is written
// by @earendil-works/pi-coding-agent's SessionManager, with what contextd answered:
//   tool phase   POST /v1/sessions/{id}/rollovers {leaf_id, command_context_ready}, then Pi
//                persists the new_context tool result;
//   settle       POST …/rollovers/{rid}/settle {leaf_id} at agent_settled;
//   navigation   what navigateTree(navigate_to, {summarize: true}) does for a custom-message
//                target (Pi 0.85 agent-session.js): newLeafId = target.parentId, then
//                sm.branchWithSummary(newLeafId, summary, details, false);
//   commit       POST …/commit {summary_entry_id}, then each answered entry with
//                sm.appendCustomEntry (custom) or sm.appendCustomMessageEntry (custom_message);
//   complete     POST …/complete.
// Notes are written in every window through POST /alpha/notes/v2/write_file and its `append`
// entries (pi.appendEntry), as the extension does before returning the tool result.
//
// Scenarios:
//   fixture  FILE is a copy of tree-basic.jsonl cut before its rollover (after the last note
//            write of window 0): one rollover on it.
//   one      a new session (SessionManager.create in SESSIONS_DIR), one rollover.
//   five     a new session, five rollovers, notes written in every window.
//   crash    a new session, two rollovers; the second "crashes" after the branch summary:
//            no commit, GET /v1/sessions/{id} must report the incomplete rollover, then the
//            commit is retried with its summary_entry_id.
//   restart  a new session, three rollovers; POST /test/restart (the Go test's hook that
//            closes and reopens contextd) between every pair of steps.
//   interleave  (Pi 1.x) a new session, four rollovers. In the first three, Pi writes an entry
//            of its own between the note snapshot and the boundary: a system message (as Pi
//            1.x does when the prompt or tools change, e.g. right after navigateTree), a usage
//            entry, a context_edit of the session's first user message. The extension does not
//            call /complete for those: GET …/rollovers/{rid} must report them completed on its
//            own, and the next rollover must be accepted. Before the fourth, Pi replaces the
//            window's request and omits its answer with context edits; that rollover completes
//            as usual, and the Go test reads the archived window through history.
//
// PI_VERSION (pi-version.mjs) selects the Pi whose SessionManager writes: 0.85 (default) or
// 1.6. With 1.6 every new session starts with a system message, as Pi 1.x writes at the first
// request.
//
// Prints one JSON object: {sessionId, file, initialWindowId, rollovers: [...]}.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

process.env.PI_CODING_AGENT_DIR ??= join(mkdtempSync(join(tmpdir(), "pi-rollover-")), "agent");

const { piLine, piVersion, importPi } = await import("./pi-version.mjs");
const { SessionManager } = await importPi();
const pi1 = piLine !== "0.85";

const [scenario, sessionsDir, fixtureFile] = process.argv.slice(2);
const BASE = process.env.CONTEXTD_URL;
const TOKEN = process.env.CONTEXTD_TOKEN ?? "";
if (!scenario || !sessionsDir || !BASE) {
	console.error("usage: CONTEXTD_URL=… CONTEXTD_TOKEN=… node rollover.mjs SCENARIO SESSIONS_DIR [FILE]");
	process.exit(2);
}

function fail(msg) {
	throw new Error(msg);
}

async function call(method, path, body, { expect = [200, 201] } = {}) {
	const res = await fetch(BASE + path, {
		method,
		headers: { "X-Contextd-Token": TOKEN, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
		body: body === undefined ? undefined : JSON.stringify(body),
		signal: AbortSignal.timeout(60_000), // a stuck contextd fails the run instead of hanging it
	});
	const text = await res.text();
	if (!expect.includes(res.status)) fail(`${method} ${path}: ${res.status} ${text}`);
	return text ? JSON.parse(text) : null;
}
const post = (path, body = {}, opts) => call("POST", path, body, opts);
const get = (path) => call("GET", path);

// ---------------------------------------------------------------------------
// Message builders (pi-ai types.d.ts shapes).

const MODEL = { api: "openai-codex-responses", provider: "openai-codex", model: "gpt-5.5" };
const usage = () => ({ input: 100, output: 20, cacheRead: 0, cacheWrite: 0, totalTokens: 120, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } });
let callN = 0;
const toolCall = (name, args) => ({ type: "toolCall", id: `call_${++callN}`, name, arguments: args });
const user = (text) => ({ role: "user", content: text, timestamp: Date.now() });
const assistant = (content, stopReason = "stop") => ({
	role: "assistant",
	content: typeof content === "string" ? [{ type: "text", text: content }] : content,
	...MODEL,
	usage: usage(),
	stopReason,
	timestamp: Date.now(),
});
const toolResult = (c, text) => ({
	role: "toolResult",
	toolCallId: c.id,
	toolName: c.name,
	content: [{ type: "text", text }],
	isError: false,
	timestamp: Date.now(),
});

// appendPlanned appends contextd's planned entries as the extension does; beforeLast, when
// set, runs before the last entry (Pi writing an entry of its own in between).
function appendPlanned(sm, entries, beforeLast) {
	const ids = [];
	for (const [i, e] of entries.entries()) {
		if (beforeLast && i === entries.length - 1) beforeLast();
		if (e.type === "custom") ids.push(sm.appendCustomEntry(e.customType, e.data));
		else if (e.type === "custom_message") ids.push(sm.appendCustomMessageEntry(e.customType, e.content, e.display, e.details));
		else fail(`unknown planned entry type ${e.type}`);
	}
	return ids;
}

const systemMessage = (content) => ({ role: "system", content, sections: { base: content }, timestamp: Date.now() });

// piOwnEntry appends the entry Pi 1.x writes between the snapshot and the boundary in the
// interleave scenario's rollover w, and returns its id.
function piOwnEntry(sm, w) {
	switch (w) {
		case 0:
			return sm.appendMessage(systemMessage(`Prompt patch after rollover ${w}.`));
		case 1:
			return sm.appendUsage("summary", MODEL.provider, MODEL.model, usage(), "branch summary").id;
		case 2:
			return sm.appendContextEdit(firstUserId, { content: "Start the work (edited by Pi)." });
	}
	return null;
}

// ---------------------------------------------------------------------------

let firstUserId = null;
let restarts = 0;
const between = async () => {
	if (scenario !== "restart") return;
	await post("/test/restart", {});
	restarts++;
};

// openSession returns a SessionManager on a registered Tree session whose branch holds a boundary.
async function openSession() {
	if (scenario === "fixture") {
		const sm = SessionManager.open(fixtureFile, sessionsDir);
		await call("PUT", `/v1/sessions/${sm.getSessionId()}`, { session_file: sm.getSessionFile(), mode: "tree" });
		return sm;
	}
	const sm = SessionManager.create("/home/dev/src/rollover-e2e", sessionsDir);
	sm.appendModelChange(MODEL.provider, MODEL.model);
	sm.appendThinkingLevelChange("high");
	if (pi1) sm.appendMessage(systemMessage("You are Pi."));
	firstUserId = sm.appendMessage(user("Start the work."));
	sm.appendMessage(assistant("Starting.")); // Pi 0.85 writes the file here, 1.x at the user message
	const id = sm.getSessionId();
	await call("PUT", `/v1/sessions/${id}`, { session_file: sm.getSessionFile(), mode: "tree" });
	const first = await post(`/v1/sessions/${id}/windows`, { leaf_id: sm.getLeafId() });
	if (!first.first) fail("the new session already had a boundary");
	appendPlanned(sm, first.append);
	return sm;
}

// writeNote runs one notes.write_file tool call through contextd.
async function writeNote(sm, path, text) {
	const c = toolCall("notes", { action: "write_file", path, text });
	sm.appendMessage(assistant([c], "toolUse"));
	const res = await post("/alpha/notes/v2/write_file", { path, text, context: { session_id: sm.getSessionId(), leaf_id: sm.getLeafId() } });
	appendPlanned(sm, res.append);
	sm.appendMessage(toolResult(c, JSON.stringify({ source: res.source, file: res.file })));
}

// work appends one window's conversation: a user request, a note write, an answer.
async function work(sm, w) {
	const request = sm.appendMessage(user(`Window ${w}: continue with step ${w}.`));
	await writeNote(sm, `window-${w}.md`, `# Window ${w}\n\nDone: step ${w}.\n`);
	await writeNote(sm, "checkpoint.md", `# Checkpoint\n\nLatest window: ${w}\n`);
	const done = sm.appendMessage(assistant(`Step ${w} is done; notes are up to date.`));
	sm.appendMessage(user(`Window ${w}: now roll over.`));
	return { request, done };
}

// rollover runs one whole rollover; crash stops after the branch summary and retries the
// commit from GET /v1/sessions/{id}'s incomplete_rollover.
async function rollover(sm, { crash = false, interleave = null } = {}) {
	const id = sm.getSessionId();
	const nc = toolCall("new_context", {});
	sm.appendMessage(assistant([nc], "toolUse"));
	const created = await post(`/v1/sessions/${id}/rollovers`, { leaf_id: sm.getLeafId(), command_context_ready: true });
	if (created.state !== "pending" || created.merged) fail(`create: ${JSON.stringify(created)}`);
	const rid = created.rollover_id;
	const base = `/v1/sessions/${id}/rollovers/${rid}`;
	sm.appendMessage(toolResult(nc, created.tool_result)); // Pi persists the tool result before agent_settled
	await between();

	const oldLeaf = sm.getLeafId();
	const settle = await post(`${base}/settle`, { leaf_id: oldLeaf });
	if (settle.navigate_to !== created.rollover.boundary_entry_id || settle.summarize !== true || settle.archived_leaf_id !== oldLeaf)
		fail(`settle: ${JSON.stringify(settle)}`);
	await between();

	// navigateTree(settle.navigate_to, {summarize: true}) for a custom-message target.
	const target = sm.getEntry(settle.navigate_to);
	if (!target || target.type !== "custom_message") fail(`navigate_to ${settle.navigate_to} is not a custom message`);
	const newLeafId = target.parentId;
	if (newLeafId !== settle.summary_parent_id) fail(`summary parent ${newLeafId} != ${settle.summary_parent_id}`);
	const summaryText = `## Goal\nRollover ${rid}\n\n## Progress\nArchived the window of boundary ${settle.navigate_to}.`;
	const summaryId = sm.branchWithSummary(newLeafId, summaryText, { readFiles: [], modifiedFiles: [] }, false);
	const summary = sm.getEntry(summaryId);
	if (summary.fromId !== oldLeaf || summary.parentId !== newLeafId) fail(`branch summary ${JSON.stringify(summary)}`);

	let incomplete = null;
	if (crash) {
		// The extension died before the commit. On resume it asks contextd.
		const st = await get(`/v1/sessions/${id}`);
		incomplete = st.incomplete_rollover;
		if (!st.rollover || st.rollover.rollover_id !== rid || st.rollover.state !== "settled") fail(`session rollover: ${JSON.stringify(st.rollover)}`);
		if (!incomplete || incomplete.rollover_id !== rid || incomplete.summary_entry_id !== summaryId || incomplete.state !== "settled" || incomplete.missing.length !== 3)
			fail(`incomplete_rollover: ${JSON.stringify(incomplete)}`);
	}
	await between();

	const commit = await post(`${base}/commit`, { summary_entry_id: crash ? incomplete.summary_entry_id : summaryId });
	if (commit.append.length !== 3) fail(`commit: ${JSON.stringify(commit)}`);
	const again = await post(`${base}/commit`, { summary_entry_id: summaryId });
	if (JSON.stringify(again.append) !== JSON.stringify(commit.append)) fail("a repeated commit answered another plan");
	const interleaved = [];
	const [manifestId, snapshotId, nextBoundaryId] = appendPlanned(
		sm,
		commit.append,
		interleave === null ? undefined : () => interleaved.push(piOwnEntry(sm, interleave)),
	);
	await between();

	let autoCompleted = false;
	if (interleaved.length > 0) {
		// No /complete: contextd must see the entries on its own.
		const info = await get(base);
		if (info.state !== "completed") fail(`rollover with ${JSON.stringify(sm.getEntry(interleaved[0]))} before its boundary: ${JSON.stringify(info)}`);
		autoCompleted = true;
	} else {
		const done = await post(`${base}/complete`);
		if (done.state !== "completed") fail(`complete: ${JSON.stringify(done)}`);
	}
	return {
		rolloverId: rid,
		boundaryEntryId: settle.navigate_to,
		archivedLeafId: oldLeaf,
		summaryId,
		manifestId,
		snapshotId,
		nextBoundaryId,
		windowId: created.rollover.window.currentWindowId,
		nextWindowId: commit.window.currentWindowId,
		windowNumber: commit.window.windowNumber,
		crashed: crash,
		incomplete,
		interleaved,
		autoCompleted,
	};
}

const sm = await openSession();
const initial = await get(`/v1/sessions/${sm.getSessionId()}`);
const out = { piVersion, sessionId: sm.getSessionId(), file: sm.getSessionFile(), initialWindowId: initial.window.currentWindowId, rollovers: [] };
const counts = { fixture: 1, one: 1, five: 5, crash: 2, restart: 3, interleave: 4 };
if (!(scenario in counts)) fail(`unknown scenario ${scenario}`);
if (scenario === "interleave" && !pi1) fail("the interleave scenario needs Pi 1.x (PI_VERSION=1.6)");
for (let w = 0; w < counts[scenario]; w++) {
	const ids = scenario !== "fixture" ? await work(sm, w) : null;
	let edited = null;
	if (scenario === "interleave" && w === 3) {
		// Context edits inside the window that this rollover archives: its request replaced,
		// its answer omitted. History must show the archived window as the model last saw it.
		edited = { replaced: ids.request, omitted: ids.done, replacement: `Window ${w}: (request edited by Pi).` };
		sm.appendContextEdit(ids.request, { content: edited.replacement });
		sm.appendContextEdit(ids.done, null);
	}
	const interleave = scenario === "interleave" && w < 3 ? w : null;
	out.rollovers.push({ ...(await rollover(sm, { crash: scenario === "crash" && w === 1, interleave })), edited });
}
// The continuation turn of the last window.
sm.appendMessage(assistant("Read the hinted notes; continuing."));
out.leafId = sm.getLeafId();
out.restarts = restarts;
process.stdout.write(JSON.stringify(out) + "\n");
