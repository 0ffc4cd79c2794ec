// What the person running Pi sees of contextd's messages and tools: the
// window card, reminders, the history/notes/new_context calls and their
// results, and the rollover progress lines. Pure functions from what Pi
// stores (message content and details, tool arguments, the tool result's
// text) to lines of text; index.ts wraps them in Pi's TUI components. The
// model is never shown any of this: it keeps receiving the full boundary
// text and the Codex result shapes (docs/codex-contract.md "Tool surface").
import { identityOf } from "./windows.ts";

/** Colours for parts of a line (Pi's theme in the TUI; identity in tests). */
export interface Style {
	dim(s: string): string;
	accent(s: string): string;
	error(s: string): string;
	/** The query inside a search hit. */
	match(s: string): string;
}

/** The Style that leaves text as it is (no colours), for print/JSON modes and tests. */
export const PLAIN: Style = { dim: (s) => s, accent: (s) => s, error: (s) => s, match: (s) => s };

/** Lines of a collapsed result before "… N more" (Pi expands tool output with its expand key). */
export const COLLAPSED_LINES = 6;
/** Characters of a snippet or item line. */
export const SNIPPET_CHARS = 100;

/** Maps a window id to its number when the session shows it; undefined otherwise. */
export type WindowNumbers = (windowId: string) => number | undefined;

const noNumbers: WindowNumbers = () => undefined;

/** "window 3", or "window 033b8399" (the id's first 8 characters) when the number is unknown. */
export function windowName(id: string, numbers: WindowNumbers = noNumbers): string {
	const n = numbers(id);
	return n === undefined ? `window ${id.slice(0, 8)}` : `window ${n}`;
}

/** The note file names of a boundary's "Recent notes" hint lines (`- /root/notes/plan.md (…)` → plan.md). */
export function hintedNotes(content: string): string[] {
	const out: string[] = [];
	let inNotes = false;
	for (const line of content.split("\n")) {
		if (line.startsWith("Recent notes")) {
			inNotes = true;
			continue;
		}
		if (!inNotes) continue;
		const m = /^- (\S+) \(/.exec(line);
		if (!m) break;
		const p = m[1];
		const i = p.indexOf("/notes/");
		out.push(i >= 0 ? p.slice(i + "/notes/".length) : p);
	}
	return out;
}

/**
 * The window card as the person sees it: one line for a boundary
 * (`── window 3 · notes: plan.md, progress.md ──`) or a reminder
 * (`── window 3 · 28% of the context window left: checkpoint notes, then new_context ──`);
 * the full text, after that line, when expanded.
 */
export function windowCard(content: string, details: unknown, expanded: boolean, style: Style = PLAIN): string[] {
	const id = identityOf({ customType: "codex-context-window", details });
	const cm = (details as { contextManagement?: { kind?: string; windowNumber?: number } } | undefined)?.contextManagement;
	let head: string;
	if (id) {
		const notes = hintedNotes(content);
		head = `window ${id.windowNumber} · ${notes.length ? `notes: ${notes.join(", ")}` : "no notes carried over"}`;
	} else if (cm?.kind === "reminder" || cm?.kind === "urgent") {
		const left = /(\d+)% remaining/.exec(content)?.[1];
		const n = cm.windowNumber !== undefined ? `window ${cm.windowNumber} · ` : "";
		head = `${n}${left ?? "?"}% of the context window left: checkpoint notes, then new_context`;
	} else {
		head = "context window";
	}
	const line = style.accent(`── ${head} ──`);
	return expanded ? [line, ...content.split("\n").map((l) => style.dim(l))] : [line];
}

/** The customType of what the extension tells the model about a rollover that did not happen (rollover.ts notOpenedText). */
export const NOTICE_TYPE = "codex-context-notice";

/** Characters of the notice's text on its collapsed line (the line fits a 120-column terminal). */
const NOTICE_CHARS = 86;

/**
 * The model's notice as the person sees it: one line saying what the
 * model was told, without the sentence every notice ends with
 * (`── contextd told the model: the new context window did not open (navigation was cancelled) ──`);
 * the full text, after that line, when expanded.
 */
export function noticeCard(content: string, expanded: boolean, style: Style = PLAIN): string[] {
	const said = oneLine(content.replace(/[,;:.]?\s*(so )?you are still in the same context window[^]*$/i, ""), NOTICE_CHARS);
	const lower = said.charAt(0).toLowerCase() + said.slice(1);
	const line = style.accent(`── contextd told the model: ${lower} ──`);
	return expanded ? [line, ...content.split("\n").map((l) => style.dim(l))] : [line];
}

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** `history search_contents "port=8443" in window 2`: the call, without JSON. */
export function toolCallLine(tool: string, args: Record<string, unknown>, numbers: WindowNumbers = noNumbers, style: Style = PLAIN): string {
	const name = style.accent(tool);
	if (tool === "new_context") return name;
	const action = str(args.action) ?? "?";
	const parts = [name, action];
	const q = str(args.query);
	if (q !== undefined) parts.push(JSON.stringify(q));
	const path = str(args.path) ?? str(args.prefix) ?? str(args.path_prefix);
	if (path !== undefined) parts.push(path);
	if (str(args.item_id)) parts.push(`item ${args.item_id}`);
	const w = str(args.window_id);
	if (w !== undefined) parts.push(`in ${windowName(w, numbers)}`);
	if (tool === "notes" && (action === "write_file" || action === "append_to_file") && typeof args.text === "string") {
		parts.push(style.dim(`(${Buffer.byteLength(args.text, "utf8")} bytes)`));
	}
	return parts.join(" ");
}

/** One line: whitespace runs become one space, cut to max characters with "…". */
export function oneLine(s: string, max = SNIPPET_CHARS): string {
	const t = s.replace(/\s+/g, " ").trim();
	return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

/** An assistant's tool-call item (`{"tool":"bash","arguments":{…}}`) as `call bash: command=echo hi`; other text unchanged. */
export function itemText(role: string, text: string): string {
	if (role !== "assistant" || !text.startsWith("{")) return text;
	try {
		const c = JSON.parse(text) as { tool?: unknown; arguments?: unknown };
		if (typeof c.tool !== "string") return text;
		const args = c.arguments && typeof c.arguments === "object" ? Object.entries(c.arguments as Record<string, unknown>) : [];
		const shown = args.map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(" ");
		return `call ${c.tool}${shown ? `: ${shown}` : ""}`;
	} catch {
		return text;
	}
}

/** Around the first match of query in text: about 30 characters before, the rest of max after, on one line. */
export function snippet(text: string, query: string, style: Style = PLAIN, max = SNIPPET_CHARS): string {
	const t = text.replace(/\s+/g, " ").trim();
	const i = query ? t.indexOf(query.replace(/\s+/g, " ")) : -1;
	if (i < 0) return oneLine(t, max);
	const q = query.replace(/\s+/g, " ");
	const from = Math.max(0, i - 30);
	const to = Math.min(t.length, Math.max(i + q.length, from + max));
	return `${from > 0 ? "…" : ""}${t.slice(from, i)}${style.match(q)}${t.slice(i + q.length, to)}${to < t.length ? "…" : ""}`;
}

interface Item {
	window_id: string;
	item_id: string;
	role: string;
	tool_name?: string;
	tool_namespace?: string;
	summary?: boolean;
	truncated_content?: string;
	content?: string;
	content_chars?: number;
	total_chars?: number;
	next_offset_chars?: number;
}

function itemLabel(it: Item, numbers: WindowNumbers): string {
	const who = it.summary ? "summary" : it.role === "tool" && it.tool_name ? `tool ${it.tool_name}` : it.role;
	return `${windowName(it.window_id, numbers)} · ${who} · ${it.item_id}`;
}

/** Collapsed: the first COLLAPSED_LINES lines, then "… N more". */
function collapse(lines: string[], expanded: boolean, style: Style): string[] {
	if (expanded || lines.length <= COLLAPSED_LINES) return lines;
	return [...lines.slice(0, COLLAPSED_LINES), style.dim(`… ${lines.length - COLLAPSED_LINES} more`)];
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** Is this hit the search call that asked for it (the assistant item of a history search_contents with the same query)? */
function isOwnSearchCall(it: Item, query: string): boolean {
	return it.role === "assistant" && it.tool_namespace === "history" && it.tool_name === "search_contents" && (it.truncated_content ?? "").includes(JSON.stringify(query).slice(1, -1));
}

/** How to render one tool result: whether it is an error, whether Pi shows it expanded, window numbers for ids and the Style. */
export interface ResultOptions {
	isError: boolean;
	expanded: boolean;
	numbers?: WindowNumbers;
	style?: Style;
}

/**
 * A history or notes tool result for the person: hits with their window,
 * role and a snippet around the match; a note write as path and size; a
 * read as its text; an error as its sentence. text is what the model
 * received (contextd's Codex-shaped JSON, or an error sentence).
 */
export function toolResultLines(tool: string, args: Record<string, unknown>, text: string, o: ResultOptions): string[] {
	const style = o.style ?? PLAIN;
	const numbers = o.numbers ?? noNumbers;
	if (o.isError) return text.split("\n").map((l) => style.error(l));
	let r: Record<string, unknown>;
	try {
		r = JSON.parse(text) as Record<string, unknown>;
	} catch {
		return collapse(text.split("\n"), o.expanded, style);
	}
	if (!r || typeof r !== "object") return [text];
	const action = str(args.action) ?? "";
	if (tool === "history") return historyLines(action, args, r, o.expanded, numbers, style);
	if (tool === "notes") return notesLines(action, args, r, o.expanded, style);
	return collapse(text.split("\n"), o.expanded, style);
}

function historyLines(action: string, args: Record<string, unknown>, r: Record<string, unknown>, expanded: boolean, numbers: WindowNumbers, style: Style): string[] {
	if (Array.isArray(r.windows)) {
		const ws = r.windows as { window_id: string; item_count: number }[];
		const lines = ws.map((w) => `${windowName(w.window_id, numbers)} ${style.dim(w.window_id.slice(0, 8))} · ${plural(w.item_count, "item")}`);
		return [plural(ws.length, "window"), ...collapse(lines, expanded, style)];
	}
	if (Array.isArray(r.items)) {
		const query = str(args.query) ?? "";
		let items = r.items as Item[];
		const own = action === "search_contents" ? items.filter((it) => isOwnSearchCall(it, query)).length : 0;
		if (own) items = items.filter((it) => !isOwnSearchCall(it, query));
		const head =
			action === "search_contents" ? `${plural(items.length, "hit")} for ${JSON.stringify(query)}${own ? style.dim(" (this search call not shown)") : ""}` : plural(items.length, "item");
		const lines = items.map((it) => {
			const t = itemText(it.role, it.truncated_content ?? "");
			return `${style.dim(itemLabel(it, numbers))}  ${action === "search_contents" ? snippet(t, query, style) : oneLine(t)}`;
		});
		return [head, ...collapse(lines, expanded, style)];
	}
	if ("item" in r) {
		const it = r.item as Item | null;
		if (!it) return ["no such item"];
		const total = it.total_chars ?? 0;
		const shown = (it.content ?? "").length;
		const range = it.next_offset_chars !== undefined ? ` · more from offset ${it.next_offset_chars}` : "";
		const head = `${itemLabel(it, numbers)} · ${total} chars${shown < total ? `, ${shown} shown` : ""}${range}`;
		return [style.dim(head), ...collapse(itemText(it.role, it.content ?? "").split("\n"), expanded, style)];
	}
	return [oneLine(JSON.stringify(r))];
}

interface NoteFile {
	path: string;
	bytes: number;
	content?: string;
	start_line?: number;
	stop_line?: number;
	total_lines?: number;
}

/** A note path without its agent prefix: /root/notes/plan.md → plan.md. */
export function notePath(p: string): string {
	const i = p.indexOf("/notes/");
	return i >= 0 ? p.slice(i + "/notes/".length) : p;
}

function notesLines(action: string, args: Record<string, unknown>, r: Record<string, unknown>, expanded: boolean, style: Style): string[] {
	if (action === "search_contents" && Array.isArray(r.files)) {
		const files = r.files as { path: string; matches: { line: string; line_number: number }[] }[];
		const query = str(args.query) ?? "";
		const lines: string[] = [];
		let n = 0;
		for (const f of files) {
			for (const m of f.matches) {
				n++;
				lines.push(`${style.dim(`${notePath(f.path)}:${m.line_number}`)}  ${snippet(m.line, query, style)}`);
			}
		}
		return [`${plural(n, "match", "matches")} for ${JSON.stringify(query)}`, ...collapse(lines, expanded, style)];
	}
	if (Array.isArray(r.files)) {
		const files = r.files as NoteFile[];
		return [plural(files.length, "note"), ...collapse(files.map((f) => `${notePath(f.path)} ${style.dim(`${f.bytes} bytes`)}`), expanded, style)];
	}
	if ("file" in r) {
		const f = r.file as NoteFile | null;
		if (!f) return [`no note ${str(args.path) ?? ""}`.trim()];
		if (action === "write_file") return [`wrote ${notePath(f.path)} ${style.dim(`(${f.bytes} bytes)`)}`];
		if (action === "append_to_file") return [`appended to ${notePath(f.path)} ${style.dim(`(now ${f.bytes} bytes)`)}`];
		const range = f.total_lines !== undefined ? ` · lines ${f.start_line}-${f.stop_line} of ${f.total_lines}` : "";
		return [style.dim(`${notePath(f.path)}${range}`), ...collapse((f.content ?? "").replace(/\n$/, "").split("\n"), expanded, style)];
	}
	return [oneLine(JSON.stringify(r))];
}

/**
 * new_context's result for the person: what happened in the mode the call
 * ran in (the model gets Codex's sentence). details is what the tool
 * returned; its mode names that mode. A result written before details
 * carried it is read by its shape: Local and Remote name the next window
 * (details.window), Tree does not; mode, the session's mode now, is the
 * last resort. So a Local call re-rendered after a switch to Tree still
 * reads as Local.
 */
export function newContextLines(mode: string, text: string, details: unknown, isError: boolean, style: Style = PLAIN): string[] {
	if (isError) return text.split("\n").map((l) => style.error(l));
	const d = (details ?? {}) as { refused?: boolean; window?: { windowNumber?: number } | null; notes_warning?: boolean; mode?: string; rollover_id?: string };
	if (d.refused) return [style.error(text)];
	const warn = d.notes_warning ? [style.error("no note was written in this window: its task state is not carried over")] : [];
	const n = d.window?.windowNumber;
	const ran = d.mode ?? (d.window !== undefined ? "local" : d.rollover_id !== undefined ? "tree" : mode);
	if (ran === "tree") {
		return ["this window will be summarized and archived as a side branch; the next window starts once the summary is written", ...warn];
	}
	if (ran === "local" || ran === "remote") {
		return [n !== undefined ? `context window ${n} starts with the next model call` : "a new context window starts with the next model call", ...warn];
	}
	return [text];
}

/** The rollover's progress line while Pi writes the Tree summary: `contextd: summarizing window 2 for the archive… 12 s`. */
export function rolloverProgress(windowNumber: number | undefined, elapsedMs: number): string {
	const w = windowNumber === undefined ? "this window" : `window ${windowNumber}`;
	return `contextd: summarizing ${w} for its archive… ${Math.floor(elapsedMs / 1000)} s`;
}

/**
 * What replaces Pi's "Navigated to selected point" after a rollover's
 * navigation. adopted: the archived window was window 0 adopting an
 * earlier conversation (startEntryId). Pi's navigation goes to the
 * window's boundary, so that conversation stays on the branch in /tree,
 * but Tree's /context starts the new window at its boundary and the model
 * no longer gets it (docs/modes.md "Windows on a mixed branch"); the
 * person is told so in the same line, once, at that rollover.
 */
export function windowStartedNotice(windowNumber: number | undefined, elapsedMs: number, adopted = false): string {
	const w = windowNumber === undefined ? "a new context window" : `context window ${windowNumber}`;
	const line = `${w} started; the previous one is archived with its summary (${(elapsedMs / 1000).toFixed(1)} s)`;
	return adopted ? `${line}; ${ADOPTED_ARCHIVED}` : line;
}

/** The sentence added when the archived window 0 had adopted an earlier conversation. */
export const ADOPTED_ARCHIVED =
	"the conversation from before context management stays above it in /tree but is no longer sent to the model; history reaches it in window 0";
