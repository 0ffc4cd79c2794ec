// Pi's own compaction in Local and Remote mode (docs/design.md §5.3.1 row
// "Auto-compaction, manual /compact"): the summarizer reads the current
// window only, and the window's boundary, which the compaction's kept range
// may cut away, is sent again at the head of every later request. Earlier
// windows stay on the branch, readable through `history`; a summary of them
// would bring closed windows back into the context.
//
// Pi summarizes the very preparation object it hands to
// session_before_compact when no handler returns a compaction (0.85.1 and
// 1.6.0 agent-session.js compact() and _runAutoCompaction(); the runner
// passes the event object itself, docs/pi-facts.md "Compaction"), so the
// current window is limited by editing that object: Pi's model, auth,
// prompt, retries and file lists stay Pi's.
import type { Host } from "./host.ts";
import { identityOf, type WindowIdentity } from "./windows.ts";

/** The fields of Pi's CompactionPreparation this file reads or limits (pi-coding-agent compaction.d.ts). */
export interface Preparation {
	/** The first entry Pi keeps verbatim after the compaction. */
	firstKeptEntryId: string;
	/** The messages before the kept range (after the previous compaction's kept range), summarized. */
	messagesToSummarize: PrepMessage[];
	/** When the cut splits a turn: the turn's messages before firstKeptEntryId, summarized apart. */
	turnPrefixMessages: PrepMessage[];
	/** Whether the cut splits a turn. */
	isSplitTurn: boolean;
	/** The previous compaction's summary on the branch, which Pi updates. */
	previousSummary?: string;
	/** Files read and changed by the summarized messages (and the previous compaction), listed under the summary. */
	fileOps: { read: Set<string>; written: Set<string>; edited: Set<string> };
}

/** The subset of a Pi AgentMessage read here. */
export interface PrepMessage {
	role: string;
	customType?: string;
	details?: unknown;
	content?: unknown;
	nestedCalls?: { calls?: { name?: string; arguments?: unknown }[] };
}

/** The subset of a Pi session entry read here. */
export interface CompactEntry {
	type: string;
	id: string;
	customType?: string;
	content?: unknown;
	display?: boolean;
	details?: unknown;
	timestamp?: string;
	firstKeptEntryId?: string;
	fromHook?: boolean;
}

/**
 * What the compaction does with the current window:
 *   - "pi": Pi's preparation is left as it is (the branch has no window
 *     boundary, or the previous compaction already started inside the
 *     current window and nothing before it is summarized);
 *   - "limited": the preparation was edited in place to summarize the
 *     current window only; dropped counts the messages of earlier windows
 *     (and their boundaries) taken out;
 *   - "cancel": nothing of the current window lies before the kept range,
 *     so there is nothing to compact; reason is the sentence for the person.
 */
export type CompactionPlan = { action: "pi" } | { action: "limited"; window: WindowIdentity; dropped: number } | { action: "cancel"; reason: string };

/** Index of the latest window boundary among branch entries, or -1. */
function lastBoundaryIndex(branch: readonly CompactEntry[]): number {
	for (let i = branch.length - 1; i >= 0; i--) {
		if (branch[i].type === "custom_message" && identityOf(branch[i])) return i;
	}
	return -1;
}

/** Index of the latest boundary message in messages, or -1. */
function lastBoundaryMessage(messages: readonly PrepMessage[]): number {
	for (let i = messages.length - 1; i >= 0; i--) {
		if (messages[i].role === "custom" && identityOf(messages[i])) return i;
	}
	return -1;
}

/** Adds the file operations of one message by Pi's rule (compaction/utils.js extractFileOpsFromMessage: read, write, edit calls with a path). */
function addFileOps(m: PrepMessage, ops: Preparation["fileOps"]): void {
	const add = (name: unknown, args: unknown) => {
		const path = (args as { path?: unknown } | undefined)?.path;
		if (typeof path !== "string" || !path) return;
		if (name === "read") ops.read.add(path);
		else if (name === "write") ops.written.add(path);
		else if (name === "edit") ops.edited.add(path);
	};
	if (m.role === "toolResult") {
		for (const c of m.nestedCalls?.calls ?? []) add(c.name, c.arguments);
		return;
	}
	if (m.role !== "assistant" || !Array.isArray(m.content)) return;
	for (const b of m.content as { type?: string; name?: unknown; arguments?: unknown }[]) {
		if (b?.type === "toolCall") add(b.name, b.arguments);
	}
}

/**
 * Limits prep, in place, to the current window of branch (Pi's branch
 * entries, root first): the summarized messages start after the window's
 * boundary, a previous summary written before the boundary is dropped, and
 * the file lists are rebuilt from what is left. Returns what was done.
 */
export function limitToCurrentWindow(prep: Preparation, branch: readonly CompactEntry[]): CompactionPlan {
	const b = lastBoundaryIndex(branch);
	if (b < 0) return { action: "pi" };
	const window = identityOf(branch[b]) as WindowIdentity;
	const kept = branch.findIndex((e) => e.id === prep.firstKeptEntryId);
	if (kept >= 0 && kept <= b) {
		return {
			action: "cancel",
			reason: `contextd: nothing to compact: context window ${window.windowNumber} is short enough to be kept whole; earlier windows are not sent to the model and stay readable with the history tool`,
		};
	}
	let lastCompaction = -1;
	for (let i = branch.length - 1; i >= 0; i--) {
		if (branch[i].type === "compaction") {
			lastCompaction = i;
			break;
		}
	}
	const inSummarized = lastBoundaryMessage(prep.messagesToSummarize);
	const inPrefix = lastBoundaryMessage(prep.turnPrefixMessages);
	if (inSummarized < 0 && inPrefix < 0 && lastCompaction > b) {
		// The previous compaction's kept range starts after the boundary:
		// Pi's range is inside the window already.
		return { action: "pi" };
	}
	let dropped = 0;
	if (inPrefix >= 0) {
		dropped += prep.messagesToSummarize.length + inPrefix + 1;
		prep.messagesToSummarize = [];
		prep.turnPrefixMessages = prep.turnPrefixMessages.slice(inPrefix + 1);
	} else {
		// The boundary is in the summarized range, or before it (the range
		// starts at an earlier compaction's kept entry): keep what follows it.
		dropped += inSummarized + 1;
		prep.messagesToSummarize = prep.messagesToSummarize.slice(inSummarized + 1);
	}
	const previousInWindow = lastCompaction > b;
	if (!previousInWindow) prep.previousSummary = undefined;
	if (prep.messagesToSummarize.length === 0 && prep.turnPrefixMessages.length === 0) {
		return {
			action: "cancel",
			reason: `contextd: nothing to compact: context window ${window.windowNumber} holds nothing before the part Pi keeps; earlier windows are not sent to the model and stay readable with the history tool`,
		};
	}
	const ops: Preparation["fileOps"] = { read: new Set(), written: new Set(), edited: new Set() };
	const prev = previousInWindow ? branch[lastCompaction] : undefined;
	const pd = prev && !prev.fromHook ? (prev.details as { readFiles?: unknown; modifiedFiles?: unknown } | undefined) : undefined;
	if (Array.isArray(pd?.readFiles)) for (const f of pd.readFiles) ops.read.add(String(f));
	if (Array.isArray(pd?.modifiedFiles)) for (const f of pd.modifiedFiles) ops.edited.add(String(f));
	for (const m of [...prep.messagesToSummarize, ...prep.turnPrefixMessages]) addFileOps(m, ops);
	prep.fileOps = ops;
	return { action: "limited", window, dropped };
}

/** A Pi custom message (AgentMessage role "custom") as the context event carries it. */
export interface CustomContextMessage {
	role: "custom";
	customType: string;
	content: unknown;
	display: boolean;
	details: unknown;
	timestamp: number;
}

/**
 * The context messages with the current window's boundary at their head
 * when a compaction after the boundary cut it out of Pi's kept range:
 * messages unchanged when the branch has no boundary, no compaction after
 * it, or messages already hold that boundary. The boundary goes before
 * the compaction summary (after Pi 1.x system messages), where the
 * window's first message would be.
 */
export function withBoundary<M extends { role: string; customType?: string; details?: unknown }>(messages: M[], branch: readonly CompactEntry[]): (M | CustomContextMessage)[] {
	const b = lastBoundaryIndex(branch);
	if (b < 0 || !branch.slice(b + 1).some((e) => e.type === "compaction")) return messages;
	const be = branch[b];
	const id = identityOf(be)?.currentWindowId;
	if (messages.some((m) => m.role === "custom" && identityOf(m)?.currentWindowId === id)) return messages;
	const boundary: CustomContextMessage = {
		role: "custom",
		customType: be.customType as string,
		content: be.content ?? "",
		display: be.display ?? true,
		details: be.details,
		timestamp: be.timestamp ? Date.parse(be.timestamp) : 0,
	};
	let at = messages.findIndex((m) => m.role !== "system");
	if (at < 0) at = messages.length;
	return [...messages.slice(0, at), boundary, ...messages.slice(at)];
}

/**
 * Registers session_before_compact for Local and Remote: Pi's compaction
 * summarizes the current window only (limitToCurrentWindow), says so in
 * one line, and is cancelled with a sentence when the window has nothing
 * to compact.
 */
export function installWindowCompaction(host: Host): void {
	host.pi.on("session_before_compact", async (event, ctx) => {
		const plan = limitToCurrentWindow(event.preparation as unknown as Preparation, event.branchEntries as unknown as CompactEntry[]);
		if (plan.action === "cancel") {
			host.notify(ctx, plan.reason, "info");
			return { cancel: true };
		}
		if (plan.action === "limited") {
			host.notify(ctx, `contextd: compacting context window ${plan.window.windowNumber} only; earlier windows stay readable with the history tool`, "info");
		}
		return undefined;
	});
}
