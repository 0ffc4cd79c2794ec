// Unit tests of the Tree rollover's settled phase with fakes of Pi's API:
// the headless stand-in for what only interactive Pi shows (editor text
// saved and restored around navigation) and for the failure policy.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ContextdError } from "../src/client.ts";
import { RELOADED_DURING_SUMMARY, type RolloverDeps, settleRollover } from "../src/rollover.ts";

const plan = [
	{ type: "custom", customType: "codex-context-tree-archive", data: { protocol: 1 } },
	{ type: "custom", customType: "codex-context-note-snapshot", data: { files: [] } },
	{ type: "custom_message", customType: "codex-context-window", content: "<context_window>", display: true, details: { id: "m1" } },
];

function fake(over: Partial<RolloverDeps> = {}, posts: Record<string, unknown> = {}) {
	const log: string[] = [];
	let editor = "half-typed request";
	let internal = false;
	const d: RolloverDeps = {
		call: async (op) => {
			const step = op.replace("rollover-", "");
			log.push(`post ${step}`);
			const v = posts[step];
			if (v instanceof Error) throw v;
			return v as never;
		},
		leafBody: () => ({ leaf_id: "leaf" }),
		navigateTree: async (id, o) => {
			log.push(`navigate ${id} summarize=${o.summarize} internal=${internal}`);
			editor = "";
			return { cancelled: false };
		},
		leafEntry: () => ({ id: "sum1", type: "branch_summary" }),
		entry: () => undefined,
		getEditorText: () => editor,
		setEditorText: (t) => {
			log.push(`setEditorText ${t}`);
			editor = t;
		},
		appendEntry: (t) => log.push(`appendEntry ${t}`),
		sendMessage: (m, o) => log.push(`sendMessage ${m.customType} triggerTurn=${o.triggerTurn}`),
		notifyError: (m) => log.push(`error ${m}`),
		setInternalNavigation: (on) => {
			internal = on;
		},
		sameSession: true,
		tellModel: (t) => log.push(`tell ${t}`),
		windowStarted: () => log.push("windowStarted"),
		...over,
	};
	return { d, log, editor: () => editor };
}

const okPosts = { settle: { navigate_to: "b0", summarize: true }, commit: { append: plan }, complete: {} };

test("settle, navigate (internal), commit, manifest and snapshot, then only the boundary triggers; editor text restored", async () => {
	const f = fake({}, okPosts);
	assert.equal(await settleRollover(f.d), "completed");
	assert.deepEqual(f.log, [
		"post settle",
		"navigate b0 summarize=true internal=true",
		"post commit",
		"appendEntry codex-context-tree-archive",
		"appendEntry codex-context-note-snapshot",
		"sendMessage codex-context-window triggerTurn=true",
		"windowStarted",
		"post complete",
		"setEditorText half-typed request",
	]);
	assert.equal(f.editor(), "half-typed request");
});

test("complete refused once the boundary is sent: the window started, and the person is told contextd did not record it (never dropped); unreached, nothing is said", async () => {
	const refused = fake({}, { ...okPosts, complete: new ContextdError("contextd: rollover r1 is aborted; POST /v1/x", 409, "conflict") });
	assert.equal(await settleRollover(refused.d), "completed");
	assert.deepEqual(refused.log.filter((l) => l.startsWith("error")), [
		"error contextd: the new context window started, but contextd did not record the rollover as finished (it answered 409); /contextd shows where it stands and /contextd finish finishes it",
	]);
	const away = fake({}, { ...okPosts, complete: new ContextdError("contextd is not reachable at http://127.0.0.1:1; run `contextd serve`") });
	assert.equal(await settleRollover(away.d), "completed");
	assert.deepEqual(away.log.filter((l) => l.startsWith("error")), []);
});

test("navigation ends, not cancelled, without a branch summary: the error alone, no window-started notice, the rollover aborted", async () => {
	const f = fake({ leafEntry: () => ({ id: "m0", type: "custom_message" }) }, { ...okPosts, abort: {} });
	assert.equal(await settleRollover(f.d), "failed");
	assert.ok(!f.log.includes("windowStarted"), f.log.join("\n"));
	assert.deepEqual(
		f.log.filter((l) => l.startsWith("error") || l.startsWith("post")),
		["post settle", "post abort", "error contextd: new context failed: navigation did not append a branch summary; run /contextd to inspect the session"],
	);
});

test("commit refused after navigation: the error alone, no window-started notice", async () => {
	const f = fake({}, { ...okPosts, commit: new ContextdError("contextd refused the commit") });
	assert.equal(await settleRollover(f.d), "failed");
	assert.ok(!f.log.includes("windowStarted"), f.log.join("\n"));
	assert.equal(f.log.filter((l) => l.startsWith("error")).length, 1);
});

test("an empty editor that navigation filled with the boundary's text is emptied again", async () => {
	const f = fake({}, okPosts);
	f.d.getEditorText = (() => {
		let calls = 0;
		// before navigation: empty; after it: Pi's editorText (the target boundary's content)
		return () => (calls++ === 0 ? "" : "<context_window_guidance>");
	})();
	const set: string[] = [];
	f.d.setEditorText = (t) => set.push(t);
	assert.equal(await settleRollover(f.d), "completed");
	assert.deepEqual(set, [""]);
});

test("cancelled navigation: the rollover is aborted, one UI error, nothing appended", async () => {
	const f = fake({ navigateTree: async () => ({ cancelled: true }) }, okPosts);
	assert.equal(await settleRollover(f.d), "failed");
	assert.deepEqual(f.log, [
		"post settle",
		"post abort",
		"error contextd: new context failed: navigation was cancelled; the old branch is kept",
		// new_context's result said a window would start: the model is told it did not.
		"tell The new context window did not open (navigation was cancelled); you are still in the same context window.",
	]);
});

test("navigation throws after a reload or session replacement: not aborted, the person told the file finishes it, the model not told", async () => {
	const f = fake({ navigateTree: async () => Promise.reject(new Error("This extension ctx is stale")), ended: () => true }, okPosts);
	assert.equal(await settleRollover(f.d), "failed");
	assert.deepEqual(f.log, ["post settle", `error ${RELOADED_DURING_SUMMARY}`]);
});

test("no captured command context: aborted before anything moves", async () => {
	const f = fake({ navigateTree: undefined }, okPosts);
	await settleRollover(f.d);
	assert.deepEqual(f.log.slice(0, 1), ["post abort"]);
	assert.equal(f.log.filter((l) => l.startsWith("error ")).length, 1);
});

test("navigateTree rejects (a response is running): aborted, old branch kept", async () => {
	const f = fake({ navigateTree: async () => Promise.reject(new Error("busy")) }, okPosts);
	await settleRollover(f.d);
	assert.deepEqual(f.log, [
		"post settle",
		"post abort",
		"error contextd: new context failed: navigation failed (busy); the old branch is kept",
		"tell The new context window did not open (navigation failed (busy)); you are still in the same context window.",
	]);
});

test("commit fails after navigation: one error, no turn, no abort (contextd reports the incomplete rollover)", async () => {
	const f = fake({}, { ...okPosts, commit: new Error("contextd is not reachable") });
	await settleRollover(f.d);
	assert.deepEqual(f.log.slice(0, 3), ["post settle", "navigate b0 summarize=true internal=true", "post commit"]);
	assert.equal(f.log.length, 4);
	assert.match(f.log[3], /^error .*archived but not opened; no turn was started/);
});

test("session changed between the tool and settled phases: aborted", async () => {
	const f = fake({ sameSession: false }, okPosts);
	await settleRollover(f.d);
	assert.deepEqual(f.log.slice(0, 1), ["post abort"]);
});

test("settle refused while calls have no result: deferred quietly, nothing navigated or aborted", async () => {
	// client.ts's ContextdError carries the HTTP status (its parameter properties need a full TS compiler).
	// contextd's problem code decides, never the sentence.
	const conflict = new ContextdError("contextd: settle of rollover r refused, reworded", 409, "open_tool_calls");
	const f = fake({}, { ...okPosts, settle: conflict });
	assert.equal(await settleRollover(f.d), "deferred");
	assert.deepEqual(f.log, ["post settle"]);
	// Any other conflict still fails with one error.
	const g = fake({}, { ...okPosts, settle: new ContextdError("contextd: tool calls call_sh have no result yet", 409, "conflict") });
	assert.equal(await settleRollover(g.d), "failed");
	assert.equal(g.log.filter((l) => l.startsWith("error ")).length, 1);
});

test("the settle's label goes to navigateTree; the label entry Pi appends after the summary leads to the summary, which is committed", async () => {
	const bodies: unknown[] = [];
	let options: unknown;
	const posts = { settle: { navigate_to: "b0", summarize: true, label: "contextd window 0 archive" }, commit: { append: plan }, complete: {} };
	const f = fake(
		{
			navigateTree: async (_id, o) => {
				options = o;
				return { cancelled: false };
			},
			// Pi 0.85.1 and 1.6.0: the label entry (parent: the summary) is the leaf after navigation.
			leafEntry: () => ({ id: "lab1", type: "label", targetId: "sum1" }),
			entry: (id) => (id === "sum1" ? { id: "sum1", type: "branch_summary" } : undefined),
		},
		posts,
	);
	const call = f.d.call;
	f.d.call = (op, body) => {
		bodies.push(body);
		return call(op, body);
	};
	assert.equal(await settleRollover(f.d), "completed");
	assert.deepEqual(options, { summarize: true, label: "contextd window 0 archive" });
	assert.deepEqual(bodies[1], { summary_entry_id: "sum1" });
});

test("session replaced while the summary ran, navigation completed: no stale editor use, nothing appended, the new session gets the target's text and one sentence", async () => {
	let replaced = false;
	const handed: (string | undefined)[] = [];
	const f = fake(
		{
			navigateTree: async () => {
				replaced = true; // the person's /new while the summary is written
				return { cancelled: false };
			},
			entryText: (id) => (id === "b0" ? "<context_window_guidance>g</context_window>" : undefined),
			ended: () => replaced,
			replacedAfterSummary: (t) => handed.push(t),
		},
		okPosts,
	);
	const live = f.d.getEditorText;
	f.d.getEditorText = () => {
		if (replaced) throw new Error("This extension ctx is stale");
		return live();
	};
	assert.equal(await settleRollover(f.d), "failed");
	assert.deepEqual(handed, ["<context_window_guidance>g</context_window>"]);
	// no commit, no appendEntry, no stale setEditorText, no stderr line
	assert.deepEqual(f.log, ["post settle"]);
});
