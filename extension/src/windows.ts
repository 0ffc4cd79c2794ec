// Window boundaries for Remote mode, where contextd only forwards to the
// Codex backend and never reads the session file: the extension keeps the
// window identity on Pi's branch itself, with the same boundary message
// contextd plans in Local and Tree and the backend's thread hint
// (docs/codex-contract.md "Window boundaries"). The guidance text, the
// custom type, what counts as a boundary and the hint cap come from Go
// (generated/rules.ts); test/rules.test.ts requires the rendering to equal
// contextd's own (coordinator.BoundaryContent).
import { randomUUID } from "node:crypto";
import type { components } from "./generated/contextd.ts";

type Schemas = components["schemas"];
import { BOUNDARY_KIND, GUIDANCE, MAX_HINT_BYTES, WINDOW_TYPE } from "./generated/rules.ts";

/** A boundary's details.contextManagement: which window it opens and the chain it belongs to (coordinator.WindowIdentity). */
export type WindowIdentity = Schemas["CoordinatorWindowIdentity"];

/** A boundary as Pi's sendMessage takes it: contextd's planned boundary without its entry type. */
export type BoundaryMessage = Omit<Schemas["CoordinatorBoundary"], "type">;

/** The identity of a boundary message or entry (role custom / custom_message), if it is one. */
export function identityOf(m: { customType?: string; details?: unknown }): WindowIdentity | undefined {
	if (m.customType !== WINDOW_TYPE) return undefined;
	const cm = (m.details as { contextManagement?: WindowIdentity } | undefined)?.contextManagement;
	return cm?.kind === BOUNDARY_KIND && cm.currentWindowId ? cm : undefined;
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

/** Codex's rule (docs/codex-contract.md "Thread hint"): a hint is used only when non-empty and at most MAX_HINT_BYTES (4,000) UTF-8 bytes. */
export function usableHint(text: unknown): string {
	return typeof text === "string" && text.length > 0 && Buffer.byteLength(text, "utf8") <= MAX_HINT_BYTES ? text : "";
}

/**
 * The messages from the latest window boundary on (Remote projection); all
 * when there is none, or when that boundary is an adoption's window 0
 * (startEntryId set: the window begins at the branch's first entry, so
 * the earlier conversation stays, docs/design.md §4 "Adoption").
 */
export function sliceAtLatestBoundary<M extends { role: string; customType?: string; details?: unknown }>(messages: M[]): M[] {
	for (let i = messages.length - 1; i >= 0; i--) {
		const id = messages[i].role === "custom" ? identityOf(messages[i]) : undefined;
		if (id) return id.startEntryId ? messages : messages.slice(i);
	}
	return messages;
}

/** What the person is told when context management adopts a branch that already holds a conversation (window 0 with startEntryId). */
export const ADOPTION_NOTICE =
	"contextd: context management is on for this conversation from here; its earlier turns stay in the model's context as window 0 and stay reachable with history after new_context";
