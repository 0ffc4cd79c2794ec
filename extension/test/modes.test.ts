// Each mode's installer over a fake ExtensionAPI (test/fakepi.ts): what it
// registers, and what its handlers do with Pi and contextd, without Pi.
// The real-Pi behaviour is proven by e2e/piext_*_test.go on both Pis.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ContextdError } from "../src/client.ts";
import { UnreachableError } from "../src/transport.ts";
import { NO_SESSION_FILE } from "../src/lifecycle.ts";
import { installLocal, NEW_WINDOW_RESULT } from "../src/modes/local.ts";
import { installOff } from "../src/modes/off.ts";
import { installRemote, loadSpecs } from "../src/modes/remote.ts";
import { CAPTURE_MESSAGE, installTree, SWITCH_WAITS } from "../src/modes/tree.ts";
import { CAPTURE_ARGUMENT } from "../src/command.ts";
import { GUARD_REFUSAL, GUARD_WARNING } from "../src/quality.ts";
import { NAMESPACE_SPECS } from "../src/remote.ts";
import { FakeCtx, fakeHost } from "./fakepi.ts";
import { replacedDuringSummaryNotice, resetHandoff } from "../src/handoff.ts";
import { STOPPING_THROUGH_COMPACTION } from "../src/escape.ts";
import { COMPACT_WAITS, TREE_WAITS } from "../src/summary_commands.ts";
import { RELOADED_DURING_SUMMARY } from "../src/rollover.ts";
import { PENDING_FOR_MODEL, PENDING_FOR_PERSON } from "../src/pending.ts";

const boundaryPlan = {
	append: [{ type: "custom_message", customType: "codex-context-window", content: "<context_window>", display: true, details: { id: "m0" } }],
	window: { windowNumber: 1 },
};
const boundaryEntry = (n: number) => ({
	type: "custom_message",
	customType: "codex-context-window",
	details: { protocol: 1, id: `m${n}`, contextManagement: { protocol: 1, kind: "window", firstWindowId: "w0", currentWindowId: `w${n}`, windowNumber: n } },
});

test("off registers only /contextd: no hooks, no tools", () => {
	const f = fakeHost("off");
	installOff(f.host, f.say);
	assert.deepEqual([f.pi.events(), f.pi.tools.length, [...f.pi.commands.keys()]], [[], 0, ["contextd"]]);
});

test("off: /contextd answers in the extension (never a prompt) and /contextd mode tree turns it on again", async () => {
	const f = fakeHost("off");
	installOff(f.host, f.say);
	const ctx = new FakeCtx();
	const run = (args: string) => f.pi.commands.get("contextd")?.(args, ctx.ctx);
	const saved = process.env.CONTEXTD_MODE;
	try {
		await run("");
		await run("new");
		await run("mode weird");
		await run(CAPTURE_ARGUMENT);
		assert.equal(ctx.reloads, 0);
		await run("mode tree");
		assert.equal(process.env.CONTEXTD_MODE, "tree");
		assert.equal(ctx.reloads, 1);
	} finally {
		if (saved === undefined) delete process.env.CONTEXTD_MODE;
		else process.env.CONTEXTD_MODE = saved;
	}
	const turnOn = "/contextd mode local (or tree, remote) turns context management on in this Pi";
	assert.deepEqual(ctx.notices, [
		`info: contextd mode: off\ncontextd is off in this Pi: no context management; ${turnOn}`,
		`info: contextd is off in this Pi: no context management: /contextd new needs local or tree mode; ${turnOn}`,
		'info: /contextd mode takes one of local, tree, remote, off, not "weird"',
		'info: contextd mode: tree in this Pi process (CONTEXTD_MODE, or "contextd": {"mode": …} in settings.json, makes it lasting)',
	]);
});

test("local registers its hooks, four tools in order and /contextd", () => {
	const f = fakeHost("local");
	installLocal(f.host, f.say);
	// session_start and session_tree twice and turn_end three times: view.ts's handlers redraw the status line, Local's turn_end performs the rollover.
	// session_before_compact: Pi's compaction summarizes the current window only (compaction.ts).
	assert.deepEqual(f.pi.events(), ["context", "input", "message_end", "session_before_compact", "session_shutdown", "session_start×2", "session_tree×2", "turn_end×3"]);
	assert.deepEqual(
		f.pi.tools.map((t) => t.name),
		["new_context", "get_context_remaining", "history", "notes"],
	);
	assert.deepEqual([...f.pi.commands.keys()], ["contextd"]);
});

test("tree adds input holding, agent events and /compact; the capture is /contextd's, no command of its own", () => {
	const f = fakeHost("tree");
	installTree(f.host, f.say);
	assert.deepEqual(f.pi.events(), ["agent_settled", "agent_start", "context", "input", "message_end", "message_start", "session_before_compact", "session_before_fork", "session_before_switch", "session_before_tree", "session_shutdown", "session_start×3", "session_tree×2", "turn_end×3"]);
	assert.deepEqual(
		f.pi.tools.map((t) => t.name),
		["new_context", "get_context_remaining", "history", "notes"],
	);
	assert.deepEqual([...f.pi.commands.keys()], ["contextd"]);
});

test("remote registers the Codex wire hooks and three tools; no local index hooks", () => {
	const f = fakeHost("remote");
	installRemote(f.host, f.say);
	assert.deepEqual(f.pi.events(), ["before_provider_request", "context", "message_end", "session_before_compact", "session_shutdown", "session_start×2", "session_tree", "turn_end×2"]);
	assert.deepEqual(
		f.pi.tools.map((t) => t.name),
		["new_context", "history", "notes"],
	);
	assert.deepEqual([...f.pi.commands.keys()], ["contextd"]);
});

test("remote with an unusable schema file: a second session_start says so and Codex requests fail", async () => {
	const f = fakeHost("remote", { codexSchemaFile: "/nope/protocol.json" });
	installRemote(f.host, f.say);
	assert.deepEqual(f.pi.events(), ["before_provider_request", "context", "message_end", "session_before_compact", "session_shutdown", "session_start×3", "session_tree", "turn_end×2"]);
	const ctx = new FakeCtx();
	ctx.model = { api: "openai-codex-responses", provider: "openai-codex", id: "gpt" };
	const [h] = f.pi.handlers.get("before_provider_request") ?? [];
	assert.throws(() => h({ payload: {} }, ctx.ctx), /the Codex schema file \/nope\/protocol\.json cannot be used/);
	assert.equal(loadSpecs(undefined).specs, NAMESPACE_SPECS);
	assert.match(loadSpecs("/x", () => "{").error, /^contextd: the Codex schema file \/x cannot be used: .*; fix the file or unset CONTEXTD_CODEX_SCHEMA \/ codexSchemaFile$/);
});

test("local session_start registers the session with Pi's version and opens window 0 on a branch without one", async () => {
	const f = fakeHost("local", {}, "0.85.1");
	f.contextd.answers = { "register-session": {}, "session-windows": boundaryPlan };
	installLocal(f.host, f.say);
	const ctx = new FakeCtx("s1");
	await f.pi.emit("session_start", { reason: "startup" }, ctx);
	assert.deepEqual(f.contextd.calls, ["register-session", "session-windows"]);
	assert.deepEqual(f.contextd.bodies[0], { session_file: "/sessions/s1.jsonl", mode: "local", agent_name: "/root", pi_version: "0.85.1", pid: process.pid });
	// Pi 0.85 before the first assistant message: the leaf is not on disk yet.
	assert.deepEqual(f.contextd.bodies[1], {});
	assert.deepEqual(f.pi.log, ["sendMessage codex-context-window {}"]);
	// A branch that has a boundary gets none.
	ctx.branch = [boundaryEntry(0)];
	await f.pi.emit("session_start", { reason: "reload" }, ctx);
	assert.deepEqual(f.contextd.calls, ["register-session", "session-windows", "register-session"]);
});

test("window 0's answer finishing an interrupted rollover: manifest and snapshot appended first, then the boundary; /contextd finish says so", async () => {
	const f = fakeHost("local", {}, "1.6.0");
	const finishPlan = {
		finish: [
			{ type: "custom", customType: "codex-context-tree-archive", data: {} },
			{ type: "custom", customType: "codex-context-note-snapshot", data: {} },
		],
		rollover_id: "r1",
		...boundaryPlan,
	};
	f.contextd.answers = { "register-session": {}, "session-windows": finishPlan, "rollover-complete": { state: "completed" } };
	installLocal(f.host, f.say);
	const ctx = new FakeCtx("s1");
	await f.pi.emit("session_start", { reason: "startup" }, ctx);
	assert.deepEqual(f.pi.log, ["appendEntry codex-context-tree-archive", "appendEntry codex-context-note-snapshot", "sendMessage codex-context-window {}"]);
	await f.pi.commands.get("contextd")?.("finish", ctx.ctx);
	assert.deepEqual(ctx.notices, [
		"info: contextd: finished the interrupted rollover r1: appended the archive marker, the notes snapshot and the new window's boundary",
	]);
	assert.deepEqual(f.contextd.calls.slice(-3), ["get-session", "session-windows", "rollover-complete r1"]);
});

test("/contextd finish never drops a failed complete: the person is told in one sentence, with no HTTP route", async () => {
	const plan = { finish: [{ type: "custom", customType: "codex-context-tree-archive", data: {} }], rollover_id: "r1", ...boundaryPlan };
	for (const [complete, want] of [
		[
			{ state: "committed", waiting_for: ["codex-context-window"] },
			"info: contextd: the interrupted rollover r1 is not finished: this branch lacks its codex-context-window after its branch summary; use /tree to go to that summary and run /contextd finish there",
		],
		[
			new ContextdError("contextd: rollover r1 is aborted; POST /v1/sessions/s1/rollovers", 409, "conflict"),
			"info: contextd: the interrupted rollover r1 could not be finished (contextd answered 409); /contextd shows where it stands and /contextd finish tries again",
		],
	] as const) {
		const f = fakeHost("local", {}, "1.6.0");
		f.contextd.answers = { "register-session": {}, "session-windows": plan, "rollover-complete": complete };
		installLocal(f.host, f.say);
		const ctx = new FakeCtx("s1");
		await f.pi.emit("session_start", { reason: "startup" }, ctx);
		await f.pi.commands.get("contextd")?.("finish", ctx.ctx);
		assert.deepEqual(ctx.notices, [want]);
	}
});

test("local: an interrupted rollover (settled, Pi idle) is dropped by /contextd finish; a refused new_context tells the model and the person without HTTP routes", async () => {
	const f = fakeHost("local", {}, "1.6.0");
	const rollover = { rollover_id: "r9", mode: "local", state: "settled", window: { windowNumber: 0 } };
	f.contextd.answers = { "register-session": {}, "session-windows": boundaryPlan, "get-session": { rollover, incomplete_rollover: null }, "rollover-abort": { state: "aborted" } };
	installLocal(f.host, f.say);
	const ctx = new FakeCtx("s1");
	ctx.branch = [boundaryEntry(0)];
	await f.pi.emit("session_start", { reason: "startup" }, ctx);
	await f.pi.commands.get("contextd")?.("", ctx.ctx);
	assert.ok(ctx.notices[0].includes("rollover r9: settled (interrupted, nothing of it is in the session file: /contextd finish drops it)"), ctx.notices[0]);
	await f.pi.commands.get("contextd")?.("finish", ctx.ctx);
	assert.equal(ctx.notices[1], "info: contextd: the interrupted rollover r9 had put nothing in the session file, so it is dropped and window 0 goes on; the model's next new_context (or /contextd new) starts the next window");
	assert.equal(f.contextd.calls.at(-1), "rollover-abort r9");
	f.contextd.answers["rollover-create"] = new ContextdError("contextd: a rollover is already pending; abort it with POST /v1/sessions/s1/rollovers/r9/abort", 409, "rollover_pending");
	f.contextd.answers["session-context"] = { mode: "local", awaiting_file: false, needs_boundary: false, window_note_writes: 1, projection: { start_at: null, drop: [] }, problems: [] };
	const r = await f.pi.tool("new_context").execute("t", {}, undefined, undefined, ctx.ctx);
	assert.deepEqual(r.content, [{ type: "text", text: PENDING_FOR_MODEL }]);
	assert.equal(ctx.notices[2], `warning: ${PENDING_FOR_PERSON}`);
});

test("concurrent_writers from the registration and from /context is shown once per session, as a warning", async () => {
	const f = fakeHost("local", {}, "1.6.0");
	const problems = [{ reason: "concurrent_writers", detail: "2 Pi processes (pid 1, pid 2) have this session open" }];
	f.contextd.answers = { "register-session": { problems }, "session-windows": boundaryPlan, "session-context": { mode: "local", awaiting_file: false, needs_boundary: false, projection: { start_at: null, drop: [] }, problems } };
	installLocal(f.host, f.say);
	const ctx = new FakeCtx("s1");
	await f.pi.emit("session_start", { reason: "startup" }, ctx);
	await f.pi.emit("context", { messages: [] }, ctx);
	assert.deepEqual(ctx.notices, ["warning: contextd: 2 Pi processes (pid 1, pid 2) have this session open"]);
});

test("a session without a file is told it needs one; its tools say the same", async () => {
	const f = fakeHost("local");
	installLocal(f.host, f.say);
	const ctx = new FakeCtx("s1", null);
	await f.pi.emit("session_start", { reason: "startup" }, ctx);
	assert.deepEqual(ctx.notices, [`error: contextd: ${NO_SESSION_FILE}`]);
	await assert.rejects(f.pi.tool("new_context").execute("t", {}, undefined, undefined, ctx.ctx), { message: NO_SESSION_FILE });
	assert.deepEqual(f.contextd.calls, []);
});

test("contextd unreachable at start: one error line; the provider context is left alone", async () => {
	const f = fakeHost("local");
	f.failConnect(new ContextdError("contextd is not reachable at http://127.0.0.1:7467; run `contextd serve`"));
	installLocal(f.host, f.say);
	const ctx = new FakeCtx();
	await f.pi.emit("session_start", { reason: "startup" }, ctx);
	assert.deepEqual(ctx.notices, ["error: contextd is not reachable at http://127.0.0.1:7467; run `contextd serve`"]);
	assert.deepEqual(await f.pi.emit("context", { messages: [] }, ctx), [undefined]);
});

test("contextd unreachable at session_start: the sentence ends \", then /reload\" (the extension connects only at session_start)", async () => {
	const f = fakeHost("local");
	f.failConnect(new UnreachableError("contextd is not running for the state directory /s (no /s/contextd.json); run `contextd serve` in another terminal", ""));
	installLocal(f.host, f.say);
	const ctx = new FakeCtx();
	await f.pi.emit("session_start", { reason: "startup" }, ctx);
	assert.deepEqual(ctx.notices, ["error: contextd is not running for the state directory /s (no /s/contextd.json); run `contextd serve` in another terminal, then /reload"]);
});

test("local new_context opens a rollover; the batch's turn_end settles, commits and steers contextd's boundary; input meanwhile is held and queued after it", async () => {
	const f = fakeHost("local");
	const created = { rollover_id: "r1", tool_result: NEW_WINDOW_RESULT, merged: false };
	f.contextd.answers = { "register-session": {}, "session-context": { window_note_writes: 0 }, "rollover-create": created, "rollover-settle": { state: "settled" }, "rollover-commit": boundaryPlan };
	installLocal(f.host, f.say);
	const ctx = new FakeCtx();
	ctx.branch = [boundaryEntry(0), { type: "message", message: { role: "assistant" } }];
	await f.pi.emit("session_start", { reason: "startup" }, ctx);
	await f.pi.emit("message_end", { message: { role: "assistant", content: [{ type: "toolCall", name: "new_context" }] } }, ctx);
	const r = await f.pi.tool("new_context").execute("t", {}, undefined, undefined, ctx.ctx);
	assert.equal(r.content[0].text, `${NEW_WINDOW_RESULT}\n${GUARD_WARNING}`);
	assert.deepEqual(r.details, { rollover_id: "r1", merged: false, notes_warning: true, window: { windowNumber: 1 }, mode: "local" });
	assert.deepEqual(f.contextd.calls.slice(-2), ["session-context", "rollover-create"]);
	assert.deepEqual(f.contextd.bodies.at(-1), { leaf_id: "leaf1" });
	assert.deepEqual(f.pi.log, [], "nothing is sent before the batch ends");
	assert.deepEqual(await f.pi.emit("input", { text: "also this", source: "rpc", streamingBehavior: "steer" }, ctx), [{ action: "handled" }]);
	await f.pi.emit("turn_end", {}, ctx);
	assert.deepEqual(f.contextd.calls.slice(-2), ["rollover-settle r1", "rollover-commit r1"]);
	assert.deepEqual(f.pi.log, ['sendMessage codex-context-window {"deliverAs":"steer"}', 'sendUserMessage also this {"deliverAs":"steer"}']);
});

test("the refuse guard refuses when contextd counts no note write; off asks contextd nothing before the rollover", async () => {
	const f = fakeHost("local", { notesGuard: "refuse" });
	f.contextd.answers = { "register-session": {}, "session-context": { window_note_writes: 0 } };
	installLocal(f.host, f.say);
	const ctx = new FakeCtx();
	ctx.branch = [boundaryEntry(0)];
	await f.pi.emit("session_start", { reason: "startup" }, ctx);
	const r = await f.pi.tool("new_context").execute("t", {}, undefined, undefined, ctx.ctx);
	assert.equal(r.content[0].text, GUARD_REFUSAL);
	assert.deepEqual(r.details, { refused: true, notes_guard: "refuse" });
	assert.deepEqual(f.contextd.calls, ["register-session", "session-context"]);
	const g = fakeHost("local", { notesGuard: "off" });
	g.contextd.answers = { "register-session": {}, "rollover-create": { rollover_id: "r1", tool_result: NEW_WINDOW_RESULT, merged: false } };
	installLocal(g.host, g.say);
	await g.pi.emit("session_start", { reason: "startup" }, ctx);
	await g.pi.tool("new_context").execute("t", {}, undefined, undefined, ctx.ctx);
	assert.deepEqual(g.contextd.calls, ["register-session", "rollover-create"]);
});

test("the context hook applies contextd's projection; a failure is said once until it changes", async () => {
	const f = fakeHost("local");
	const drop = { role: "custom", custom_type: "codex-context-window", window_id: "w0" };
	f.contextd.answers = { "register-session": {}, "session-context": { mode: "local", awaiting_file: false, needs_boundary: false, projection: { start_at: null, drop: [drop] } } };
	installLocal(f.host, f.say);
	const ctx = new FakeCtx();
	ctx.branch = [boundaryEntry(0)];
	await f.pi.emit("session_start", { reason: "startup" }, ctx);
	const w0 = { role: "custom", customType: "codex-context-window", details: { contextManagement: { currentWindowId: "w0" } } };
	const user = { role: "user", content: "hi" };
	assert.deepEqual(await f.pi.emit("context", { messages: [w0, user] }, ctx), [{ messages: [user] }]);
	f.contextd.answers["session-context"] = new ContextdError("contextd: boom", 500);
	await f.pi.emit("context", { messages: [user] }, ctx);
	await f.pi.emit("context", { messages: [user] }, ctx);
	assert.deepEqual(ctx.notices, ["error: contextd: boom; this request goes without context management until contextd answers"]);
});

// contextd's refusal of a session too large for its memory limit (store/toolarge.go).
const tooLargeDetail = "this session has more than 285975 entries, more than contextd's memory limit (--memory-limit 128MiB) can index; restart contextd with --memory-limit 1GiB and /reload, or start a new Pi session (/new)";
const tooLarge = () => new ContextdError(`contextd: ${tooLargeDetail}`, 507, "session_too_large");
const tooLargeNotice = `warning: contextd: ${tooLargeDetail}; until then Pi uses its own context`;

test("session_too_large at registration: one warning with contextd's sentence; the context hook leaves Pi's context alone and asks contextd nothing; the footer says why", async () => {
	for (const mode of ["local", "tree"] as const) {
		const f = fakeHost(mode);
		f.contextd.answers = { "register-session": tooLarge() };
		if (mode === "local") installLocal(f.host, f.say);
		else installTree(f.host, f.say);
		const ctx = new FakeCtx();
		await f.pi.emit("session_start", { reason: "startup" }, ctx);
		const user = { role: "user", content: "hi" };
		assert.deepEqual(await f.pi.emit("context", { messages: [user] }, ctx), [undefined], mode);
		assert.deepEqual(await f.pi.emit("context", { messages: [user] }, ctx), [undefined], mode);
		await f.pi.emit("turn_end", {}, ctx);
		assert.equal(ctx.statuses.get("contextd"), `contextd ${mode} · session too large for --memory-limit: Pi's own context`, mode);
		assert.deepEqual(ctx.notices, [tooLargeNotice], mode);
		assert.deepEqual(f.contextd.calls, ["register-session"], mode);
	}
});

test("session_too_large from /context (the file grew past the limit): said once; later turns keep Pi's context and ask contextd nothing; tools answer the sentence", async () => {
	const f = fakeHost("local");
	f.contextd.answers = { "register-session": {}, "session-context": tooLarge() };
	installLocal(f.host, f.say);
	const ctx = new FakeCtx();
	ctx.branch = [boundaryEntry(0)];
	await f.pi.emit("session_start", { reason: "startup" }, ctx);
	const user = { role: "user", content: "hi" };
	assert.deepEqual(await f.pi.emit("context", { messages: [user] }, ctx), [undefined]);
	assert.deepEqual(await f.pi.emit("context", { messages: [user] }, ctx), [undefined]);
	assert.deepEqual(ctx.notices, [tooLargeNotice]);
	assert.deepEqual(f.contextd.calls, ["register-session", "session-context"]);
	await assert.rejects(f.pi.tool("new_context").execute("t", {}, undefined, undefined, ctx.ctx), { message: `contextd: ${tooLargeDetail}; until then Pi uses its own context` });
});

test("local history/notes: unknown actions are refused; a note write appends contextd's entry before the result", async () => {
	const f = fakeHost("local");
	f.contextd.answers = {
		"register-session": {},
		"notes-write_file": { ok: true, append: [{ type: "custom", customType: "codex-context-note", data: { path: "a" } }] },
	};
	installLocal(f.host, f.say);
	const ctx = new FakeCtx();
	ctx.branch = [boundaryEntry(0)];
	await f.pi.emit("session_start", { reason: "startup" }, ctx);
	await assert.rejects(f.pi.tool("history").execute("t", { action: "drop_all" }, undefined, undefined, ctx.ctx), {
		message: 'unknown history action "drop_all"; use one of list_windows, list_items, read_item, search_contents',
	});
	const r = await f.pi.tool("notes").execute("t", { action: "write_file", path: "a", text: "x", query: undefined }, undefined, undefined, ctx.ctx);
	assert.equal(r.content[0].text, '{"ok":true}');
	assert.deepEqual(f.contextd.bodies.at(-1), { path: "a", text: "x", context: { session_id: "s1", current_agent_name: "/root", leaf_id: "leaf1" } });
	assert.deepEqual(f.pi.log, ["appendEntry codex-context-note"]);
});

/** A Tree session registered and captured, with a rollover contextd plans and settles. */
async function treeSession(settle: unknown = { navigate_to: "b0", summarize: true }, piVersion = "1.6.0") {
	const f = fakeHost("tree", { notesGuard: "off" }, piVersion);
	f.contextd.answers = {
		"register-session": {},
		"get-session": { rollover: null },
		"rollover-create": { rollover_id: "r1", tool_result: "Rollover planned.", merged: false },
		"rollover-settle": settle,
		"rollover-commit": { append: boundaryPlan.append },
		"rollover-complete": {},
	};
	installTree(f.host, f.say);
	const ctx = new FakeCtx();
	ctx.branch = [boundaryEntry(0)];
	await f.pi.emit("session_start", { reason: "startup" }, ctx);
	const navigations: string[] = [];
	const cmd = {
		...ctx.ctx,
		navigateTree: async (id: string) => {
			navigations.push(id);
			ctx.leafEntry = { id: "sum1", type: "branch_summary" };
			return { cancelled: false };
		},
	};
	await f.pi.commands.get("contextd")?.(CAPTURE_ARGUMENT, cmd);
	return { f, ctx, navigations };
}

test("tree: session_start sends the capture command; new_context plans, agent_settled rolls over", async () => {
	const { f, ctx, navigations } = await treeSession();
	assert.deepEqual(f.pi.log, [`sendUserMessage ${CAPTURE_MESSAGE} {"expandPromptTemplates":true}`]);
	const r = await f.pi.tool("new_context").execute("t", {}, undefined, undefined, ctx.ctx);
	assert.deepEqual([r.content[0].text, r.terminate], ["Rollover planned.", true]);
	assert.deepEqual(f.contextd.bodies.at(-1), { leaf_id: "leaf1", command_context_ready: true });
	await f.pi.emit("agent_settled", {}, ctx);
	assert.deepEqual(navigations, ["b0"]);
	assert.deepEqual(f.contextd.calls.slice(-3), ["rollover-settle r1", "rollover-commit r1", "rollover-complete r1"]);
	assert.deepEqual(f.pi.log.slice(1), ['sendMessage codex-context-window {"triggerTurn":true}']);
	assert.equal(f.timers.length, 1);
	// The next agent_settled has nothing pending.
	await f.pi.emit("agent_settled", {}, ctx);
	assert.equal(f.contextd.calls.filter((c) => c.startsWith("rollover-settle")).length, 1);
});

test("tree /contextd new: the footer names the new window once its boundary is on the branch (no model turn follows to redraw it)", async () => {
	const { f, ctx } = await treeSession();
	// Window 0 holds some work (/contextd new refuses an empty window).
	ctx.branch = [boundaryEntry(0), { id: "u1", type: "message" }];
	// Tree: after navigation the active path holds the branch summary, not
	// window 0's boundary; the new boundary is appended after it.
	const cmd = {
		...ctx.ctx,
		isIdle: () => true,
		navigateTree: async () => {
			ctx.branch = [{ id: "sum1", type: "branch_summary" }];
			ctx.leafEntry = { id: "sum1", type: "branch_summary" };
			return { cancelled: false };
		},
	};
	f.pi.onSend = (m) => {
		if (m.customType === "codex-context-window") ctx.branch = [...ctx.branch, boundaryEntry(1)];
	};
	ctx.usage = { tokens: 300, contextWindow: 200_000, percent: 0.15 };
	await f.pi.commands.get("contextd")?.("new", cmd);
	assert.deepEqual([f.pi.log.slice(1), ctx.notices.filter((n) => !n.startsWith("info: "))], [['sendMessage codex-context-window {"triggerTurn":false}'], []]);
	assert.equal(ctx.statuses.get("contextd"), "contextd tree · window 1 · 0% used");
});

test("/contextd new in a window that holds nothing yet answers so in one line and asks contextd nothing", async () => {
	const local = async () => {
		const f = fakeHost("local");
		f.contextd.answers = { "register-session": {}, "get-session": { rollover: null } };
		installLocal(f.host, f.say);
		const ctx = new FakeCtx();
		await f.pi.emit("session_start", { reason: "startup" }, ctx);
		return { f, ctx };
	};
	for (const mode of ["tree", "local"] as const) {
		const { f, ctx } = mode === "tree" ? await treeSession() : await local();
		ctx.branch = [boundaryEntry(0), { id: "u1", type: "message" }, boundaryEntry(1)];
		const calls = f.contextd.calls.length;
		await f.pi.commands.get("contextd")?.("new", { ...ctx.ctx, isIdle: () => true });
		assert.deepEqual(ctx.notices.slice(-1), ["info: window 1 has nothing in it yet, so there is no window to close: run /contextd new again once it holds some work"], mode);
		assert.deepEqual(f.contextd.calls.slice(calls), [], mode);
		assert.deepEqual(f.pi.log.filter((l) => l.startsWith("sendMessage") || l.startsWith("appendEntry")), [], mode);
	}
});

test("tree: a /tree navigation back into window 0 redraws the footer with window 0 (no turn follows it)", async () => {
	const { f, ctx } = await treeSession();
	ctx.branch = [boundaryEntry(0), { id: "u1", type: "message" }, boundaryEntry(1)];
	ctx.usage = { tokens: 300, contextWindow: 200_000, percent: 0.15 };
	await f.pi.emit("turn_end", {}, ctx);
	assert.equal(ctx.statuses.get("contextd"), "contextd tree · window 1 · 0% used");
	ctx.branch = [boundaryEntry(0), { id: "u1", type: "message" }];
	await f.pi.emit("session_tree", { newLeafId: "u1", oldLeafId: "m1" }, ctx);
	assert.equal(ctx.statuses.get("contextd"), "contextd tree · window 0 · 0% used");
});

test("tree on Pi 0.85's order: input during the settled phase is held and delivered as a follow-up when it returns", async () => {
	const { f, ctx } = await treeSession();
	await f.pi.tool("new_context").execute("t", {}, undefined, undefined, ctx.ctx);
	const settled = f.pi.emit("agent_settled", {}, ctx);
	// Synchronous handlers, as Pi calls them while the settled handler awaits.
	assert.deepEqual(f.pi.emitSync("input", { source: "rpc", text: "typed" }, ctx), [{ action: "handled" }]);
	f.pi.emitSync("agent_start", {}, ctx);
	await settled;
	assert.deepEqual(f.pi.log.slice(-1), ['sendUserMessage typed {"deliverAs":"followUp"}']);
	assert.deepEqual(f.pi.emitSync("input", { source: "rpc", text: "later" }, ctx), [{ action: "continue" }]);
});

test("tree on Pi 1.6's order: held after the phase returned until the boundary's run starts; the hold limit timer releases otherwise", async () => {
	const { f, ctx } = await treeSession();
	await f.pi.tool("new_context").execute("t", {}, undefined, undefined, ctx.ctx);
	await f.pi.emit("agent_settled", {}, ctx);
	assert.deepEqual(f.pi.emitSync("input", { source: "interactive", text: "typed" }, ctx), [{ action: "handled" }]);
	assert.equal(f.timers[0].ms, 10_000);
	f.timers[0].fn();
	assert.deepEqual(f.pi.log.slice(-1), ['sendUserMessage typed {"deliverAs":"followUp"}']);
});

test("tree: a settle refused for open tool calls is deferred to the next agent_settled", async () => {
	const conflict = new ContextdError("contextd: tool calls call_1 of the leaf's batch are open", 409, "open_tool_calls");
	const { f, ctx, navigations } = await treeSession(conflict);
	await f.pi.tool("new_context").execute("t", {}, undefined, undefined, ctx.ctx);
	await f.pi.emit("agent_settled", {}, ctx);
	assert.deepEqual(ctx.notices, []);
	assert.deepEqual(navigations, []);
	f.contextd.answers["rollover-settle"] = { navigate_to: "b0", summarize: true };
	await f.pi.emit("agent_settled", {}, ctx);
	assert.deepEqual(navigations, ["b0"]);
});

test("tree: a session replaced while input is held: the old session's pending work does nothing to the new one and says so", async () => {
	const { f, ctx, navigations } = await treeSession();
	await f.pi.tool("new_context").execute("t", {}, undefined, undefined, ctx.ctx);
	await f.pi.emit("agent_settled", {}, ctx);
	assert.deepEqual(f.pi.emitSync("input", { source: "interactive", text: "typed" }, ctx), [{ action: "handled" }]);
	const writes = f.pi.log.length;
	// The session is replaced (/new): a new state, nothing pending or held.
	const next = new FakeCtx("s2", "/sessions/s2.jsonl");
	next.branch = [boundaryEntry(0)];
	await f.pi.emit("session_shutdown", { reason: "new" }, ctx);
	await f.pi.emit("session_start", { reason: "new" }, next);
	f.timers[0].fn();
	assert.deepEqual(f.pi.log.slice(writes), [`sendUserMessage ${CAPTURE_MESSAGE} {"expandPromptTemplates":true}`]);
	assert.deepEqual(f.said, ["contextd: delivering 1 held input(s) skipped: session s1 ended or was replaced meanwhile"]);
	await f.pi.emit("agent_settled", {}, next);
	assert.deepEqual(navigations, ["b0"]);
	assert.deepEqual(f.pi.emitSync("input", { source: "interactive", text: "new" }, next), [{ action: "continue" }]);
});

/**
 * A Tree rollover of ctx during whose branch summary Pi replaces the
 * session with a new one (/new): navigateTree tears ctx's session down and
 * starts the replacement, then ends as afterReplaced says (it may also set
 * what Pi leaves in the new editor). A fresh session s2, its branch window 0.
 */
async function rollOverReplaced(
	{ f, ctx }: Awaited<ReturnType<typeof treeSession>>,
	afterReplaced: (next: FakeCtx) => { cancelled: boolean },
	reason: "new" | "reload" = "new",
): Promise<FakeCtx> {
	const next = reason === "reload" ? new FakeCtx("s1", "/sessions/s1.jsonl") : new FakeCtx("s2", "/sessions/s2.jsonl");
	next.branch = [boundaryEntry(0)];
	await f.pi.commands.get("contextd")?.(CAPTURE_ARGUMENT, {
		...ctx.ctx,
		navigateTree: async () => {
			await f.pi.emit("session_shutdown", { reason }, ctx);
			await f.pi.emit("session_start", { reason }, next);
			return afterReplaced(next);
		},
	});
	await f.pi.tool("new_context").execute("t", {}, undefined, undefined, ctx.ctx);
	await f.pi.emit("agent_settled", {}, ctx);
	return next;
}

test("tree: /new while the summary runs: the boundary text Pi puts into the new session's editor is taken out, and the new session is told what happened to the old one", async () => {
	resetHandoff();
	const session = await treeSession();
	const { f, ctx } = session;
	const guidance = "<context_window_guidance>read notes</context_window_guidance>\n<context_window>w0</context_window>";
	ctx.branch = [{ ...boundaryEntry(0), id: "b0", content: guidance } as (typeof ctx.branch)[number]];
	// The person types /new while the summary is written: Pi tears the
	// session down and starts the next one before navigation returns.
	const next = await rollOverReplaced(session, (next) => {
		// Then navigation ends: interactive Pi puts the target's text into
		// the (shared, empty) editor (interactive-mode.js navigateTree).
		next.editor = guidance;
		ctx.leafEntry = { id: "sum1", type: "branch_summary" };
		return { cancelled: false };
	});
	assert.equal(next.editor, "");
	assert.deepEqual(next.notices, [`warning: ${replacedDuringSummaryNotice("/sessions/s1.jsonl")}`]);
	assert.deepEqual(f.said, []);
	// The old file has its summary; nothing more is written from the stale instance.
	assert.equal(f.contextd.calls.filter((c) => c.startsWith("rollover-commit")).length, 0);
});

test("tree: /new aborts the summary: the new session shows that the old branch is kept (not stderr)", async () => {
	resetHandoff();
	const session = await treeSession();
	const { f } = session;
	const next = await rollOverReplaced(session, () => ({ cancelled: true }));
	assert.deepEqual(next.notices, ["warning: contextd: new context did not happen: session s1 was replaced while its rollover ran; its branch is kept as it was"]);
	assert.deepEqual(f.said, []);
});

for (const end of ["throws", "completes"] as const) {
	test(`tree: /reload during the summary, navigation then ${end}: the reloaded extension shows the reload line (not stderr, not "the session you left")`, async () => {
		resetHandoff();
		const session = await treeSession();
		const { f, ctx } = session;
		// The reloaded instance starts in the same session (Pi 0.85:
		// session_start at once), then the old instance's navigateTree ends.
		const reloaded = await rollOverReplaced(
			session,
			() => {
				if (end === "throws") throw new Error("This extension ctx is stale after session replacement or reload");
				ctx.leafEntry = { id: "sum1", type: "branch_summary" };
				return { cancelled: false };
			},
			"reload",
		);
		assert.deepEqual(reloaded.notices, [`warning: ${RELOADED_DURING_SUMMARY}`]);
		assert.deepEqual(f.said, []);
		// Not aborted: Pi may still write the summary and the file finishes the rollover.
		assert.equal(f.contextd.calls.filter((c) => c.startsWith("rollover-abort")).length, 0);
		assert.deepEqual(ctx.notices, []);
	});
}

test("tree: /new, /resume or /fork while the summary runs is answered at once: the new session waits for Pi to stop the summary", async () => {
	const { f, ctx } = await treeSession();
	// Not during a summary: nothing to say, nothing cancelled.
	assert.deepEqual(await f.pi.emit("session_before_switch", { reason: "new" }, ctx), [undefined]);
	const during: unknown[] = [];
	await f.pi.commands.get("contextd")?.(CAPTURE_ARGUMENT, {
		...ctx.ctx,
		navigateTree: async () => {
			during.push(...(await f.pi.emit("session_before_switch", { reason: "new" }, ctx)));
			during.push(...(await f.pi.emit("session_before_fork", { entryId: "u1", position: "before" }, ctx)));
			ctx.leafEntry = { id: "sum1", type: "branch_summary" };
			return { cancelled: false };
		},
	});
	await f.pi.tool("new_context").execute("t", {}, undefined, undefined, ctx.ctx);
	await f.pi.emit("agent_settled", {}, ctx);
	assert.deepEqual(during, [undefined, undefined], "never cancelled");
	assert.deepEqual(ctx.notices.slice(0, 2), [`info: ${SWITCH_WAITS}`, `info: ${SWITCH_WAITS}`]);
});

test("tree: /tree or /compact submitted while the summary runs is refused in one warning and the editor emptied; other input passes; nothing is caught once the summary ended", async () => {
	const { f, ctx } = await treeSession();
	const during: unknown[] = [];
	await f.pi.commands.get("contextd")?.(CAPTURE_ARGUMENT, {
		...ctx.ctx,
		navigateTree: async () => {
			for (const text of ["/compact keep the port", "/tree", "hello"]) {
				ctx.editor = text;
				during.push(ctx.press("\r"), ctx.editor);
			}
			return { cancelled: false };
		},
	});
	await f.pi.tool("new_context").execute("t", {}, undefined, undefined, ctx.ctx);
	await f.pi.emit("agent_settled", {}, ctx);
	assert.deepEqual(during, [[undefined, { consume: true }], "", [undefined, { consume: true }], "", [undefined, undefined], "hello"]);
	assert.deepEqual(ctx.notices.slice(0, 2), [`warning: ${COMPACT_WAITS}`, `warning: ${TREE_WAITS}`]);
	assert.equal(ctx.terminalInput.size, 0);
});

for (const pi of ["1.6.0", "0.85.1"]) {
	test(`tree on Pi ${pi}: Escape while the summary runs stops it once (${pi === "1.6.0" ? "ctx.abort()" : "ctx.compact(), then cancelled"}); the rollover is aborted, the branch keeps its window`, async () => {
		const { f, ctx } = await treeSession(undefined, pi);
		f.contextd.answers["rollover-abort"] = {};
		const compactAnswers: unknown[] = [];
		await f.pi.commands.get("contextd")?.(CAPTURE_ARGUMENT, {
			...ctx.ctx,
			navigateTree: async () => {
				// Two handlers while the summary runs: Escape's, then the refused commands' (summary_commands.ts).
				assert.deepEqual(ctx.press("\x1b"), [{ consume: true }, undefined]);
				assert.deepEqual(ctx.press("\x1b"), [{ consume: true }, undefined], "a second Escape is caught, not counted by the editor");
				if (pi === "0.85.1") {
					// Pi's manual compaction aborts the summary, then asks the extension.
					compactAnswers.push(...(await f.pi.emit("session_before_compact", { preparation: { tokensBefore: 1 } }, ctx)));
					ctx.compactions[0]?.onError?.(new Error("Compaction cancelled"));
				}
				return { cancelled: true };
			},
		});
		await f.pi.tool("new_context").execute("t", {}, undefined, undefined, ctx.ctx);
		await f.pi.emit("agent_settled", {}, ctx);
		if (pi === "1.6.0") {
			assert.equal(ctx.aborted, true);
			assert.equal(ctx.compactions.length, 0);
		} else {
			assert.equal(ctx.aborted, false);
			assert.equal(ctx.compactions.length, 1);
			assert.deepEqual(compactAnswers, [{ cancel: true }]);
			assert.equal(f.contextd.calls.includes("session-compaction"), false, "contextd is not asked for a summary of a compaction that never runs");
		}
		assert.equal(ctx.terminalInput.size, 0, "Escape is the editor's again once the summary ended");
		assert.deepEqual(ctx.press("\x1b"), []);
		assert.deepEqual(f.contextd.calls.filter((c) => c.startsWith("rollover-abort")), ["rollover-abort r1"]);
		const told = pi === "1.6.0" ? [] : [`info: ${STOPPING_THROUGH_COMPACTION}`];
		assert.deepEqual(ctx.notices, [...told, "error: contextd: new context failed: navigation was cancelled; the old branch is kept"]);
		// A later /compact is the person's own again: contextd's summary.
		f.contextd.answers["session-compaction"] = { summary: "S", first_kept_entry_id: "e9", details: {} };
		assert.deepEqual(await f.pi.emit("session_before_compact", { preparation: { tokensBefore: 5 } }, ctx), [{ compaction: { summary: "S", firstKeptEntryId: "e9", tokensBefore: 5, details: {} } }]);
	});
}

test("tree: a replaced session's handoff leaves what the person typed in the new editor alone", async () => {
	resetHandoff();
	const session = await treeSession();
	const { ctx } = session;
	ctx.branch = [{ ...boundaryEntry(0), id: "b0", content: "<context_window>w0</context_window>" } as (typeof ctx.branch)[number]];
	const next = await rollOverReplaced(session, (next) => {
		next.editor = "my own words"; // typed before the summary ended: Pi leaves a non-empty editor alone
		ctx.leafEntry = { id: "sum1", type: "branch_summary" };
		return { cancelled: false };
	});
	assert.equal(next.editor, "my own words");
	assert.equal(next.notices.length, 1);
});

test("tree: a session that starts with a pending rollover in contextd settles it at the next agent_settled", async () => {
	const { f, ctx, navigations } = await treeSession();
	f.contextd.answers["get-session"] = { rollover: { rollover_id: "r1", state: "pending" } };
	await f.pi.emit("session_start", { reason: "resume" }, ctx);
	await f.pi.commands.get("contextd")?.(CAPTURE_ARGUMENT, { ...ctx.ctx, navigateTree: async (id: string) => {
		navigations.push(id);
		ctx.leafEntry = { id: "sum1", type: "branch_summary" };
		return { cancelled: false };
	} });
	await f.pi.emit("agent_settled", {}, ctx);
	assert.deepEqual(navigations, ["b0"]);
	// A settled (not pending) rollover is contextd's incomplete one: nothing is re-planned.
	f.contextd.answers["get-session"] = { rollover: { rollover_id: "r2", state: "settled" } };
	await f.pi.emit("session_start", { reason: "reload" }, ctx);
	await f.pi.emit("agent_settled", {}, ctx);
	assert.equal(f.contextd.calls.filter((c) => c.startsWith("rollover-settle")).length, 1);
});

test("tree /compact asks contextd for the summary; when it cannot, the compaction is cancelled", async () => {
	const { f, ctx } = await treeSession();
	f.contextd.answers["session-compaction"] = { summary: "S", first_kept_entry_id: "e9", details: { k: 1 } };
	assert.deepEqual(await f.pi.emit("session_before_compact", { preparation: { tokensBefore: 1234 } }, ctx), [
		{ compaction: { summary: "S", firstKeptEntryId: "e9", tokensBefore: 1234, details: { k: 1 } } },
	]);
	f.contextd.answers["session-compaction"] = new ContextdError("contextd: no", 409);
	assert.deepEqual(await f.pi.emit("session_before_compact", { preparation: { tokensBefore: 1 } }, ctx), [{ cancel: true }]);
	assert.deepEqual(ctx.notices, ["error: contextd: no; compaction cancelled so archived windows are not lost"]);
});

test("remote: window 0 is contextd's plan with the backend's hint; the context keeps only the current window; tools need the Codex transport", async () => {
	const f = fakeHost("remote");
	const w0 = { protocol: 1, kind: "window", firstWindowId: "w0", currentWindowId: "w0", windowNumber: 0 };
	const planned = { type: "custom_message", customType: "codex-context-window", content: "<context_window>\nRead notes/plan.md\n</context_window>", display: true, details: { protocol: 1, id: "m0", contextManagement: w0 } };
	f.contextd.answers = { "register-session": {}, "notes-thread_hint": { text: "Read notes/plan.md" }, "session-windows": { first: true, window: w0, append: [planned] } };
	installRemote(f.host, f.say);
	const ctx = new FakeCtx();
	ctx.apiKey = "tok";
	await f.pi.emit("session_start", { reason: "startup" }, ctx);
	// The hint goes to contextd, which renders the boundary; the extension appends it as planned.
	assert.deepEqual(f.contextd.bodies[f.contextd.calls.indexOf("session-windows")], { leaf_id: "leaf1", thread_hint: "Read notes/plan.md" });
	assert.equal(f.pi.sent.length, 1);
	assert.deepEqual(f.pi.sent[0].message, { customType: planned.customType, content: planned.content, display: true, details: planned.details });
	assert.deepEqual(ctx.notices, [], "no adoption: nothing to tell");
	const old = { role: "user", content: "old" };
	const b = { role: "custom", customType: "codex-context-window", details: { contextManagement: { kind: "window", currentWindowId: "w1" } } };
	assert.deepEqual(await f.pi.emit("context", { messages: [old, b, old] }, ctx), [{ messages: [b, old] }]);
	ctx.model = { api: "openai-completions", provider: "openai", id: "gpt-4o" };
	await assert.rejects(f.pi.tool("history").execute("t", { action: "list_windows" }, undefined, undefined, ctx.ctx), /the current model is openai\/gpt-4o/);
});

test("remote: two new_context calls of one message steer one boundary; the next message's call opens another", async () => {
	const f = fakeHost("remote");
	const w0 = { protocol: 1, kind: "window", firstWindowId: "w0", currentWindowId: "w0", windowNumber: 0 };
	f.contextd.answers = {
		"register-session": {},
		"notes-thread_hint": { text: "" },
		"session-windows": { first: true, window: w0, append: [{ type: "custom_message", customType: "codex-context-window", content: "c", display: true, details: { protocol: 1, id: "m0", contextManagement: w0 } }] },
	};
	installRemote(f.host, f.say);
	const ctx = new FakeCtx();
	ctx.apiKey = "tok";
	await f.pi.emit("session_start", { reason: "startup" }, ctx);
	const before = f.pi.sent.length;
	const [a, b] = await Promise.all([f.pi.tool("new_context").execute("a", {}, undefined, undefined, ctx.ctx), f.pi.tool("new_context").execute("b", {}, undefined, undefined, ctx.ctx)]);
	assert.equal(f.pi.sent.length, before + 1, "one boundary for the message");
	const da = a.details as { merged: boolean; window: unknown };
	const db = b.details as { merged: boolean; window: unknown };
	assert.deepEqual([da.merged, db.merged], [false, true]);
	assert.deepEqual(da.window, db.window);
	await f.pi.emit("turn_end", {}, ctx);
	await f.pi.tool("new_context").execute("c", {}, undefined, undefined, ctx.ctx);
	assert.equal(f.pi.sent.length, before + 2);
});

test("/contextd reports the mode and why contextd is not connected", async () => {
	const f = fakeHost("tree");
	installTree(f.host, f.say);
	const ctx = new FakeCtx();
	await f.pi.commands.get("contextd")?.("", ctx.ctx);
	assert.deepEqual(ctx.notices, ["info: contextd mode: tree\ncontextd is not connected yet\nno window on this branch yet: it starts before the first model call"]);
});

test("/contextd on a session without rollovers: GET …/rollovers answering null is no rollover, never a TypeError", async () => {
	const f = fakeHost("local");
	installLocal(f.host, f.say);
	f.contextd.answers = {
		"register-session": {},
		"session-windows": boundaryPlan,
		"get-session": { state: "ok", window: null, archives: 0, rollover: null, incomplete_rollover: null, rollover_loop: null, problems: [] },
		"rollover-log": { session_id: "s1", leaf_id: "", rollovers: null },
	};
	const ctx = new FakeCtx();
	await f.pi.emit("session_start", { reason: "startup" }, ctx);
	ctx.branch.push({ type: "custom_message", customType: "codex-context-window", details: { protocol: 1, id: "m0", contextManagement: { protocol: 1, kind: "window", firstWindowId: "w0", currentWindowId: "w0", windowNumber: 0 } } });
	await f.pi.commands.get("contextd")?.("", ctx.ctx);
	await f.pi.commands.get("contextd")?.("log", ctx.ctx);
	await f.pi.commands.get("contextd")?.("mode cloud", ctx.ctx);
	assert.deepEqual(ctx.notices, [
		"info: contextd mode: local\ncontextd: http://contextd.test (healthy)\nwindow 0 (w0)\nno pending rollover\nno rollovers yet",
		"info: no rollovers yet",
		'info: /contextd mode takes one of local, tree, remote, off, not "cloud"',
	]);
	assert.equal(ctx.statuses.get("contextd"), "contextd local · window 0");
});

// The footer after contextd comes back (a restart): the /context failure
// made it "not reachable"; whatever next finds contextd answering redraws it
// at once, not at the next turn's end.
const unreachable = () => new UnreachableError("contextd is not reachable at http://contextd.test (ECONNREFUSED); start it with `contextd serve` and retry", "ECONNREFUSED");

async function treeSessionDown() {
	const t = await treeSession();
	t.ctx.usage = { tokens: 300, contextWindow: 200_000, percent: 0.15 };
	t.f.contextd.answers["session-context"] = unreachable();
	await t.f.pi.emit("context", { messages: [] }, t.ctx);
	await t.f.pi.emit("turn_end", {}, t.ctx);
	assert.equal(t.ctx.statuses.get("contextd"), "contextd tree · not reachable: run contextd serve");
	return t;
}

test("tree: /contextd finish that finds contextd again redraws the footer as reachable, without a turn", async () => {
	const { f, ctx } = await treeSessionDown();
	f.contextd.answers["session-context"] = { mode: "tree", awaiting_file: false, needs_boundary: false, projection: { start_at: null, drop: [] } };
	await f.pi.commands.get("contextd")?.("finish", ctx.ctx);
	assert.deepEqual(ctx.notices.at(-1), "info: no interrupted rollover on this branch: nothing to finish");
	assert.equal(ctx.statuses.get("contextd"), "contextd tree · window 0 · 0% used");
});

test("tree: /contextd reporting contextd healthy redraws the footer, even when its session answer fails", async () => {
	const { f, ctx } = await treeSessionDown();
	f.contextd.answers["get-session"] = new ContextdError("contextd: boom", 500);
	await f.pi.commands.get("contextd")?.("", ctx.ctx);
	assert.match(ctx.notices.at(-1) ?? "", /contextd: http:\/\/contextd\.test \(healthy\)/);
	assert.equal(ctx.statuses.get("contextd"), "contextd tree · window 0 · 0% used");
});

test("local: a tool call contextd answers after a /context failure redraws the footer at once", async () => {
	const f = fakeHost("local", { notesGuard: "off" });
	f.contextd.answers = { "register-session": {}, "session-context": unreachable() };
	installLocal(f.host, f.say);
	const ctx = new FakeCtx();
	ctx.branch = [boundaryEntry(0)];
	ctx.usage = { tokens: 300, contextWindow: 200_000, percent: 0.15 };
	await f.pi.emit("session_start", { reason: "startup" }, ctx);
	await f.pi.emit("context", { messages: [] }, ctx);
	await f.pi.emit("turn_end", {}, ctx);
	assert.equal(ctx.statuses.get("contextd"), "contextd local · not reachable: run contextd serve");
	f.contextd.answers["notes-list_files_by_prefix"] = { source: "pi-session", files: [] };
	await f.pi.tool("notes").execute("c1", { action: "list_files_by_prefix" }, undefined, undefined, ctx.ctx);
	assert.equal(ctx.statuses.get("contextd"), "contextd local · window 0 · 0% used");
	// A request that fails leaves it as it is.
	f.contextd.answers["session-context"] = unreachable();
	await f.pi.emit("context", { messages: [] }, ctx);
	await f.pi.emit("turn_end", {}, ctx);
	assert.equal(ctx.statuses.get("contextd"), "contextd local · not reachable: run contextd serve");
});
