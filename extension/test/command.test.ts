// /contextd (command.ts) and the footer status line (status.ts): parsing,
// completion, and what each prints for contextd's answers, including the
// null and missing fields a fresh session or an older contextd gives.
import assert from "node:assert/strict";
import { test } from "node:test";
import { CAPTURE_ARGUMENT, completions, entryNames, finishPlan, logLines, parseCommand, type SessionAnswer, type StatusInput, statusLines, stillMissing } from "../src/command.ts";
import { statusLine } from "../src/statusline.ts";

/** Some fields of GET /v1/sessions/{id}, as an older contextd answered (any may be missing or null): the command must cope. */
const older = (fields: object): SessionAnswer => fields as unknown as SessionAnswer;

test("parse: no argument is status; subcommands; mode takes local, tree, remote or off", () => {
	assert.deepEqual(parseCommand(""), { sub: "status" });
	assert.deepEqual(parseCommand("  log "), { sub: "log" });
	assert.deepEqual(parseCommand("mode tree"), { sub: "mode", mode: "tree" });
	assert.deepEqual(parseCommand("mode remote"), { sub: "mode", mode: "remote" });
	assert.deepEqual(parseCommand("mode cloud"), { error: '/contextd mode takes one of local, tree, remote, off, not "cloud"' });
	assert.deepEqual(parseCommand("mode"), { error: "/contextd mode takes one of local, tree, remote, off" });
	// Mode names are lowercase wherever they are read (contextd.ModeAdvice).
	assert.deepEqual(parseCommand("mode TREE"), { error: '/contextd mode takes one of local, tree, remote, off, not "TREE"; use tree (mode names are lowercase)' });
	assert.deepEqual(parseCommand("stats"), { error: 'unknown subcommand "stats"; use /contextd status|new|mode|finish|log|help' });
	assert.deepEqual(parseCommand("new now"), { error: "/contextd new takes no argument; use /contextd status|new|mode|finish|log|help" });
});

test("completion: subcommands by prefix, then modes", () => {
	assert.deepEqual(
		completions("")?.map((c) => c.value),
		["status", "new", "mode", "finish", "log", "help"],
	);
	assert.deepEqual(
		completions("f")?.map((c) => c.value),
		["finish"],
	);
	assert.deepEqual(completions("mode t"), [{ value: "mode tree", label: "tree" }]);
	assert.deepEqual(
		completions("mode ")?.map((c) => c.label),
		["local", "tree", "remote", "off"],
	);
	assert.equal(completions("x"), null);
	// Tree's capture argument is no subcommand: never offered.
	assert.equal(completions("-"), null);
	assert.deepEqual(parseCommand(CAPTURE_ARGUMENT), { error: `unknown subcommand "${CAPTURE_ARGUMENT}"; use /contextd status|new|mode|finish|log|help` });
	assert.equal(completions("log extra"), null);
});

test("status of a brand-new session: Pi's window 0, no rollovers (log null), nothing thrown", () => {
	const lines = statusLines({
		mode: "tree",
		url: "http://127.0.0.1:7467",
		healthy: true,
		branchWindow: { windowNumber: 0, currentWindowId: "w0" },
		// contextd has not seen the file yet (Pi 0.85 writes it at the first assistant message); its
		// problem "missing" says so, which is where a new session stands, not a problem.
		session: older({
			state: "awaiting_file",
			window: null,
			archives: 0,
			rollover: null,
			incomplete_rollover: null,
			rollover_loop: null,
			problems: [{ reason: "missing", detail: "the session file does not exist yet: Pi writes it at the session's first message" }],
		}),
		log: null,
	});
	assert.deepEqual(lines, [
		"contextd mode: tree",
		"contextd: http://127.0.0.1:7467 (healthy)",
		"window 0 (w0)",
		"no pending rollover",
		"no session file yet: Pi writes it at the session's first message",
		"no rollovers yet",
	]);
});

test("status after rollovers, with usage, an auto-started contextd and an interrupted rollover", () => {
	const lines = statusLines({
		mode: "local",
		url: "http://127.0.0.1:7467",
		healthy: true,
		started: { pid: 4242, logFile: "/home/me/.pi/agent/contextd/contextd.log" },
		usage: { tokens: 50_000, contextWindow: 200_000, percent: 25 },
		session: older({
			window: { windowNumber: 2, currentWindowId: "w2" },
			archives: 0,
			rollover: null,
			incomplete_rollover: { rollover_id: "r9", state: "committed", summary_entry_id: "s1", missing: ["codex-context-window"] },
			problems: [{ reason: "awaiting_file", detail: "the session file does not exist yet", line: 3 }],
		}),
		log: [
			{ mode: "local", state: "completed", from: { id: "w0", number: 0 }, to: { id: "w1", number: 1 }, archived: null, note_files: 1, window_note_writes: 1, durations: { total_ms: 12 } },
			{ mode: "local", state: "completed", from: { id: "w1", number: 1 }, to: { id: "w2", number: 2 }, archived: null, note_files: 1, window_note_writes: 0, durations: {} },
		] as unknown as StatusInput["log"], // only the fields logLines reads
	});
	assert.deepEqual(lines, [
		"contextd mode: local",
		"contextd: http://127.0.0.1:7467 (healthy)",
		"started by this extension (pid 4242), log /home/me/.pi/agent/contextd/contextd.log; stop it with kill 4242",
		"window 2 (w2)",
		"context used in this window: 25% (50000 of 200000 tokens)",
		"no pending rollover",
		"an interrupted rollover (committed, missing the new window's boundary): run /contextd finish",
		"problem: the session file does not exist yet (line 3)",
		"rollovers: 2 (last 2):",
		"  window 0 → 1 local completed; 1 note file carried over; 12 ms",
		"  window 1 → 2 local completed; 1 note file carried over; no note written in this window",
	]);
});

test("status without contextd: the sentence, nothing else asked", () => {
	assert.deepEqual(statusLines({ mode: "local", unavailable: "contextd is not reachable at http://127.0.0.1:7467; run `contextd serve`, then /reload" }), [
		"contextd mode: local",
		"contextd is not reachable at http://127.0.0.1:7467; run `contextd serve`, then /reload",
		"no window on this branch yet: it starts before the first model call",
	]);
	assert.deepEqual(logLines(null), ["no rollovers yet"]);
	assert.deepEqual(logLines(undefined), ["no rollovers yet"]);
});

test("finish: commit again and append what is missing; a boundary for a rollover found in the file; settle a pending one", () => {
	assert.deepEqual(finishPlan(older({ incomplete_rollover: { rollover_id: "r1", state: "committed", summary_entry_id: "s1", missing: ["codex-context-window"] } })), {
		kind: "commit",
		rolloverId: "r1",
		summaryEntryId: "s1",
		missing: ["codex-context-window"],
	});
	assert.deepEqual(finishPlan(older({ incomplete_rollover: { rollover_id: "", state: "found_in_file", summary_entry_id: "s1", missing: ["codex-context-tree-archive"] } })), { kind: "boundary" });
	assert.deepEqual(finishPlan(older({ rollover: { rollover_id: "r2", state: "pending" }, incomplete_rollover: null })), { kind: "settle", rolloverId: "r2" });
	assert.deepEqual(finishPlan(null), { kind: "nothing", message: "no interrupted rollover on this branch: nothing to finish" });
	const plan = [
		{ customType: "codex-context-tree-archive", n: 1 },
		{ customType: "codex-context-note-snapshot", n: 2 },
		{ customType: "codex-context-window", n: 3 },
	];
	assert.deepEqual(
		stillMissing(plan, ["codex-context-note-snapshot", "codex-context-window"]).map((e) => e.n),
		[2, 3],
	);
	assert.deepEqual(
		stillMissing(plan, []).map((e) => e.n),
		[1, 2, 3],
	);
});

test("status line: mode, window, context used, rollover; unreachable says what to do", () => {
	assert.equal(statusLine({ mode: "tree", reachable: true, window: 2, percent: 34.4, rollover: "pending" }), "contextd tree · window 2 · 34% used · rollover pending");
	assert.equal(statusLine({ mode: "local", reachable: true, window: 0 }), "contextd local · window 0");
	assert.equal(statusLine({ mode: "tree", reachable: true, window: 1, rollover: "summarizing" }), "contextd tree · window 1 · writing the summary");
	// Connected at session_start: the next request finds a restarted contextd by itself.
	assert.equal(statusLine({ mode: "local", reachable: false, window: 3 }), "contextd local · not reachable: run contextd serve");
	// Never connected: the extension connects only at session_start.
	assert.equal(statusLine({ mode: "local", reachable: false, connected: false }), "contextd local · not connected: run contextd serve, then /reload");
	// Refused as too large for contextd's memory limit (toolarge.ts): not a connection fault.
	assert.equal(statusLine({ mode: "local", reachable: false, connected: false, tooLarge: true }), "contextd local · session too large for --memory-limit: Pi's own context");
	assert.equal(statusLine({ mode: "off", reachable: true }), "contextd off");
});

test("entryNames: contextd's planned entries in a person's words, as a list; an unknown type as it is", () => {
	assert.equal(entryNames([]), "");
	assert.equal(entryNames(["codex-context-window"]), "the new window's boundary");
	assert.equal(entryNames(["codex-context-tree-archive", "codex-context-note-snapshot", "codex-context-window"]), "the archive marker, the notes snapshot and the new window's boundary");
	assert.equal(entryNames(["codex-context-note", "x-other"]), "a note write and x-other");
});
