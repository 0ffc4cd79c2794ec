// gen-sessions.mjs: write new Pi session files with Pi's real SessionManager.
//
// Usage: node gen-sessions.mjs [--own-compactions] OUTDIR
//
// --own-compactions also writes harness-own-compactions.jsonl: a long session compacted by the
// selected Pi's own prepareCompaction with its default settings (only the summary text is
// ours), for the parity tests.
//
// Every line of every file is written by @earendil-works/pi-coding-agent's SessionManager
// (appendMessage, appendCustomEntry, branchWithSummary, ...); this script only decides what
// to append. No LLM is called. OUTDIR/manifest.json lists the files, what each covers, and
// the ids of interesting entries (use them with `pi-parity.mjs --leaf ID`).
//
// Determinism: the output is byte-identical from run to run. Before Pi is imported,
//  - crypto.randomUUID (used by Pi's generateId for 8-hex entry ids) is replaced by a
//    seeded PRNG, re-seeded from the file name at the start of each scenario, and pushed
//    into Pi's `import { randomUUID } from "crypto"` binding with syncBuiltinESMExports();
//  - Date is replaced by a fake clock that starts at a fixed instant per scenario and
//    advances 1 s on every `new Date()` / `Date.now()`.
// Session ids are fixed (newSession({id})). Pi names a new file <timestamp>_<id>.jsonl;
// each scenario writes into a private staging dir and the finished file is then renamed
// to its stable name (harness-*.jsonl).
//
// Unknown entry types: SessionManager has no public method for them, so harness-unknown-type
// calls its internal `_appendEntry(entry)` (private in the .d.ts, an ordinary method in JS):
// it indexes the entry, moves the leaf to it and calls `_persist()`, so Pi itself writes the line.

import crypto from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import { join, resolve } from "node:path";

const args = process.argv.slice(2);
const ownCompactions = args.includes("--own-compactions");
const outDir = args.find((a) => !a.startsWith("--"));
if (!outDir) {
	console.error("usage: node gen-sessions.mjs [--own-compactions] OUTDIR");
	process.exit(2);
}
mkdirSync(outDir, { recursive: true });

// ---------------------------------------------------------------------------
// Deterministic randomness and clock (must be installed before Pi is imported).

let rngState = 1;
function seed(text) {
	let h = 2166136261; // FNV-1a
	for (const ch of text) h = Math.imul(h ^ ch.codePointAt(0), 16777619) >>> 0;
	rngState = h || 1;
}
function rand32() {
	// mulberry32
	rngState = (rngState + 0x6d2b79f5) >>> 0;
	let t = rngState;
	t = Math.imul(t ^ (t >>> 15), t | 1);
	t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
	return (t ^ (t >>> 14)) >>> 0;
}
function uuid() {
	const hex = Array.from({ length: 4 }, () => rand32().toString(16).padStart(8, "0")).join("");
	const v = ((parseInt(hex[16], 16) & 0x3) | 0x8).toString(16);
	return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-${v}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
crypto.randomUUID = uuid;
syncBuiltinESMExports();

const RealDate = Date;
const CLOCK_START = RealDate.parse("2026-08-03T09:00:00.000Z");
let clock = CLOCK_START;
globalThis.Date = class FakeDate extends RealDate {
	constructor(...args) {
		if (args.length > 0) super(...args);
		else super((clock += 1000));
	}
	static now() {
		return (clock += 1000);
	}
};

// Keep Pi away from the real ~/.pi.
const scratch = mkdtempSync(join(outDir, ".gen-"));
process.env.PI_CODING_AGENT_DIR ??= join(scratch, "agent");

const { piPackage, piVersion, importPi, importPiDist } = await import("./pi-version.mjs");
const { SessionManager } = await importPi();
// What the selected Pi's SessionManager can write: usage entries and system messages came with
// 0.86.0 (appendUsage), context edits with 0.87.0 (appendContextEdit).
const has = {
	usage: typeof SessionManager.prototype.appendUsage === "function",
	contextEdit: typeof SessionManager.prototype.appendContextEdit === "function",
};
// sm.appendContextEdit where the Pi has it; undefined (no entry, no id) on 0.86.
const edit = (sm, targetId, replacement) => (has.contextEdit ? sm.appendContextEdit(targetId, replacement) : undefined);

// ---------------------------------------------------------------------------
// Message builders (shapes as in pi-ai's types.d.ts).

const CWD = "/home/dev/src/harness";
const MODEL = { api: "openai-codex-responses", provider: "openai-codex", model: "gpt-5.5" };
const usage = (input = 100, output = 20) => ({
	input,
	output,
	cacheRead: 0,
	cacheWrite: 0,
	totalTokens: input + output,
	cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
});
const text = (t) => ({ type: "text", text: t });
const image = (data = PNG_1X1) => ({ type: "image", data, mimeType: "image/png" });
const callId = () => `call_${uuid().replaceAll("-", "").slice(0, 24)}`;
const toolCall = (name, args, id = callId()) => ({ type: "toolCall", id, name, arguments: args });

const user = (content) => ({ role: "user", content, timestamp: Date.now() });
const assistant = (content, extra = {}) => ({
	role: "assistant",
	content: typeof content === "string" ? [text(content)] : content,
	...MODEL,
	usage: usage(),
	stopReason: "stop",
	timestamp: Date.now(),
	...extra,
});
const toolResult = (call, content, extra = {}) => ({
	role: "toolResult",
	toolCallId: call.id,
	toolName: call.name,
	content: typeof content === "string" ? [text(content)] : content,
	isError: false,
	timestamp: Date.now(),
	...extra,
});

// A valid 1x1 transparent PNG.
const PNG_1X1 =
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
// Text that is awkward for byte/char/grapheme handling: combining accent, ZWJ emoji, CJK.
const UNICODE = "Caf\u0065\u0301 👩\u200d💻 漢字テスト — ok";

// ---------------------------------------------------------------------------
// Scenarios. Each returns { covers, description, ids } where ids names interesting entries.

const scenarios = [];
const scenario = (name, sessionId, covers, description, build) =>
	scenarios.push({ name, sessionId, covers, description, build });

scenario(
	"harness-branches",
	"019fa000-0000-7000-8000-000000000001",
	["branch", "branch_summary", "fromHook:false", "fromHook:true", "multiple leaves"],
	"Three branches off one assistant message: plain branch() then append (B), branchWithSummary fromHook false " +
		"(C, summarizing B), branchWithSummary fromHook true back onto branch A (summarizing C). Final leaf on branch A.",
	(sm) => {
		sm.appendModelChange(MODEL.provider, MODEL.model);
		sm.appendThinkingLevelChange("medium");
		const u1 = sm.appendMessage(user("List the files in the repo."));
		const a1 = sm.appendMessage(assistant("There are three packages: api, store, web."));
		// Branch A.
		const uA = sm.appendMessage(user("Approach A: fix it in store."));
		const readA = toolCall("read", { path: "store/store.go" });
		sm.appendMessage(assistant([text("Reading store.go."), readA], { stopReason: "toolUse" }));
		sm.appendMessage(toolResult(readA, "package store\n\nfunc Open() error { return nil }\n"));
		const leafA = sm.appendMessage(assistant("Approach A works."));
		// Branch B: plain branch() (nothing written) then append under a1.
		sm.branch(a1);
		const uB = sm.appendMessage(user("Approach B: fix it in api instead."));
		const leafB = sm.appendMessage(assistant("Approach B also works, but touches more files."));
		// Branch C: navigate back to a1 with a Pi-generated summary of B.
		const summaryC = sm.branchWithSummary(a1, "## Goal\nFix it in api (approach B).\n\n## Outcome\nWorks, touches more files.", {
			readFiles: ["api/handler.go"],
			modifiedFiles: [],
		}, false);
		const uC = sm.appendMessage(user("Approach C: do nothing and document it."));
		const leafC = sm.appendMessage(assistant("Documented the limitation."));
		// Back onto branch A with a summary supplied by an extension (fromHook true).
		const summaryHook = sm.branchWithSummary(leafA, "Extension summary: approach C only documented the issue.", { source: "ext" }, true);
		const uFinal = sm.appendMessage(user("Continue with approach A."));
		const leaf = sm.appendMessage(assistant("Continuing on approach A: added a test."));
		return { u1, a1, uA, leafA, uB, leafB, summaryC, uC, leafC, summaryHook, uFinal, leaf };
	},
);

scenario(
	"harness-branch-roots",
	"019fa000-0000-7000-8000-000000000002",
	["branch_summary parentId null", "resetLeaf", "multiple roots", "empty summary"],
	"branchWithSummary(null) makes a second root, resetLeaf() then append makes a third; a branch_summary with an " +
		"empty summary (contributes no context message). The active path starts at the null-parent summary, so it " +
		"has no model_change/thinking_level_change (thinkingLevel off, model from the assistant).",
	(sm) => {
		sm.appendModelChange("anthropic", "claude-sonnet-4-5");
		sm.appendThinkingLevelChange("low");
		const u1 = sm.appendMessage(user("First attempt."));
		const a1 = sm.appendMessage(assistant("First answer."));
		const rootSummary = sm.branchWithSummary(null, "Summary of the first attempt, before the root.", undefined, false);
		const u2 = sm.appendMessage(user("Second attempt from the top."));
		const a2 = sm.appendMessage(assistant("Second answer."));
		sm.resetLeaf();
		const u3 = sm.appendMessage(user("Third root: a fresh start."));
		const a3 = sm.appendMessage(assistant("Third answer."));
		const emptySummary = sm.branchWithSummary(a2, "", undefined, false);
		const u4 = sm.appendMessage(user("Back to the second attempt."));
		const leaf = sm.appendMessage(assistant("Done."));
		return { u1, a1, rootSummary, u2, a2, u3, a3, emptySummary, u4, leaf };
	},
);

scenario(
	"harness-labels",
	"019fa000-0000-7000-8000-000000000003",
	["label", "label rename", "label clear (undefined)", "label clear (empty string)", "label off the active branch"],
	"Labels set, renamed, cleared with undefined and with \"\", and one set on an entry of a side branch. " +
		"Final labels: u1 = start-renamed, uSide = side-label.",
	(sm) => {
		sm.appendModelChange(MODEL.provider, MODEL.model);
		const u1 = sm.appendMessage(user("Label test."));
		const a1 = sm.appendMessage(assistant("Ok."));
		const u2 = sm.appendMessage(user("Second question."));
		const a2 = sm.appendMessage(assistant("Second answer."));
		sm.appendLabelChange(u1, "start");
		sm.appendLabelChange(a2, "checkpoint");
		sm.appendLabelChange(u1, "start-renamed");
		sm.appendLabelChange(a1, "temp");
		const clearUndefined = sm.appendLabelChange(a1, undefined);
		const clearEmpty = sm.appendLabelChange(a2, "");
		const u3 = sm.appendMessage(user("Third question."));
		const a3 = sm.appendMessage(assistant("Third answer."));
		sm.branch(a1);
		const uSide = sm.appendMessage(user("Side branch."));
		sm.appendMessage(assistant("Side answer."));
		const sideLabel = sm.appendLabelChange(uSide, "side-label");
		sm.branch(a3);
		const u4 = sm.appendMessage(user("Back on the main branch."));
		const leaf = sm.appendMessage(assistant("Main branch continues."));
		return { u1, a1, u2, a2, clearUndefined, clearEmpty, u3, a3, uSide, sideLabel, u4, leaf };
	},
);

scenario(
	"harness-session-info",
	"019fa000-0000-7000-8000-000000000004",
	["session_info", "name with CR/LF (sanitized)", "name clear", "latest name off the active branch"],
	"session_info names: set, renamed with CR/LF (Pi writes 'Multi line name'), cleared with \"\", set again, " +
		"then a last name on a side branch; the final leaf is on the main branch but getSessionName() is the side name.",
	(sm) => {
		sm.appendModelChange(MODEL.provider, MODEL.model);
		sm.appendMessage(user("Name test."));
		const a1 = sm.appendMessage(assistant("Ok."));
		const name1 = sm.appendSessionInfo("First name");
		sm.appendMessage(user("More."));
		const a2 = sm.appendMessage(assistant("More answer."));
		const name2 = sm.appendSessionInfo("  Multi\nline\r\nname  ");
		const cleared = sm.appendSessionInfo("");
		sm.appendMessage(user("Even more."));
		sm.appendMessage(assistant("Even more answer."));
		const name3 = sm.appendSessionInfo("Renamed again");
		sm.branch(a2);
		sm.appendMessage(user("Side branch."));
		sm.appendMessage(assistant("Side answer."));
		const sideName = sm.appendSessionInfo("Side branch name");
		sm.branch(name3);
		sm.appendMessage(user("Main again."));
		const leaf = sm.appendMessage(assistant("Main answer."));
		return { a1, name1, name2, cleared, name3, sideName, leaf };
	},
);

scenario(
	"harness-compactions",
	"019fa000-0000-7000-8000-000000000005",
	["compaction", "firstKeptEntryId", "two compactions", "compaction usage", "compaction fromHook"],
	"Two compactions on one chain. The first keeps from u3; the second (fromHook true) keeps from u5, an entry " +
		"after the first compaction, so context = [compaction2, u5, a5, u6, a6].",
	(sm) => {
		sm.appendModelChange(MODEL.provider, MODEL.model);
		sm.appendThinkingLevelChange("high");
		const u1 = sm.appendMessage(user("Step 1."));
		sm.appendMessage(assistant("Done 1."));
		sm.appendMessage(user("Step 2."));
		const call = toolCall("bash", { command: "go test ./..." });
		sm.appendMessage(assistant([call], { stopReason: "toolUse" }));
		sm.appendMessage(toolResult(call, "ok  \tcontextd/store\t0.12s"));
		sm.appendMessage(assistant("Done 2."));
		const u3 = sm.appendMessage(user("Step 3."));
		sm.appendMessage(assistant("Done 3."));
		const compaction1 = sm.appendCompaction("## Goal\nSteps 1-2 done.", u3, 12000, {
			readFiles: ["store/store.go"],
			modifiedFiles: ["store/store_test.go"],
		}, false, usage(12000, 400));
		const u4 = sm.appendMessage(user("Step 4."));
		sm.appendMessage(assistant("Done 4."));
		const u5 = sm.appendMessage(user("Step 5."));
		const a5 = sm.appendMessage(assistant("Done 5."));
		const compaction2 = sm.appendCompaction("## Goal\nSteps 1-4 done.", u5, 20000, { custom: "by extension" }, true);
		sm.appendMessage(user("Step 6."));
		const leaf = sm.appendMessage(assistant("Done 6."));
		return { u1, u3, compaction1, u4, u5, a5, compaction2, leaf };
	},
);

scenario(
	"harness-compaction-edge",
	"019fa000-0000-7000-8000-000000000006",
	["compaction keeping an earlier compaction", "compaction with unknown firstKeptEntryId"],
	"compaction2 keeps from u1, i.e. from before compaction1, so compaction1 shows up again as a " +
		"compactionSummary inside the kept range (see leaf a4). compaction3's firstKeptEntryId names no entry, so " +
		"only compaction3 and what follows it stay in context.",
	(sm) => {
		sm.appendModelChange(MODEL.provider, MODEL.model);
		const u1 = sm.appendMessage(user("Edge 1."));
		sm.appendMessage(assistant("Answer 1."));
		const u2 = sm.appendMessage(user("Edge 2."));
		sm.appendMessage(assistant("Answer 2."));
		const compaction1 = sm.appendCompaction("First summary.", u2, 5000);
		sm.appendMessage(user("Edge 3."));
		const a3 = sm.appendMessage(assistant("Answer 3."));
		const compaction2 = sm.appendCompaction("Second summary, keeps everything.", u1, 9000);
		sm.appendMessage(user("Edge 4."));
		const a4 = sm.appendMessage(assistant("Answer 4."));
		const compaction3 = sm.appendCompaction("Third summary, kept id is unknown.", "deadbeef", 11000);
		sm.appendMessage(user("Edge 5."));
		const leaf = sm.appendMessage(assistant("Answer 5."));
		return { u1, u2, compaction1, a3, compaction2, a4, compaction3, leaf };
	},
);

scenario(
	"harness-custom",
	"019fa000-0000-7000-8000-000000000007",
	["custom", "custom before first assistant", "custom without data", "custom_message display:true",
		"custom_message display:false", "custom_message string and parts content", "custom_message with image", "custom as leaf"],
	"Custom entries (invisible to the model, one buffered before the first assistant message, one without data, " +
		"one as the last line) and custom messages (display true with details, display false, string and parts content, " +
		"an image part).",
	(sm) => {
		sm.appendModelChange(MODEL.provider, MODEL.model);
		const stateBefore = sm.appendCustomEntry("harness-state", { step: 0, note: "before first assistant" });
		const u1 = sm.appendMessage(user("Custom test."));
		const hidden = sm.appendCustomMessageEntry("harness-hidden", "Hidden context: the user prefers tabs.", false);
		sm.appendMessage(assistant("Using tabs."));
		const state1 = sm.appendCustomEntry("harness-state", { step: 1 });
		const shown = sm.appendCustomMessageEntry("harness-card", [text("Prompt summary (2m 10s)"), text("second part")], true, {
			elapsed: "2m 10s",
		});
		const noData = sm.appendCustomEntry("harness-marker");
		const withImage = sm.appendCustomMessageEntry("harness-image", [text("Screenshot attached."), image()], true);
		sm.appendMessage(user("Next."));
		sm.appendMessage(assistant("Next answer."));
		const hiddenParts = sm.appendCustomMessageEntry("harness-hidden", [text("Hidden parts content.")], false, { n: 2 });
		const leaf = sm.appendCustomEntry("agent_end", { timestamp: Date.now() });
		return { stateBefore, u1, hidden, state1, shown, noData, withImage, hiddenParts, leaf };
	},
);

scenario(
	"harness-errors",
	"019fa000-0000-7000-8000-000000000008",
	["assistant stopReason error", "assistant stopReason aborted", "retry as child of the failed message", "stopReason length"],
	"An errored assistant message (errorMessage, empty content) and an aborted one (partial text), each followed by " +
		"the retried assistant message as its child, as Pi's auto-retry persists them; plus a stopReason length reply.",
	(sm) => {
		sm.appendModelChange(MODEL.provider, MODEL.model);
		const u1 = sm.appendMessage(user("Trigger an error."));
		const errored = sm.appendMessage(
			assistant([], { stopReason: "error", errorMessage: "500 Internal Server Error: upstream overloaded", usage: usage(0, 0) }),
		);
		const retry1 = sm.appendMessage(assistant("Retried answer after the error."));
		const u2 = sm.appendMessage(user("Now get interrupted."));
		const aborted = sm.appendMessage(assistant("Partial answer that was cut", { stopReason: "aborted", errorMessage: "Request was aborted" }));
		const retry2 = sm.appendMessage(assistant("Full answer after the abort."));
		sm.appendMessage(user("Write a long essay."));
		const long = sm.appendMessage(assistant("An essay that stops mid-", { stopReason: "length" }));
		sm.appendMessage(user("Thanks."));
		const leaf = sm.appendMessage(assistant("You're welcome."));
		return { u1, errored, retry1, u2, aborted, retry2, long, leaf };
	},
);

scenario(
	"harness-unknown-type",
	"019fa000-0000-7000-8000-000000000009",
	["unknown entry type in the middle", "unknown entry type as leaf"],
	"Two entries of type future_kind written by Pi through SessionManager._appendEntry: one in the middle of the " +
		"chain (the next user message is its child) and one as the last line (the leaf).",
	(sm) => {
		sm.appendModelChange(MODEL.provider, MODEL.model);
		sm.appendMessage(user("Unknown type test."));
		const a1 = sm.appendMessage(assistant("Ok."));
		const unknown = appendUnknown(sm, "f0f0f001", { payload: { kind: "future", n: 1 } });
		const u2 = sm.appendMessage(user("After the unknown entry."));
		const a2 = sm.appendMessage(assistant("Still fine."));
		const leaf = appendUnknown(sm, "f0f0f002", { payload: { kind: "future", n: 2 }, targetId: a2 });
		return { a1, unknown, u2, a2, leaf };
	},
);

// Append an entry of a type SessionManager does not know, through its internal append path.
function appendUnknown(sm, id, fields) {
	sm._appendEntry({ type: "future_kind", id, parentId: sm.getLeafId(), timestamp: new Date().toISOString(), ...fields });
	return id;
}

scenario(
	"harness-local-mode",
	"019fa000-0000-7000-8000-00000000000a",
	["codex-context-window boundaries (3 windows)", "codex-context-window reminder", "codex-context-note write/append",
		"history/notes flat router tool calls", "image in user message", "image in toolResult",
		"emoji/CJK/combining characters", "~2 MB toolResult text", "new_context"],
	"Local-mode shapes (codex-history-notes §3.2-3.4): three windows opened by codex-context-window custom messages " +
		"(details.contextManagement kind window), notes written and appended in every window (custom " +
		"codex-context-note), flat history/notes router tool calls with their results, images in a user message and a " +
		"toolResult, text with combining/ZWJ/CJK characters, and one bash toolResult whose text is ~2 MB.",
	(sm) => {
		const ids = {};
		sm.appendModelChange(MODEL.provider, MODEL.model);
		sm.appendThinkingLevelChange("high");
		const firstWindowId = uuid();
		let windowId = firstWindowId;
		let previousWindowId;
		const boundary = (n) =>
			sm.appendCustomMessageEntry("codex-context-window", windowText(firstWindowId, windowId, previousWindowId), true, {
				protocol: 1,
				id: uuid(),
				contextManagement: {
					protocol: 1,
					kind: "window",
					firstWindowId,
					currentWindowId: windowId,
					...(previousWindowId ? { previousWindowId } : {}),
					windowNumber: n,
				},
			});
		const notes = new Map(); // path -> {text, createdAt}, to build realistic tool results
		const note = (action, path, body) => {
			const call = toolCall("notes", action === "write" ? { action: "write_file", path, text: body } : { action: "append_to_file", path, text: body });
			sm.appendMessage(assistant([{ type: "thinking", thinking: `Saving ${path}.` }, call], { stopReason: "toolUse" }));
			const ts = Date.now();
			const noteId = sm.appendCustomEntry("codex-context-note", { protocol: 1, action, path, text: body, timestamp: ts });
			const prev = action === "append" ? notes.get(path) : undefined;
			notes.set(path, { text: (prev?.text ?? "") + body, createdAt: prev?.createdAt ?? ts });
			const { text: all, createdAt } = notes.get(path);
			const iso = (ms) => new RealDate(ms).toISOString();
			const meta = { path, bytes: Buffer.byteLength(all), created_at: iso(createdAt), updated_at: iso(ts) };
			sm.appendMessage(toolResult(call, JSON.stringify({ source: "pi-session", file: meta }), { details: { source: "pi-session", file: meta } }));
			return noteId;
		};
		const newContext = () => {
			const call = toolCall("new_context", {});
			sm.appendMessage(assistant([call], { stopReason: "toolUse" }));
			sm.appendMessage(toolResult(call, "A new context window will start without summarizing conversation history."));
		};

		// Window 0.
		ids.boundary0 = boundary(0);
		ids.userWithImage = sm.appendMessage(user([text(`Here is a screenshot of the bug: ${UNICODE}`), image()]));
		ids.noteWrite0 = note("write", "/root/notes/plan.md", `# Plan\n\nRequest: fix the widget (${UNICODE}).\n`);
		const read = toolCall("read", { path: "screenshot.png" });
		sm.appendMessage(assistant([text("Looking at the screenshot."), read], { stopReason: "toolUse" }));
		ids.toolResultWithImage = sm.appendMessage(toolResult(read, [text("Read image file [image/png]"), image()]));
		const history = toolCall("history", { action: "list_items", window_id: firstWindowId, limit: 10 });
		sm.appendMessage(assistant([history], { stopReason: "toolUse" }));
		ids.historyResult0 = sm.appendMessage(
			toolResult(history, JSON.stringify({ source: "pi-session", items: [{ window_id: firstWindowId, item_id: ids.userWithImage, role: "user", truncated_content: "Here is a screenshot", content_chars: 60 }] })),
		);
		ids.noteAppend0 = note("append", "/root/notes/plan.md", "\n- [x] looked at the screenshot 👀\n");
		ids.reminder = sm.appendCustomMessageEntry(
			"codex-context-window",
			"<context_window_reminder>\n12% remaining. Checkpoint the active request, state and known history IDs in notes, then call new_context before continuing work.\n</context_window_reminder>",
			true,
			{ protocol: 1, id: uuid(), contextManagement: { protocol: 1, kind: "reminder", firstWindowId, currentWindowId: windowId, windowNumber: 0 } },
		);
		newContext();

		// Window 1.
		previousWindowId = windowId;
		windowId = uuid();
		ids.boundary1 = boundary(1);
		const readNote = toolCall("notes", { action: "read_file", path: "/root/notes/plan.md" });
		sm.appendMessage(assistant([readNote], { stopReason: "toolUse" }));
		sm.appendMessage(toolResult(readNote, JSON.stringify({ source: "pi-session", file: { path: "/root/notes/plan.md", content: notes.get("/root/notes/plan.md").text } })));
		// U+2028/U+2029 stay raw inside the JSON line: readers must split on "\n" only.
		ids.userUnicode = sm.appendMessage(user(`Now dump the logs. Ünïcödé check: ${UNICODE} e\u0301 👩\u200d💻 漢字 line\u2028separator paragraph\u2029separator`));
		const bash = toolCall("bash", { command: "cat /var/log/widget.log" });
		sm.appendMessage(assistant([bash], { stopReason: "toolUse" }));
		ids.bigToolResult = sm.appendMessage(toolResult(bash, bigLog()));
		ids.noteWrite1 = note("write", "/root/notes/logs.md", "# Logs\n\nThe log is ~2 MB; errors start at line 1.\n");
		ids.noteAppend1 = note("append", "/root/notes/plan.md", "- [x] dumped the logs\n");
		const windows = toolCall("history", { action: "list_windows" });
		sm.appendMessage(assistant([windows], { stopReason: "toolUse" }));
		sm.appendMessage(toolResult(windows, JSON.stringify({ source: "pi-session", windows: [{ window_id: firstWindowId, item_count: 12 }, { window_id: windowId, item_count: 9 }] })));
		newContext();

		// Window 2.
		previousWindowId = windowId;
		windowId = uuid();
		ids.boundary2 = boundary(2);
		ids.noteWrite2 = note("write", "/root/notes/done.md", `# Done\n\n${UNICODE}\n`);
		ids.noteAppend2 = note("append", "/root/notes/plan.md", "- [x] all done 🎉\n");
		ids.lastUser = sm.appendMessage(user("Summarize."));
		ids.leaf = sm.appendMessage(assistant(`Fixed. Notes are in /root/notes/plan.md. ${UNICODE}`));
		ids.windowIds = [firstWindowId, previousWindowId, windowId];
		return ids;
	},
);

// ---------------------------------------------------------------------------
// Pi 1.x scenarios: written with the Pi's own appendContextEdit, appendUsage, system messages and
// compactions. Pi 0.85 has none of these methods (no harness-v16-* file); 0.86 has all but
// appendContextEdit (harness-v16-compactions and -roots without their edits).

const system = (content, extra = {}) => ({ role: "system", content, timestamp: Date.now(), ...extra });
const usageEntry = (sm, note) => sm.appendUsage("summary", MODEL.provider, MODEL.model, usage(10, 2), note).id;

if (has.contextEdit) {
	scenario(
		"harness-v16-context-edits",
		"019fa000-0000-7000-8000-000000000101",
		["system message", "context_edit replace user/assistant/toolResult/custom_message", "context_edit null", "last edit wins", "string and array replacements", "usage"],
		"A leading system message, then every editable target replaced (string and block content) and omitted, " +
			"two edits on one target (the later wins), an edit of a custom message, usage entries as tree nodes, and a " +
			"system patch mid-session. A Local-mode window boundary opens window 0 (windowIds), so that contextd's " +
			"history can be checked against Pi's projection.",
		(sm) => {
			const ids = {};
			sm.appendModelChange(MODEL.provider, MODEL.model);
			ids.system = sm.appendMessage(system("You are Pi.", { sections: { base: "You are Pi." }, toolsAdded: [{ name: "read", description: "Read a file", parameters: { type: "object" } }] }));
			const windowId = uuid();
			ids.boundary0 = sm.appendCustomMessageEntry("codex-context-window", windowText(windowId, windowId), true, {
				protocol: 1,
				id: uuid(),
				contextManagement: { protocol: 1, kind: "window", firstWindowId: windowId, currentWindowId: windowId, windowNumber: 0 },
			});
			ids.windowIds = [windowId];
			ids.u1 = sm.appendMessage(user("Read the config. My token is sk-SECRET-123."));
			const read = toolCall("read", { path: "config.toml" });
			ids.a1 = sm.appendMessage(assistant([text("Reading config.toml."), read], { stopReason: "toolUse" }));
			ids.tr1 = sm.appendMessage(toolResult(read, `${"x".repeat(300)}\nsecret = "sk-SECRET-123"\n`));
			ids.a2 = sm.appendMessage(assistant("The config sets secret = sk-SECRET-123."));
			ids.usage1 = usageEntry(sm, "title generation");
			ids.cm1 = sm.appendCustomMessageEntry("reminder", "Remember to run the tests.", true, { n: 1 });
			ids.u2 = sm.appendMessage(user("Try again."));
			ids.aRetry = sm.appendMessage(assistant("", { stopReason: "error", errorMessage: "overloaded" }));
			ids.beforeEdits = ids.aRetry;
			// Replacements: string on user (stays a string), string on assistant and toolResult (one text
			// block), block array on a custom message, and the retry attempt omitted (as Pi's recovery does).
			ids.editU1 = sm.appendContextEdit(ids.u1, { content: "Read the config. My token is [redacted]." });
			ids.editTr1 = sm.appendContextEdit(ids.tr1, { content: "[config.toml: 2 lines, secret redacted]" });
			ids.editA2First = sm.appendContextEdit(ids.a2, { content: "The config sets secret = [first redaction]." });
			ids.editA2 = sm.appendContextEdit(ids.a2, { content: [text("The config sets a secret (redacted).")] });
			ids.editCm1 = sm.appendContextEdit(ids.cm1, { content: [text("Remember: tests.")] });
			ids.omitRetry = sm.appendContextEdit(ids.aRetry, null);
			ids.usage2 = usageEntry(sm);
			ids.a3 = sm.appendMessage(assistant("Retried: the config is fine."));
			ids.systemPatch = sm.appendMessage(system("Also: answer briefly.", { sections: { brief: "Answer briefly." } }));
			ids.u3 = sm.appendMessage(user("Drop the reminder and my first question."));
			ids.omitCm1 = sm.appendContextEdit(ids.cm1, null);
			ids.omitU1 = sm.appendContextEdit(ids.u1, null);
			ids.leaf = sm.appendMessage(assistant("Done."));
			return ids;
		},
	);

}

if (has.usage) {
	scenario(
		"harness-v16-compactions",
		"019fa000-0000-7000-8000-000000000102",
		["compaction systemMessage", "system messages in and out of the kept range", "nested compaction", "retain-none compaction", "edits before and after a compaction", "usage as parent"],
		"System messages before and inside a kept range, a compaction that stores the current system message, an " +
			"edit inside the kept range and one after the compaction, a second compaction whose kept range holds the " +
			"first (1.6 yields nothing for it, 0.85 its summary), then a retain-none compaction.",
		(sm) => {
			const ids = {};
			ids.system = sm.appendMessage(system("You are Pi.", { sections: { base: "You are Pi." } }));
			ids.u1 = sm.appendMessage(user("Step one."));
			ids.a1 = sm.appendMessage(assistant("Did step one."));
			ids.u2 = sm.appendMessage(user("Step two."));
			ids.systemKept = sm.appendMessage(system("Tools changed.", { toolsRemoved: [{ name: "bash" }] }));
			ids.a2 = sm.appendMessage(assistant("Did step two."));
			ids.editA2 = edit(sm, ids.a2, { content: "Did step two (edited before the compaction)." });
			ids.usage1 = usageEntry(sm);
			ids.c1 = sm.appendCompaction("Summary one: steps one and two.", ids.u2, 5000);
			ids.afterC1 = sm.appendMessage(user("Step three."));
			ids.editU2 = edit(sm, ids.u2, { content: "Step two (edited after the compaction)." });
			ids.a3 = sm.appendMessage(assistant("Did step three."));
			ids.u4 = sm.appendMessage(user("Step four."));
			// Nested: the second compaction keeps from u2, so c1 lies inside its kept range.
			ids.c2 = sm.appendCompaction("Summary two: steps one to four.", ids.u2, 8000);
			ids.a4 = sm.appendMessage(assistant("Did step four."));
			ids.usage2 = usageEntry(sm, "compaction");
			ids.omitA4 = edit(sm, ids.a4, null);
			ids.u5 = sm.appendMessage(user("Step five."));
			ids.beforeRetainNone = sm.appendMessage(assistant("Did step five."));
			ids.c3 = sm.appendCompaction("Summary three: everything so far.", null, 9000);
			ids.leaf = sm.appendMessage(user("Step six."));
			return ids;
		},
	);

	scenario(
		"harness-v16-roots",
		"019fa000-0000-7000-8000-000000000103",
		["multiple roots", "full-UUID ids", "file written at the first user message", "thinkingLevel/durationMs/responseId", "stopReason deferred", "nestedCalls"],
		"A first root with setup entries only, a user message (Pi 1.6 writes the file here), entries with full-UUID ids " +
			"written through _appendEntry, new 1.6 message fields, then resetLeaf() and a second root.",
		(sm) => {
			const ids = {};
			sm.appendModelChange(MODEL.provider, MODEL.model);
			ids.system = sm.appendMessage(system("You are Pi."));
			ids.u1 = sm.appendMessage(user("First root."));
			const full = (parentId, message) => {
				const entry = { type: "message", id: uuid(), parentId, timestamp: new Date().toISOString(), message };
				sm._appendEntry(entry);
				return entry.id;
			};
			const call = toolCall("read", { path: "a.go" });
			ids.uuidAssistant = full(ids.u1, assistant([text("Deferring."), call], { stopReason: "deferred", thinkingLevel: "high", durationMs: 1200, responseId: "resp_1" }));
			ids.uuidTool = full(ids.uuidAssistant, toolResult(call, "package a", { durationMs: 5, nestedCalls: [{ name: "grep", arguments: {} }] }));
			ids.editUuid = edit(sm, ids.uuidTool, { content: "package a (trimmed)" });
			ids.leafA = sm.appendMessage(assistant("First root done."));
			sm.resetLeaf();
			ids.root2 = sm.appendMessage(user("Second root."));
			ids.usage = usageEntry(sm);
			ids.leaf = sm.appendMessage(assistant("Second root done."));
			return ids;
		},
	);
}

// ---------------------------------------------------------------------------
// Compactions cut by the Pi itself (--own-compactions): prepareCompaction (dist/core/compaction,
// what AgentSession.compact calls) over the active branch with DEFAULT_COMPACTION_SETTINGS chooses
// firstKeptEntryId and tokensBefore; only the summary text is ours (no LLM). About 1,900 tokens
// per turn against keepRecentTokens 20,000, compacted every 4 turns from turn 12: the kept range
// reaches back past the previous compaction, as it does in ordinary use (0.86.1 then sends that
// older compaction again, 0.87+ do not). With the Pi's entry kinds: system messages and usage
// (0.86+), context edits (0.87+). A side branch from before the second compaction is compacted
// on its own. Every entry is a leaf the parity tests compare.

if (ownCompactions) {
	const { prepareCompaction, DEFAULT_COMPACTION_SETTINGS } = await importPiDist("core/compaction/compaction.js");
	scenario(
		"harness-own-compactions",
		"019fa000-0000-7000-8000-000000000201",
		["prepareCompaction", "default compaction settings", "compaction inside the kept range", "compaction on a side branch", "entry kinds of the Pi"],
		"24 turns (user, assistant with a read call, its ~6 KB result, assistant), compacted by the Pi's own " +
			"prepareCompaction every 4 turns from turn 12, then a side branch from turn 14 compacted twice. " +
			"Pi 0.86+: a system message first, a system patch every 7 turns, usage every 5; 0.87+: context edits " +
			"of older tool results and an omitted assistant.",
		(sm) => {
			const ids = {};
			let compactions = 0;
			const compact = (turn) => {
				const prep = prepareCompaction(sm.getBranch(), DEFAULT_COMPACTION_SETTINGS);
				if (!prep) throw new Error(`prepareCompaction found nothing to compact at turn ${turn}`);
				compactions++;
				ids[`compaction${compactions}`] = sm.appendCompaction(
					`Summary ${compactions}: the work up to turn ${turn}.`,
					prep.firstKeptEntryId,
					prep.tokensBefore,
					{ readFiles: [], modifiedFiles: [] },
					false,
				);
			};
			const turn = (n) => {
				const u = sm.appendMessage(user(`Turn ${n}: read part ${n} of the design and report. ${"context ".repeat(180)}`));
				const read = toolCall("read", { path: `docs/part-${n}.md` });
				const a = sm.appendMessage(assistant([text(`Reading part ${n}.`), read], { stopReason: "toolUse" }));
				const tr = sm.appendMessage(toolResult(read, `# Part ${n}\n${`line of part ${n} `.repeat(400)}`));
				const done = sm.appendMessage(assistant(`Part ${n} read: ${"finding ".repeat(20)}`));
				return { u, a, tr, done };
			};
			sm.appendModelChange(MODEL.provider, MODEL.model);
			if (has.usage) ids.system = sm.appendMessage(system("You are Pi.", { sections: { base: "You are Pi." } }));
			const turns = [];
			for (let n = 1; n <= 24; n++) {
				turns[n] = turn(n);
				if (has.usage && n % 7 === 0) ids[`systemPatch${n}`] = sm.appendMessage(system(`Patch ${n}: answer briefly.`));
				if (has.usage && n % 5 === 0) ids[`usage${n}`] = usageEntry(sm, `turn ${n}`);
				if (n % 6 === 0) ids[`edit${n}`] = edit(sm, turns[n - 2].tr, { content: `[part ${n - 2}: trimmed]` });
				if (n === 17) ids.omit17 = edit(sm, turns[15].done, null);
				if (n >= 12 && n % 4 === 0) compact(n);
				if (n === 14) ids.side = turns[n].done;
			}
			ids.leaf = sm.getLeafId();
			sm.branch(ids.side);
			for (let n = 101; n <= 108; n++) {
				turns[n] = turn(n);
				if (n % 4 === 0) compact(n);
			}
			ids.sideLeaf = sm.getLeafId();
			return ids;
		},
	);
}

// The Local-mode window marker text (docs/codex-contract.md "Window boundaries").
function windowText(first, current, previous) {
	return [
		"<context_window_guidance>",
		"Checkpoint the active request, known history IDs, decisions, progress, learnings and next steps in notes before new_context.",
		"</context_window_guidance>",
		"",
		"<context_window>",
		"Agent name: /root",
		`First context window id: ${first}`,
		`Current context window id: ${current}`,
		...(previous ? [`Previous context window id: ${previous}`] : []),
		"</context_window>",
	].join("\n");
}

// ~2 MB of log text (UTF-8 bytes), mixing ASCII with multi-byte characters.
function bigLog() {
	const lines = [];
	let bytes = 0;
	for (let i = 1; bytes < 2 * 1024 * 1024; i++) {
		const line = `${String(i).padStart(6, "0")} WARN widget render slow (${i % 997} ms) ${i % 50 === 0 ? UNICODE : "ascii only"}`;
		lines.push(line);
		bytes += Buffer.byteLength(line) + 1;
	}
	return `${lines.join("\n")}\n`;
}

// ---------------------------------------------------------------------------
// Run every scenario: fresh seed and clock, write through Pi, rename to the stable name.

const manifest = {
	generator: "e2e/gen-sessions.mjs",
	piPackage,
	piVersion,
	deterministic: true,
	files: [],
};
try {
	for (const s of scenarios) {
		seed(s.name);
		clock = CLOCK_START;
		const staging = mkdtempSync(join(scratch, `${s.name}-`));
		const sm = SessionManager.create(CWD, staging, { id: s.sessionId });
		const ids = s.build(sm);
		const written = readdirSync(staging).filter((f) => f.endsWith(".jsonl"));
		if (written.length !== 1 || join(staging, written[0]) !== sm.getSessionFile()) {
			throw new Error(`${s.name}: expected exactly Pi's session file in ${staging}, found ${written.join(", ")}`);
		}
		const file = `${s.name}.jsonl`;
		renameSync(join(staging, written[0]), join(outDir, file));
		const entries = sm.getEntries();
		manifest.files.push({
			file,
			sessionId: s.sessionId,
			covers: s.covers,
			description: s.description,
			leafId: sm.getLeafId(),
			entryCount: entries.length,
			sessionName: sm.getSessionName() ?? null,
			ids,
		});
	}
	writeFileSync(join(outDir, "manifest.json"), `${JSON.stringify(manifest, null, 2)}\n`);
	for (const f of manifest.files) console.log(resolve(outDir, f.file));
} finally {
	rmSync(scratch, { recursive: true, force: true });
}
