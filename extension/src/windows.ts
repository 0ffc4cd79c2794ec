// Window boundaries for Remote mode, where contextd only forwards to the
// Codex backend and never reads the session file: the extension keeps the
// window identity on Pi's branch itself, with the same boundary message
// contextd plans in Local and Tree (coordinator.BoundaryContent; reference
// codex-history-notes.md §1.2, §3.2) and the backend's thread hint.
import { randomUUID } from "node:crypto";

/** customType of window boundaries and reminders (a custom message). */
export const WINDOW_TYPE = "codex-context-window";

/** The guidance text of every boundary (the same text contextd plans). */
export const GUIDANCE =
	"Checkpoint the active request, known history IDs, decisions, progress, learnings and next steps in notes before new_context. After rollover, read hinted notes. Use history only for a missing detail.\n" +
	"Keep deferred ideas and tasks\u2014including those unrelated to the current work\u2014in notes for later resumption. Update them as decisions change; recording is not permission to implement.";

/** A boundary's details.contextManagement: which window it opens and the chain it belongs to. */
export interface WindowIdentity {
	protocol: 1;
	kind: "window";
	firstWindowId: string;
	currentWindowId: string;
	previousWindowId?: string;
	windowNumber: number;
}

/** A boundary as Pi's sendMessage takes it. */
export interface BoundaryMessage {
	customType: string;
	content: string;
	display: boolean;
	details: { protocol: 1; id: string; contextManagement: WindowIdentity };
}

/** The identity of a boundary message or entry (role custom / custom_message), if it is one. */
export function identityOf(m: { customType?: string; details?: unknown }): WindowIdentity | undefined {
	if (m.customType !== WINDOW_TYPE) return undefined;
	const cm = (m.details as { contextManagement?: WindowIdentity } | undefined)?.contextManagement;
	return cm?.kind === "window" && cm.currentWindowId ? cm : undefined;
}

/** Window 0, or the window after cur: first id kept, previous = cur, number + 1. */
export function nextIdentity(cur: WindowIdentity | undefined): WindowIdentity {
	const id = randomUUID();
	if (!cur) return { protocol: 1, kind: "window", firstWindowId: id, currentWindowId: id, windowNumber: 0 };
	return { protocol: 1, kind: "window", firstWindowId: cur.firstWindowId, currentWindowId: id, previousWindowId: cur.currentWindowId, windowNumber: cur.windowNumber + 1 };
}

/** The boundary opening window id for agent, with the thread hint line when hint is non-empty. */
export function boundaryMessage(agent: string, id: WindowIdentity, hint: string): BoundaryMessage {
	const lines = [
		"<context_window_guidance>",
		GUIDANCE,
		"</context_window_guidance>",
		"",
		"<context_window>",
		`Agent name: ${agent}`,
		`First context window id: ${id.firstWindowId}`,
		`Current context window id: ${id.currentWindowId}`,
	];
	if (id.previousWindowId) lines.push(`Previous context window id: ${id.previousWindowId}`);
	if (hint) lines.push(hint);
	lines.push("</context_window>");
	return { customType: WINDOW_TYPE, content: lines.join("\n"), display: true, details: { protocol: 1, id: randomUUID(), contextManagement: id } };
}

/** Codex's rule (reference §1.6): a hint is used only when non-empty and at most 4,000 UTF-8 bytes. */
export function usableHint(text: unknown): string {
	return typeof text === "string" && text.length > 0 && Buffer.byteLength(text, "utf8") <= 4000 ? text : "";
}

/** The messages from the latest window boundary on (Remote projection); all when there is none. */
export function sliceAtLatestBoundary<M extends { role: string; customType?: string; details?: unknown }>(messages: M[]): M[] {
	for (let i = messages.length - 1; i >= 0; i--) {
		if (messages[i].role === "custom" && identityOf(messages[i])) return messages.slice(i);
	}
	return messages;
}
