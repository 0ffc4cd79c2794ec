// The /contextd command: its subcommands, their argument completion, and
// what each prints, as pure functions over contextd's answers (which may be
// null or missing fields: an older contextd answered GET …/rollovers with
// `null` for a session without rollovers) and Pi's own view of the branch.
// index.ts runs the requests and Pi's API calls these functions plan.
import type { components } from "./generated/contextd.ts";
import { prefixed } from "./notify.ts";
import { type ResetEntry, resetLogLines } from "./quality.ts";
import { NOTE_SNAPSHOT_TYPE, NOTE_TYPE, TREE_ARCHIVE_TYPE, WINDOW_TYPE } from "./generated/rules.ts";
import { modeAdvice } from "./settings.ts";

/** The /contextd subcommands, in the order help and completion list them, each with its one-line description. */
export const SUBCOMMANDS = [
	{ value: "status", description: "mode, window, context used, pending rollover, contextd's health, log file" },
	{ value: "new", description: "start a new context window now" },
	{ value: "mode", description: "switch this Pi's mode: local, tree, remote or off" },
	{ value: "finish", description: "finish a rollover that was interrupted" },
	{ value: "log", description: "every rollover of this branch (the reset log)" },
	{ value: "help", description: "what each subcommand does" },
] as const;

/** A /contextd subcommand name ("status", "new", "mode", "finish", "log", "help"). */
export type Subcommand = (typeof SUBCOMMANDS)[number]["value"];

/** Modes /contextd mode switches between, in any direction, off included (remote then needs an openai-codex model, docs/modes.md). */
export const SWITCHABLE_MODES = ["local", "tree", "remote", "off"] as const;
/** A mode /contextd mode can switch to: "local", "tree", "remote" or "off". */
export type SwitchableMode = (typeof SWITCHABLE_MODES)[number];

/** What parseCommand makes of /contextd's arguments: a subcommand, a mode switch, or an error sentence saying what to type. */
export type Parsed = { sub: Exclude<Subcommand, "mode"> } | { sub: "mode"; mode: SwitchableMode } | { error: string };

/**
 * The argument Tree mode sends itself as "/contextd ARG" at session start to
 * capture a command context (navigateTree needs one): not a subcommand, so
 * neither help nor completion offers it, and no second command shows in
 * Pi's autocomplete (Pi 0.85.1 and 1.6.0 cannot hide a registered command:
 * RegisteredCommand has no such field).
 */
export const CAPTURE_ARGUMENT = "--capture-command-context";

/** The subcommand of "/contextd ARGS"; no argument is status. Unknown input is an error saying what to type. */
export function parseCommand(args: string): Parsed {
	const words = args.trim().split(/\s+/).filter((w) => w !== "");
	const [sub = "status", ...rest] = words;
	const usage = `use /contextd ${SUBCOMMANDS.map((s) => s.value).join("|")}`;
	if (sub === "mode") {
		const m = rest[0];
		if (rest.length === 1 && (SWITCHABLE_MODES as readonly string[]).includes(m)) return { sub: "mode", mode: m as SwitchableMode };
		// A mode in another case: say which to type (modeAdvice, the rule the settings follow too).
		const advice = rest.length === 1 && modeAdvice(m).includes("lowercase") ? `; ${modeAdvice(m)}` : "";
		return { error: `/contextd mode takes one of ${SWITCHABLE_MODES.join(", ")}${m ? `, not "${rest.join(" ")}"` : ""}${advice}` };
	}
	const known = SUBCOMMANDS.find((s) => s.value === sub);
	if (!known) return { error: `unknown subcommand "${sub}"; ${usage}` };
	if (rest.length > 0) return { error: `/contextd ${sub} takes no argument; ${usage}` };
	return { sub: known.value as Exclude<Subcommand, "mode"> };
}

/** One argument completion as Pi's getArgumentCompletions takes it: the text to insert, its label and an optional description. */
export interface Completion {
	value: string;
	label: string;
	description?: string;
}

/** Argument completion of /contextd (Pi's getArgumentCompletions): subcommands, then modes after "mode ". */
export function completions(prefix: string): Completion[] | null {
	const m = /^mode\s+(\S*)$/.exec(prefix.trimStart());
	if (m) {
		const items = SWITCHABLE_MODES.filter((x) => x.startsWith(m[1])).map((x) => ({ value: `mode ${x}`, label: x }));
		return items.length ? items : null;
	}
	if (/\s/.test(prefix.trimStart())) return null;
	const p = prefix.trim();
	const items = SUBCOMMANDS.filter((s) => s.value.startsWith(p)).map((s) => ({ value: s.value, label: s.value, description: s.description }));
	return items.length ? items : null;
}

/** The lines /contextd help prints: one "/contextd SUB: description" per subcommand, in SUBCOMMANDS order. */
export function helpLines(): string[] {
	return SUBCOMMANDS.map((s) => `/contextd ${s.value}${s.value === "mode" ? ` ${SWITCHABLE_MODES.join("|")}` : ""}: ${s.description}`);
}

/**
 * GET /v1/sessions/{id}: the generated OpenAPI type (CoordinatorSessionState).
 * The functions here still read every field as possibly missing or null:
 * an older contextd left some out.
 */
export type SessionAnswer = components["schemas"]["CoordinatorSessionState"];

/** What /contextd status reports on: the session's mode and contextd's connection, health and session answer. */
export interface StatusInput {
	mode: string;
	/** contextd's URL, or undefined when the extension has no connection. */
	url?: string;
	/** The sentence saying why there is no connection. */
	unavailable?: string;
	/** /healthz answered. */
	healthy?: boolean;
	/** The window of the latest boundary on Pi's branch (Pi's view: it is current before Pi writes the file). */
	branchWindow?: { windowNumber: number; currentWindowId: string };
	/** Context used in this window (Pi's getContextUsage). */
	usage?: { tokens: number | null; contextWindow: number; percent: number | null };
	/** GET /v1/sessions/{id}, or the error met asking for it. */
	session?: SessionAnswer | null;
	sessionError?: string;
	/** GET …/rollovers: the reset log (null from an older contextd when there is none). */
	log?: readonly ResetEntry[] | null;
	/** A contextd the extension started: its pid and log file. */
	started?: { pid?: number; logFile?: string };
}

/** /contextd status: one fact a line, never throwing on a missing field. */
export function statusLines(s: StatusInput): string[] {
	const lines = [`contextd mode: ${s.mode}`];
	if (!s.url) {
		lines.push(prefixed(s.unavailable ?? "not connected"));
	} else {
		lines.push(`contextd: ${s.url} (${s.healthy ? "healthy" : "not answering /healthz; start it with `contextd serve`, and the next request finds it"})`);
	}
	if (s.started) {
		const where = s.started.logFile ? `, log ${s.started.logFile}` : "";
		const stop = s.started.pid ? `; stop it with kill ${s.started.pid}` : "";
		lines.push(`started by this extension${s.started.pid ? ` (pid ${s.started.pid})` : ""}${where}${stop}`);
	}
	const st = s.session ?? undefined;
	const win = s.branchWindow ?? (st?.window && st.window.windowNumber !== undefined ? { windowNumber: st.window.windowNumber, currentWindowId: st.window.currentWindowId ?? "" } : undefined);
	if (win) {
		lines.push(`window ${win.windowNumber}${win.currentWindowId ? ` (${win.currentWindowId})` : ""}`);
	} else if (s.mode !== "off") {
		lines.push("no window on this branch yet: it starts before the first model call");
	}
	if (s.usage && s.usage.percent !== null && s.usage.tokens !== null) {
		lines.push(`context used in this window: ${Math.round(s.usage.percent)}% (${s.usage.tokens} of ${s.usage.contextWindow} tokens)`);
	}
	if (s.sessionError) lines.push(s.sessionError);
	if (st) {
		if (typeof st.archives === "number" && st.archives > 0) lines.push(`archived windows: ${st.archives}`);
		const r = st.rollover;
		lines.push(r?.rollover_id ? `rollover ${r.rollover_id}: ${r.state ?? "?"}${interruptedLocal(r) ? INTERRUPTED_LOCAL_HINT : ""}` : "no pending rollover");
		const inc = st.incomplete_rollover;
		if (inc) lines.push(`an interrupted rollover (${inc.state ?? "?"}${inc.missing?.length ? `, missing ${entryNames(inc.missing)}` : ""}): run /contextd finish`);
		if (st.rollover_loop?.windows) lines.push(`the last ${st.rollover_loop.windows} windows made no progress: the model keeps calling new_context`);
		// A registered file Pi has not written yet is where a new session
		// stands (contextd's state awaiting_file, whose problem says
		// "missing"), not something to fix.
		const awaiting = st.state === "awaiting_file";
		if (awaiting) lines.push(AWAITING_FILE_LINE);
		for (const p of st.problems ?? []) {
			if (awaiting && p.reason === "missing") continue;
			lines.push(`problem: ${p.detail ?? p.reason ?? "?"}${p.line ? ` (line ${p.line})` : ""}`);
		}
	}
	if (s.log !== undefined) lines.push(...resetLogLines(s.log ?? []));
	return lines;
}

/** /contextd log: every rollover, one line each. */
export function logLines(log: readonly ResetEntry[] | null | undefined): string[] {
	const l = log ?? [];
	return resetLogLines(l, Math.max(1, l.length));
}

/**
 * A Local rollover settled or committed in contextd's state while Pi is
 * idle was interrupted: settle, commit and the boundary follow one another
 * with no model call between (docs/design.md §5.3.1), so only a contextd
 * stopped between them leaves one (a committed one whose boundary is in
 * the file is completed by GET). Nothing of it is in the session file.
 */
export function interruptedLocal(r: SessionAnswer["rollover"] | undefined): boolean {
	return !!r?.rollover_id && r.mode === "local" && (r.state === "settled" || r.state === "committed");
}

/** /contextd's line for a registered session whose file Pi has not written yet (contextd state awaiting_file). */
/** What a person reads for each entry contextd plans (its customType): /contextd and /contextd finish name them so. */
const ENTRY_NAMES: Record<string, string> = {
	[TREE_ARCHIVE_TYPE]: "the archive marker",
	[NOTE_SNAPSHOT_TYPE]: "the notes snapshot",
	[NOTE_TYPE]: "a note write",
	[WINDOW_TYPE]: "the new window's boundary",
};

/**
 * The entries of customTypes in a person's words, joined as a list
 * ("the archive marker, the notes snapshot and the new window's
 * boundary"); a type without a name is given as it is.
 */
export function entryNames(customTypes: readonly string[]): string {
	const names = customTypes.map((t) => ENTRY_NAMES[t] ?? t);
	return names.length < 2 ? (names[0] ?? "") : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
}

export const AWAITING_FILE_LINE = "no session file yet: Pi writes it at the session's first message";

/** What /contextd status adds to an interrupted Local rollover's line. */
export const INTERRUPTED_LOCAL_HINT = " (interrupted, nothing of it is in the session file: /contextd finish drops it)";

/** What /contextd finish does for the session's state. */
export type FinishPlan =
	| { kind: "commit"; rolloverId: string; summaryEntryId: string; missing: string[] }
	| { kind: "settle"; rolloverId: string }
	| { kind: "drop"; rolloverId: string; window?: number }
	| { kind: "boundary" }
	| { kind: "nothing"; message: string };

/**
 * committed or settled with the summary in the file: commit again (each
 * step is idempotent) and append what is missing; found_in_file (no
 * rollover in contextd's state): append the boundary POST …/windows plans;
 * an interrupted Local rollover (interruptedLocal): drop it (abort: it
 * wrote nothing); a pending rollover: settle it now.
 */
export function finishPlan(st: SessionAnswer | null | undefined): FinishPlan {
	const inc = st?.incomplete_rollover;
	if (inc) {
		if (inc.state === "found_in_file" || !inc.rollover_id) return { kind: "boundary" };
		if (inc.summary_entry_id) return { kind: "commit", rolloverId: inc.rollover_id, summaryEntryId: inc.summary_entry_id, missing: inc.missing ?? [] };
	}
	const r = st?.rollover;
	if (r && interruptedLocal(r)) return { kind: "drop", rolloverId: r.rollover_id, window: r.window?.windowNumber };
	if (r?.rollover_id && (r.state === "pending" || r.state === "settled")) return { kind: "settle", rolloverId: r.rollover_id };
	return { kind: "nothing", message: "no interrupted rollover on this branch: nothing to finish" };
}

/** The planned entries still to append: those whose customType is in missing, in plan order (all when missing is empty). */
export function stillMissing<E extends { customType: string }>(append: readonly E[], missing: readonly string[]): E[] {
	if (missing.length === 0) return [...append];
	const left = [...missing];
	return append.filter((e) => {
		const i = left.indexOf(e.customType);
		if (i < 0) return false;
		left.splice(i, 1);
		return true;
	});
}
