// Rollover quality: the notes guard of new_context (on contextd's count of
// the window's note writes), context-usage reminders and
// get_context_remaining, and the reset-log lines of /contextd. Pure
// functions over Pi's entries and numbers, so they run in unit tests.
import type { BranchEntry } from "./branch.ts";
import type { components } from "./generated/contextd.ts";

type Schemas = components["schemas"];
import { WINDOW_TYPE } from "./generated/rules.ts";
import { byteSize, countOf } from "./size.ts";
import { identityOf } from "./windows.ts";

/** What new_context does when the window wrote no note: warn, refuse, or nothing (off). */
export type NotesGuard = "warn" | "refuse" | "off";
/** The notes guard values the settings accept. */
export const NOTES_GUARDS: readonly NotesGuard[] = ["warn", "refuse", "off"];

/** The one sentence the warn guard adds to new_context's tool result. */
export const GUARD_WARNING = "Warning: nothing was checkpointed in notes during this context window, so its task state is not carried over; the new context window starts anyway.";

/** The refuse guard's tool result; nothing else happens. */
export const GUARD_REFUSAL =
	"new_context refused: no note was written in this context window. Checkpoint the active request, state and known history IDs with notes write_file or append_to_file first, then call new_context again.";

/** What new_context does under the guard: proceed (with an optional warning) or refuse. */
export function guardDecision(guard: NotesGuard, writes: number): { proceed: boolean; warning?: string; refusal?: string } {
	if (guard === "off" || writes > 0) return { proceed: true };
	if (guard === "refuse") return { proceed: false, refusal: GUARD_REFUSAL };
	return { proceed: true, warning: GUARD_WARNING };
}

/** Pi's context usage (ctx.getContextUsage()): tokens used, window size in tokens, percent used; null when unknown. */
export interface Usage {
	tokens: number | null;
	contextWindow: number;
	percent: number | null;
}

/** get_context_remaining's answer: Codex's remaining-tokens fragment plus Pi's numbers. */
export function contextRemaining(u: Usage | undefined): { text: string; details: Record<string, number | null> } {
	if (!u || u.tokens === null || u.percent === null) {
		return {
			text: "You have unknown tokens left in this context window.",
			details: { tokens_used: null, context_window: u?.contextWindow ?? null, percent_used: null, tokens_left: null },
		};
	}
	const left = Math.max(0, u.contextWindow - u.tokens);
	return {
		text: `You have ${left} tokens left in this context window (${u.tokens} of ${u.contextWindow} used, ${Math.round(u.percent)}%).`,
		details: { tokens_used: u.tokens, context_window: u.contextWindow, percent_used: u.percent, tokens_left: left },
	};
}

/**
 * get_context_remaining called in the message that calls new_context, in
 * Local mode: Pi delivers the model's next request in the new window,
 * which starts with its boundary alone, so the answer describes that
 * window (docs/design.md §5.3.1), never the one closing.
 */
export function contextRemainingAfterRollover(u: Usage | undefined): { text: string; details: Record<string, number | null | boolean> } {
	const cw = u?.contextWindow ?? null;
	return {
		text:
			cw === null
				? "A new context window starts after this message's tool calls; it holds only its boundary at first."
				: `A new context window starts after this message's tool calls; it holds only its boundary at first, so nearly all of its ${cw} tokens are left.`,
		details: { tokens_used: null, context_window: cw, percent_used: null, tokens_left: null, new_window: true },
	};
}

/**
 * The reminder due at this usage: the highest threshold (percent used)
 * reached and not yet delivered in the window, or undefined. thresholds
 * ascending; the first is kind "reminder", later ones "urgent" (the kinds
 * of Codex's window markers, docs/codex-contract.md "Window boundaries").
 */
export function dueReminder(percent: number | null, thresholds: readonly number[], delivered: ReadonlySet<number>): { threshold: number; kind: "reminder" | "urgent" } | undefined {
	if (percent === null) return undefined;
	let due: number | undefined;
	for (const t of thresholds) if (percent >= t) due = t;
	if (due === undefined || delivered.has(due)) return undefined;
	return { threshold: due, kind: due === thresholds[0] ? "reminder" : "urgent" };
}

/** The reminder custom message (customType codex-context-window, kind reminder/urgent: not a boundary). */
export function reminderMessage(percent: number, kind: "reminder" | "urgent", window: { firstWindowId: string; currentWindowId: string; windowNumber: number; previousWindowId?: string }, id: string) {
	const remaining = Math.max(0, 100 - Math.round(percent));
	return {
		customType: WINDOW_TYPE,
		content: `<context_window_reminder>\n${remaining}% remaining. Checkpoint the active request, state and known history IDs in notes, then call new_context before continuing work.\n</context_window_reminder>`,
		display: true,
		details: {
			protocol: 1,
			id,
			contextManagement: {
				protocol: 1,
				kind,
				firstWindowId: window.firstWindowId,
				currentWindowId: window.currentWindowId,
				...(window.previousWindowId ? { previousWindowId: window.previousWindowId } : {}),
				windowNumber: window.windowNumber,
			},
		},
	};
}

/** Thresholds already delivered in the current window: reminder messages on the branch after its latest boundary. */
export function deliveredThresholds(branch: readonly BranchEntry[], thresholds: readonly number[]): Set<number> {
	const out = new Set<number>();
	for (const e of branch) {
		if (e.type !== "custom_message" || e.customType !== WINDOW_TYPE) continue;
		if (identityOf(e)) {
			out.clear();
			continue;
		}
		const d = (e.details as { contextManagement?: { kind?: string }; threshold?: number } | undefined) ?? {};
		const kind = d.contextManagement?.kind;
		if (kind === "reminder") out.add(thresholds[0]);
		if (kind === "urgent") for (const t of thresholds.slice(1)) out.add(t);
	}
	return out;
}

/** One entry of GET /v1/sessions/{id}/rollovers (the reset log). */
export type ResetEntry = Schemas["CoordinatorResetEntry"];

/** The last n rollovers of the reset log, one line each, newest last. */
export function resetLogLines(log: readonly ResetEntry[], n = 3): string[] {
	if (log.length === 0) return ["no rollovers yet"];
	const lines = [`rollovers: ${log.length} (last ${Math.min(n, log.length)}):`];
	for (const r of log.slice(-n)) {
		const to = r.to ? `${r.to.number}` : "?";
		const parts = [`  window ${r.from.number} → ${to} ${r.mode} ${r.state}`];
		if (r.archived) parts.push(`${countOf(r.archived.entries, "entry", "entries")} (${byteSize(r.archived.bytes)}) archived`);
		// note_files: every note file at the cut, carried into the next
		// window; window_note_writes: writes made in the closed window.
		parts.push(r.note_files === 0 ? "no note files to carry over" : `${countOf(r.note_files, "note file")} carried over`);
		if (r.window_note_writes === 0) parts.push("no note written in this window");
		// A rollover contextd knows only from the file has the entries'
		// times (the closed window's last entry → the boundary), not its own.
		if (r.durations.total_ms !== undefined && r.source !== "file") parts.push(`${r.durations.total_ms} ms`);
		if (r.reason) parts.push(r.reason);
		lines.push(parts.join("; "));
	}
	return lines;
}
