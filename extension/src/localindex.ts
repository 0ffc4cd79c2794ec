// What Local and Tree share: both read contextd's local index of the session
// file. Window 0 when a branch has none, the provider context contextd
// projects, the notes guard of new_context, context-usage reminders and
// get_context_remaining.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { branchIdentity, ctxLeafBody } from "./branch.ts";
import { type Host, text } from "./host.ts";
import { applyProjection, type Projection } from "./projection.ts";
import { contextRemaining, contextRemainingAfterRollover, deliveredThresholds, dueReminder, guardDecision, reminderMessage, windowNoteWrites } from "./quality.ts";
import type { PlannedEntry } from "./rollover.ts";
import type { SessionSlot, SessionState } from "./session.ts";
import { contextRemainingParameters } from "./tools.ts";
import { randomUUID } from "node:crypto";

/** POST /v1/sessions/{id}/context's answer (fields used here). */
interface ContextAnswer {
	mode: string;
	awaiting_file: boolean;
	needs_boundary: boolean;
	projection: Projection;
}

/** Sends a planned custom message (a boundary) with Pi's sendMessage. */
export function sendPlanned(host: Host, b: PlannedEntry, options?: { deliverAs: "steer" }): void {
	host.pi.sendMessage({ customType: b.customType, content: b.content ?? "", display: b.display ?? true, details: b.details }, options);
}

/** Appends the boundary of window 0 contextd plans when the active branch has none. Errors: a ContextdError. */
export async function ensureWindow(host: Host, slot: SessionSlot, s: SessionState, ctx: ExtensionContext): Promise<void> {
	if (branchIdentity(ctx.sessionManager.getBranch())) return;
	const ans = await s.need().call<{ append: PlannedEntry[] }>("POST", `${s.path}/windows`, ctxLeafBody(host.piVersion, ctx));
	if (!slot.live(s, ctx, "opening window 0")) return;
	for (const b of ans.append) sendPlanned(host, b);
}

/**
 * A /context failure is said once until it changes or a call succeeds: the
 * next remembered error and the line to notify, if any. err undefined: the
 * call succeeded.
 */
export function contextErrorStep(last: string, err: string | undefined): { last: string; notify?: string } {
	if (err === undefined) return { last: "" };
	const msg = `contextd: ${err}; this request is sent without context management`;
	return msg === last ? { last } : { last: msg, notify: msg };
}

/** What new_context does under the notes guard in ctx's window (quality.ts guardDecision). */
export function notesGuard(host: Host, ctx: ExtensionContext): { proceed: boolean; warning?: string; refusal?: string } {
	return guardDecision(host.settings.notesGuard, windowNoteWrites(ctx.sessionManager.getBranch()));
}

/**
 * Registers what Local and Tree share across Pi events: session_tree (a
 * user's navigation onto a branch without a boundary gets window 0),
 * context (contextd's projection of the provider context) and turn_end
 * (context-usage reminders).
 */
export function installLocalHooks(host: Host, slot: SessionSlot): void {
	const { pi, settings } = host;
	pi.on("session_tree", async (_event, ctx) => {
		// An internal rollover appends its own boundary after the manifest
		// and snapshot; user navigation is ordinary and only needs a
		// boundary when it lands on a branch without one.
		const s = slot.current;
		if (!s || s.internalNavigation || !s.client) return;
		try {
			await ensureWindow(host, slot, s, ctx);
		} catch (err) {
			host.notify(ctx, `contextd: ${(err as Error).message}`, "error");
		}
	});

	pi.on("context", async (event, ctx) => {
		const s = slot.current;
		if (!s?.client) return;
		let ans: ContextAnswer;
		try {
			ans = await s.client.call<ContextAnswer>("POST", `${s.path}/context`, ctxLeafBody(host.piVersion, ctx));
		} catch (err) {
			const step = contextErrorStep(s.contextError, (err as Error).message);
			s.contextError = step.last;
			if (step.notify) host.notify(ctx, step.notify, "error");
			return;
		}
		s.contextError = contextErrorStep(s.contextError, undefined).last;
		if (!slot.live(s, ctx, "the provider context")) return;
		if (ans.awaiting_file) return;
		try {
			return { messages: applyProjection(event.messages as never[], ans.projection) };
		} catch (err) {
			host.notify(ctx, `contextd: ${(err as Error).message}; the request was stopped`, "error");
			ctx.abort();
			return;
		}
	});

	// Once per window and threshold: a reminder custom message (kind
	// reminder for the first threshold, urgent for later ones) before the
	// next model call.
	pi.on("turn_end", async (_event, ctx) => {
		const s = slot.current;
		if (!s?.client || settings.reminderThresholds.length === 0) return;
		// No reminder for a window that is closing (DESIGN.md §5.3.1): a
		// rollover follows this batch, so the next request is the new
		// window's (Local) or the run ends for it (Tree).
		if (s.localRollover !== undefined || s.tree.pending !== undefined) return;
		const branch = ctx.sessionManager.getBranch();
		const usage = ctx.getContextUsage();
		const due = dueReminder(usage?.percent ?? null, settings.reminderThresholds, deliveredThresholds(branch, settings.reminderThresholds));
		const win = branchIdentity(branch);
		if (!due || !win || !usage || usage.percent === null) return;
		pi.sendMessage(reminderMessage(usage.percent, due.kind, win, randomUUID()), { deliverAs: "steer" });
	});
}

/**
 * Registers get_context_remaining (Local and Tree): Pi's context usage as
 * Codex's remaining-tokens sentence. With slot (Local), a call in the
 * message that calls new_context answers for the new window, where Pi
 * sends the model's next request (DESIGN.md §5.3.1).
 */
export function registerContextRemaining(host: Host, slot?: SessionSlot): void {
	host.pi.registerTool({
		name: "get_context_remaining",
		label: "Context remaining",
		description: "Tokens left in the current context window (from Pi's context usage: tokens used, window size, percent used).",
		parameters: contextRemainingParameters,
		async execute(_id, _params, _signal, _onUpdate, ctx) {
			const r = slot?.current?.hold.holding ? contextRemainingAfterRollover(ctx.getContextUsage()) : contextRemaining(ctx.getContextUsage());
			return { content: text(r.text), details: r.details };
		},
	});
}
