// Rollover quality: notes guard, context usage and
// reminders, reset-log lines, and their settings.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import {
	contextRemaining,
	deliveredThresholds,
	dueReminder,
	GUARD_REFUSAL,
	GUARD_WARNING,
	guardDecision,
	reminderMessage,
	type ResetEntry,
	resetLogLines,
} from "../src/quality.ts";
import { parseThresholds, resolveSettings } from "../src/settings.ts";
import { byteSize, countOf } from "../src/size.ts";

const boundary = (n: number) => ({
	type: "custom_message",
	customType: "codex-context-window",
	details: { protocol: 1, id: `m${n}`, contextManagement: { protocol: 1, kind: "window", firstWindowId: "w0", currentWindowId: `w${n}`, windowNumber: n } },
});
const note = { type: "custom", customType: "codex-context-note" };
const snapshot = { type: "custom", customType: "codex-context-note-snapshot" };
const msg = { type: "message" };

test("guard: warn proceeds with one sentence, refuse stops, off and written notes proceed silently", () => {
	assert.deepEqual(guardDecision("warn", 0), { proceed: true, warning: GUARD_WARNING });
	assert.deepEqual(guardDecision("refuse", 0), { proceed: false, refusal: GUARD_REFUSAL });
	assert.deepEqual(guardDecision("off", 0), { proceed: true });
	assert.deepEqual(guardDecision("refuse", 1), { proceed: true });
	assert.deepEqual(guardDecision("warn", 2), { proceed: true });
	assert.equal(GUARD_WARNING.split(". ").length, 1, "one sentence");
});

test("get_context_remaining: left = window - used; unknown when Pi has no count", () => {
	assert.deepEqual(contextRemaining({ tokens: 150_000, contextWindow: 200_000, percent: 75 }), {
		text: "You have 50000 tokens left in this context window (150000 of 200000 used, 75%).",
		details: { tokens_used: 150_000, context_window: 200_000, percent_used: 75, tokens_left: 50_000 },
	});
	assert.equal(contextRemaining({ tokens: null, contextWindow: 200_000, percent: null }).text, "You have unknown tokens left in this context window.");
	assert.equal(contextRemaining(undefined).details.tokens_left, null);
});

test("reminders: highest reached threshold, once per window; urgent after the first", () => {
	const th = [70, 85];
	assert.equal(dueReminder(69.9, th, new Set()), undefined);
	assert.deepEqual(dueReminder(70, th, new Set()), { threshold: 70, kind: "reminder" });
	assert.equal(dueReminder(80, th, new Set([70])), undefined);
	assert.deepEqual(dueReminder(90, th, new Set([70])), { threshold: 85, kind: "urgent" });
	assert.equal(dueReminder(null, th, new Set()), undefined);
	const w = { firstWindowId: "w0", currentWindowId: "w1", previousWindowId: "w0", windowNumber: 1 };
	const r = reminderMessage(72.4, "reminder", w, "id1");
	assert.equal(
		r.content,
		"<context_window_reminder>\n28% remaining. Checkpoint the active request, state and known history IDs in notes, then call new_context before continuing work.\n</context_window_reminder>",
	);
	assert.deepEqual(r.details.contextManagement, { protocol: 1, kind: "reminder", firstWindowId: "w0", currentWindowId: "w1", previousWindowId: "w0", windowNumber: 1 });
	const entry = { type: "custom_message", ...r };
	assert.deepEqual([...deliveredThresholds([boundary(1), entry], th)], [70]);
	// A new boundary resets what was delivered.
	assert.deepEqual([...deliveredThresholds([boundary(1), entry, boundary(2)], th)], []);
	const urgent = { type: "custom_message", ...reminderMessage(90, "urgent", w, "id2") };
	assert.deepEqual([...deliveredThresholds([boundary(1), urgent], th)], [85]);
});

test("settings: notes guard and thresholds from env and settings.json", () => {
	const agentDir = mkdtempSync(join(tmpdir(), "ctxd-q-"));
	const s = resolveSettings({ agentDir, env: {}, flags: {} });
	assert.equal(s.notesGuard, "warn");
	assert.deepEqual(s.reminderThresholds, [70, 85]);
	writeFileSync(join(agentDir, "settings.json"), JSON.stringify({ contextd: { notesGuard: "refuse", reminderThresholds: [90, 60] } }));
	const f = resolveSettings({ agentDir, env: {}, flags: {} });
	assert.equal(f.notesGuard, "refuse");
	assert.deepEqual(f.reminderThresholds, [60, 90]);
	const e = resolveSettings({ agentDir, env: { CONTEXTD_NOTES_GUARD: "off", CONTEXTD_REMINDER_THRESHOLDS: "off" }, flags: {} });
	assert.equal(e.notesGuard, "off");
	assert.deepEqual(e.reminderThresholds, []);
	assert.throws(() => resolveSettings({ agentDir, env: { CONTEXTD_NOTES_GUARD: "maybe" }, flags: {} }), /unknown notes guard "maybe"/);
	assert.throws(() => parseThresholds("70,120"), /percentages in \(0, 100\]/);
	assert.deepEqual(parseThresholds("85, 70"), [70, 85]);
});

test("reset-log lines: the last three, newest last", () => {
	const r = (n: number, writes: number): ResetEntry => ({
		mode: "tree",
		state: "completed",
		source: "state+file",
		from: { id: `w${n}`, number: n },
		to: { id: `w${n + 1}`, number: n + 1 },
		archived: { entries: 10 + n, bytes: 1000 * n, first_entry_id: "a", last_entry_id: "b" },
		note_files: 2,
		note_bytes: 40,
		window_note_writes: writes,
		durations: { total_ms: 120 },
	});
	assert.deepEqual(resetLogLines([]), ["no rollovers yet"]);
	assert.deepEqual(resetLogLines([r(0, 1), r(1, 0), r(2, 3), r(3, 1)]), [
		"rollovers: 4 (last 3):",
		"  window 1 → 2 tree completed; 11 entries (1000 bytes) archived; 2 note files carried over; no note written in this window; 120 ms",
		// 2000 / 1024 = 1.95… → "2.0 KiB"; 3000 / 1024 = 2.92… → "2.9 KiB"
		"  window 2 → 3 tree completed; 12 entries (2.0 KiB) archived; 2 note files carried over; 120 ms",
		"  window 3 → 4 tree completed; 13 entries (2.9 KiB) archived; 2 note files carried over; 120 ms",
	]);
});

test("reset-log line of the new-user trial: one note file carried over, none written, the size in KiB", () => {
	const e: ResetEntry = {
		mode: "tree",
		state: "completed",
		source: "state+file",
		from: { id: "w1", number: 1 },
		to: { id: "w2", number: 2 },
		archived: { entries: 1, bytes: 15852, first_entry_id: "a", last_entry_id: "a" },
		note_files: 1,
		note_bytes: 14,
		window_note_writes: 0,
		durations: { total_ms: 169 },
	};
	// 15852 / 1024 = 15.48… → "15.5 KiB"
	assert.deepEqual(resetLogLines([e]), [
		"rollovers: 1 (last 1):",
		"  window 1 → 2 tree completed; 1 entry (15.5 KiB) archived; 1 note file carried over; no note written in this window; 169 ms",
	]);
	assert.deepEqual(resetLogLines([{ ...e, note_files: 0, window_note_writes: 2 }]).slice(1), [
		"  window 1 → 2 tree completed; 1 entry (15.5 KiB) archived; no note files to carry over; 169 ms",
	]);
	// Known only from the file (Local's /contextd new): its times are the entries', so no duration.
	assert.deepEqual(resetLogLines([{ ...e, mode: "local", source: "file", durations: { total_ms: 9422 } }]).slice(1), [
		"  window 1 → 2 local completed; 1 entry (15.5 KiB) archived; 1 note file carried over; no note written in this window",
	]);
});

test("byteSize: bytes below 1 KiB, then one decimal in binary units", () => {
	assert.equal(byteSize(0), "0 bytes");
	assert.equal(byteSize(1), "1 byte");
	assert.equal(byteSize(1023), "1023 bytes");
	assert.equal(byteSize(1024), "1.0 KiB");
	assert.equal(byteSize(15852), "15.5 KiB");
	assert.equal(byteSize(3 * 1024 * 1024), "3.0 MiB");
	assert.equal(countOf(1, "note file"), "1 note file");
	assert.equal(countOf(2, "entry", "entries"), "2 entries");
});
