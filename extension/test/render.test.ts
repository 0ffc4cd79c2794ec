// What a person sees of contextd in Pi (render.ts): the window card,
// reminders, tool calls and results, rollover progress. Inputs are what
// Pi 1.6.0 stored in the README recipe's session (tool result texts copied
// from its JSONL) and contextd's boundary format (coordinator.BoundaryContent).
import assert from "node:assert/strict";
import { test } from "node:test";
import { hintedNotes, itemText, newContextLines, noticeCard, rolloverProgress, snippet, toolCallLine, toolResultLines, windowCard, windowStartedNotice } from "../src/render.ts";
import { reminderMessage } from "../src/quality.ts";

const W0 = "b98a8ac1-fa40-4d71-a1bd-a6f3e39544be";
const W1 = "5a62fa8a-0ff3-4298-83af-038d31da8619";
const numbers = (id: string) => (id === W0 ? 0 : id === W1 ? 1 : undefined);

const boundary1 = [
	"<context_window_guidance>",
	"Checkpoint the active request, …",
	"</context_window_guidance>",
	"",
	"<context_window>",
	"Agent name: /root",
	`First context window id: ${W0}`,
	`Current context window id: ${W1}`,
	`Previous context window id: ${W0}`,
	"Recent notes (up to 5, most-recent first):",
	"- /root/notes/plan.md (2 lines, 23 UTF-8 bytes)",
	"- /root/notes/progress.md (1 lines, 9 UTF-8 bytes)",
	`Previous window history IDs: {"window_id":"${W0}","summary_item_id":"fdb390f4","user_item_ids":["941087cd"]}`,
	"</context_window>",
].join("\n");
const details1 = { protocol: 1, id: "m1", contextManagement: { protocol: 1, kind: "window", firstWindowId: W0, currentWindowId: W1, previousWindowId: W0, windowNumber: 1 } };

test("window card: one line collapsed, the line then the full text expanded", () => {
	assert.deepEqual(hintedNotes(boundary1), ["plan.md", "progress.md"]);
	assert.deepEqual(windowCard(boundary1, details1, false), ["── window 1 · notes: plan.md, progress.md ──"]);
	const expanded = windowCard(boundary1, details1, true);
	assert.equal(expanded[0], "── window 1 · notes: plan.md, progress.md ──");
	assert.equal(expanded.slice(1).join("\n"), boundary1);
	const w0 = boundary1.split("\n").filter((l) => !l.startsWith("Previous") && !l.startsWith("Recent") && !l.startsWith("- ")).join("\n");
	assert.deepEqual(windowCard(w0, { ...details1, contextManagement: { ...details1.contextManagement, windowNumber: 0 } }, false), ["── window 0 · no notes carried over ──"]);
});

test("reminder card: the window, what is left and what to do", () => {
	const r = reminderMessage(72, "reminder", { firstWindowId: W0, currentWindowId: W1, windowNumber: 1 }, "r1");
	assert.deepEqual(windowCard(r.content, r.details, false), ["── window 1 · 28% of the context window left: checkpoint notes, then new_context ──"]);
});

test("tool calls are one line without JSON", () => {
	assert.equal(toolCallLine("history", { action: "search_contents", query: "port=8443" }), 'history search_contents "port=8443"');
	assert.equal(toolCallLine("history", { action: "read_item", window_id: W0, item_id: "dfd7fe5c" }, numbers), "history read_item item dfd7fe5c in window 0");
	assert.equal(toolCallLine("history", { action: "list_items", window_id: "0123456789abcdef" }), "history list_items in window 01234567");
	assert.equal(toolCallLine("notes", { action: "write_file", path: "plan.md", text: "- find the port\n" }), "notes write_file plan.md (16 bytes)");
	assert.equal(toolCallLine("new_context", {}), "new_context");
});

// The history search_contents result Pi 1.6.0 stored in the recipe's session.
const searchResult = JSON.stringify({
	source: "pi-session",
	items: [
		{ window_id: W0, item_id: "6eae8bce", role: "assistant", tool_name: "bash", truncated_content: '{"tool":"bash","arguments":{"command":"echo port=8443"}}', content_chars: 56 },
		{ window_id: W0, item_id: "dfd7fe5c", role: "tool", tool_name: "bash", truncated_content: "port=8443\n", content_chars: 10 },
		{
			window_id: W1,
			item_id: "1d828350",
			role: "assistant",
			tool_name: "search_contents",
			tool_namespace: "history",
			truncated_content: '{"tool":"history","arguments":{"action":"search_contents","query":"port=8443"}}',
			content_chars: 79,
		},
	],
});

test("search hits: window, role, snippet; the search call itself left out", () => {
	const lines = toolResultLines("history", { action: "search_contents", query: "port=8443" }, searchResult, { isError: false, expanded: false, numbers });
	assert.deepEqual(lines, [
		'2 hits for "port=8443" (this search call not shown)',
		"window 0 · assistant · 6eae8bce  call bash: command=echo port=8443",
		"window 0 · tool bash · dfd7fe5c  port=8443",
	]);
	for (const l of lines) assert.ok(!/[{}]/.test(l), `no JSON braces: ${l}`);
	const marked = toolResultLines("history", { action: "search_contents", query: "port=8443" }, searchResult, {
		isError: false,
		expanded: false,
		style: { dim: (s) => s, accent: (s) => s, error: (s) => s, match: (s) => `[${s}]` },
	});
	assert.equal(marked[2], `window ${W0.slice(0, 8)} · tool bash · dfd7fe5c  [port=8443]`);
});

test("snippet: about 30 characters before the match, cut with …", () => {
	const text = `${"a".repeat(50)} needle ${"b".repeat(200)}`;
	const s = snippet(text, "needle");
	// needle at 51; from 51 - 30 = 21, to 21 + 100 = 121: 29 a's and a space, needle, a space and 63 b's.
	assert.equal(s, `…${"a".repeat(29)} needle ${"b".repeat(63)}…`);
	assert.equal(snippet("short port=8443 text", "port"), "short port=8443 text");
	assert.equal(itemText("assistant", '{"tool":"read","arguments":{}}'), "call read");
	assert.equal(itemText("tool", '{"a":1}'), '{"a":1}');
});

test("read_item shows the text; list_windows the windows", () => {
	const read = JSON.stringify({ source: "pi-session", item: { window_id: W0, item_id: "dfd7fe5c", role: "tool", tool_name: "bash", content: "port=8443\n", total_chars: 10 } });
	assert.deepEqual(toolResultLines("history", { action: "read_item" }, read, { isError: false, expanded: false, numbers }), ["window 0 · tool bash · dfd7fe5c · 10 chars", "port=8443", ""]);
	const windows = JSON.stringify({ source: "pi-session", windows: [{ window_id: W0, item_count: 8 }, { window_id: W1, item_count: 1 }] });
	assert.deepEqual(toolResultLines("history", { action: "list_windows" }, windows, { isError: false, expanded: false, numbers }), [
		"2 windows",
		"window 0 b98a8ac1 · 8 items",
		"window 1 5a62fa8a · 1 item",
	]);
});

test("notes: a write shows path and size, a read its text, a search its lines", () => {
	// The write_file result Pi 1.6.0 stored in the recipe's session.
	const wrote = '{"source":"pi-session","file":{"path":"/root/notes/plan.md","bytes":16,"created_at":"2026-12-01T15:57:09.969Z","updated_at":"2026-12-01T15:57:09.969Z"}}';
	assert.deepEqual(toolResultLines("notes", { action: "write_file", path: "plan.md" }, wrote, { isError: false, expanded: false }), ["wrote plan.md (16 bytes)"]);
	assert.deepEqual(toolResultLines("notes", { action: "append_to_file", path: "plan.md" }, wrote, { isError: false, expanded: false }), ["appended to plan.md (now 16 bytes)"]);
	const read = JSON.stringify({ source: "pi-session", file: { path: "/root/notes/plan.md", bytes: 16, content: "- find the port\n- done\n", start_line: 1, stop_line: 2, total_lines: 2 } });
	assert.deepEqual(toolResultLines("notes", { action: "read_file", path: "plan.md" }, read, { isError: false, expanded: false }), ["plan.md · lines 1-2 of 2", "- find the port", "- done"]);
	const search = JSON.stringify({ source: "pi-session", files: [{ path: "/root/notes/plan.md", matches: [{ line: "- find the port", line_number: 1 }] }] });
	assert.deepEqual(toolResultLines("notes", { action: "search_contents", query: "port" }, search, { isError: false, expanded: false }), ['1 match for "port"', "plan.md:1  - find the port"]);
	const list = JSON.stringify({ source: "pi-session", files: [{ path: "/root/notes/plan.md", bytes: 16 }] });
	assert.deepEqual(toolResultLines("notes", { action: "list_files_by_prefix" }, list, { isError: false, expanded: false }), ["1 note", "plan.md 16 bytes"]);
	assert.deepEqual(toolResultLines("notes", { action: "read_file", path: "x.md" }, '{"source":"pi-session","file":null}', { isError: false, expanded: false }), ["no note x.md"]);
});

test("errors show the sentence; long results collapse to six lines and a count", () => {
	const err = "contextd at http://127.0.0.1:7467 is not answering; run `contextd serve`, then /reload";
	assert.deepEqual(toolResultLines("history", { action: "list_windows" }, err, { isError: true, expanded: false }), [err]);
	const many = JSON.stringify({ source: "pi-session", windows: Array.from({ length: 9 }, (_, i) => ({ window_id: `${i}`.repeat(8), item_count: i })) });
	const lines = toolResultLines("history", { action: "list_windows" }, many, { isError: false, expanded: false });
	assert.equal(lines.length, 1 + 6 + 1);
	assert.equal(lines[7], "… 3 more");
	assert.equal(toolResultLines("history", { action: "list_windows" }, many, { isError: false, expanded: true }).length, 10);
});

test("new_context says what happens in this mode; progress and the notice", () => {
	const codex = "A new context window will start without summarizing conversation history.";
	assert.deepEqual(newContextLines("local", codex, { window: { windowNumber: 2 }, notes_warning: false }, false), ["context window 2 starts with the next model call"]);
	assert.deepEqual(newContextLines("tree", codex, { rollover_id: "r", merged: false, notes_warning: true }, false), [
		"this window will be summarized and archived as a side branch; the next window starts once the summary is written",
		"no note was written in this window: its task state is not carried over",
	]);
	assert.deepEqual(newContextLines("local", "new_context refused: …", { refused: true }, false), ["new_context refused: …"]);
	// After /contextd mode tree, Pi re-renders window 0's Local call: it
	// reads as the Local call it was, by details.mode or, for a result
	// written before details carried the mode, by its window field.
	const local = ["context window 1 starts with the next model call"];
	assert.deepEqual(newContextLines("tree", codex, { rollover_id: "r", merged: false, notes_warning: false, window: { windowNumber: 1 }, mode: "local" }, false), local);
	assert.deepEqual(newContextLines("tree", codex, { rollover_id: "r", merged: false, notes_warning: false, window: { windowNumber: 1 } }, false), local);
	// And a Tree call re-rendered after a switch to Local stays a Tree call.
	assert.deepEqual(newContextLines("local", codex, { rollover_id: "r", merged: false, notes_warning: false }, false), [
		"this window will be summarized and archived as a side branch; the next window starts once the summary is written",
	]);
	assert.equal(rolloverProgress(2, 12_400), "contextd: summarizing window 2 for its archive… 12 s");
	assert.equal(windowStartedNotice(3, 1_250), "context window 3 started; the previous one is archived with its summary (1.3 s)");
	assert.equal(
		windowStartedNotice(1, 1_250, true),
		"context window 1 started; the previous one is archived with its summary (1.3 s); the conversation from before context management stays above it in /tree but is no longer sent to the model; history reaches it in window 0",
	);
});

test("the model's notice: one line saying what the model was told; expanded, the full text", () => {
	// rollover.ts notOpenedText("navigation was cancelled"), and pending.ts's notice.
	const told = "The new context window did not open (navigation was cancelled); you are still in the same context window.";
	assert.deepEqual(noticeCard(told, false), ["── contextd told the model: the new context window did not open (navigation was cancelled) ──"]);
	assert.deepEqual(noticeCard(told, true), ["── contextd told the model: the new context window did not open (navigation was cancelled) ──", told]);
	const pending =
		"The new context window did not open: an earlier new_context was interrupted and is not finished yet, so you are still in the same context window; go on with the task here.";
	assert.deepEqual(noticeCard(pending, false), ["── contextd told the model: the new context window did not open: an earlier new_context was interrupted and is no… ──"]);
});
