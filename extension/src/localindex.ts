// What Local and Tree share: both read contextd's local index of the session
// file. Window 0 when a branch has none, the provider context contextd
// projects, the notes guard of new_context, context-usage reminders and
// get_context_remaining.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { branchIdentity, ctxLeafBody } from "./branch.ts";
import { type Host, text } from "./host.ts";
import type { Result } from "./client.ts";
import { prefixed } from "./notify.ts";
import { withBoundary } from "./compaction.ts";
import { applyProjection } from "./projection.ts";
import { contextRemaining, contextRemainingAfterRollover, deliveredThresholds, dueReminder, guardDecision, reminderMessage } from "./quality.ts";
import type { PlannedEntry } from "./rollover.ts";
import type { SessionSlot, SessionState } from "./session.ts";
import { contextRemainingParameters } from "./tools.ts";
import { type Problem, warnConcurrentWriters } from "./writers.ts";
import { isSessionTooLarge, setTooLargeAside } from "./toolarge.ts";
import { ADOPTION_NOTICE } from "./windows.ts";
import { randomUUID } from "node:crypto";

/** What the person is told when a rollover interrupted after its summary is finished from the session file. */
export const FINISHED_FROM_FILE = "the interrupted rollover is finished from the session file: a new context window started";

/** Sends a planned custom message (a boundary) with Pi's sendMessage. */
export function sendPlanned(host: Host, b: Pick<PlannedEntry, "customType" | "content" | "display" | "details">, options?: { deliverAs: "steer" }): void {
	host.pi.sendMessage({ customType: b.customType, content: b.content ?? "", display: b.display ?? true, details: b.details }, options);
}

/** POST /v1/sessions/{id}/windows's answer: window 0's boundary, or an interrupted Tree rollover's missing entries (finish, appended first) and the boundary. */
export type WindowsPlan = Result<"session-windows">;

/**
 * Appends what contextd plans when the active branch has no boundary:
 * window 0, or the missing entries of a Tree rollover the branch's summary
 * shows was interrupted (finish, then the boundary). Returns the plan;
 * undefined when the branch has a boundary or the session was replaced.
 * Errors: a ContextdError.
 */
export async function ensureWindow(host: Host, slot: SessionSlot, s: SessionState, ctx: ExtensionContext): Promise<WindowsPlan | undefined> {
	if (branchIdentity(ctx.sessionManager.getBranch())) return undefined;
	const ans = await s.need().request("session-windows", { path: s.params, body: ctxLeafBody(host.piVersion, ctx) });
	if (!slot.live(s, ctx, "opening window 0")) return undefined;
	for (const e of ans.finish ?? []) host.pi.appendEntry(e.customType, e.data);
	for (const b of ans.append) sendPlanned(host, b);
	if (ans.first && ans.window.startEntryId) host.notify(ctx, ADOPTION_NOTICE, "info");
	return ans;
}

/** /contextd finish (Local and Tree): finishes an interrupted rollover (ensureWindow) and says what was appended, in one sentence. */
export async function finishRollover(host: Host, slot: SessionSlot, ctx: ExtensionContext): Promise<string> {
	const s = slot.current;
	if (!s?.client) return prefixed(s?.unavailable ?? "contextd is not connected yet");
	try {
		const ans = await ensureWindow(host, slot, s, ctx);
		if (!ans) return "contextd: nothing to finish: this branch has a current window";
		if (ans.finish?.length || ans.rollover_id) {
			const what = [...(ans.finish ?? []).map((e) => e.customType), ...ans.append.map((e) => e.customType)].join(", ");
			return `contextd: finished the interrupted rollover${ans.rollover_id ? ` ${ans.rollover_id}` : ""}: appended ${what}`;
		}
		return "contextd: this branch had no window; opened one";
	} catch (err) {
		return prefixed((err as Error).message);
	}
}

/**
 * A /context failure is said once until it changes or a call succeeds: the
 * next remembered error and the line to notify, if any. err undefined: the
 * call succeeded. The session is connected (the hook runs only then), and
 * each call looks contextd up again (client.ts Contextd.call), so no
 * /reload is asked for: the next request after contextd answers again is
 * managed.
 */
export function contextErrorStep(last: string, err: string | undefined): { last: string; notify?: string } {
	if (err === undefined) return { last: "" };
	const msg = prefixed(`${err}; this request goes without context management until contextd answers`);
	return msg === last ? { last } : { last: msg, notify: msg };
}

/**
 * What new_context does under the notes guard (quality.ts guardDecision),
 * with the note writes of the current window as contextd counts them
 * (/context window_note_writes). The guard off asks nothing. Errors: a
 * ContextdError.
 */
export async function notesGuard(host: Host, s: SessionState, ctx: ExtensionContext): Promise<{ proceed: boolean; warning?: string; refusal?: string }> {
	if (host.settings.notesGuard === "off") return { proceed: true };
	const ans = await s.need().request("session-context", { path: s.params, body: ctxLeafBody(host.piVersion, ctx) });
	return guardDecision(host.settings.notesGuard, ans.window_note_writes);
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
			const plan = await ensureWindow(host, slot, s, ctx);
			// A rollover whose summary Pi wrote after a reload is finished here.
			if (plan?.finish?.length || plan?.rollover_id) host.notify(ctx, `contextd: ${FINISHED_FROM_FILE}`, "info");
		} catch (err) {
			if (isSessionTooLarge(err)) setTooLargeAside(host, s, ctx, err);
			else host.notify(ctx, prefixed((err as Error).message), "error");
		}
	});

	pi.on("context", async (event, ctx) => {
		const s = slot.current;
		if (!s?.client) return;
		let ans: Result<"session-context">;
		try {
			ans = await s.client.request("session-context", { path: s.params, body: ctxLeafBody(host.piVersion, ctx) });
		} catch (err) {
			if (isSessionTooLarge(err)) {
				setTooLargeAside(host, s, ctx, err);
				return;
			}
			const step = contextErrorStep(s.contextError, (err as Error).message);
			s.contextError = step.last;
			if (step.notify) host.notify(ctx, step.notify, "error");
			return;
		}
		s.contextError = contextErrorStep(s.contextError, undefined).last;
		if (!slot.live(s, ctx, "the provider context")) return;
		warnConcurrentWriters(host, s, ctx, ans.problems);
		if (ans.awaiting_file) return;
		try {
			// After a compaction cut the window's boundary away, it is sent
			// again at the head (compaction.ts withBoundary).
			const messages = withBoundary(applyProjection(event.messages as never[], ans.projection), ctx.sessionManager.getBranch() as never[]);
			return { messages: messages as typeof event.messages };
		} catch (err) {
			host.notify(ctx, prefixed(`${(err as Error).message}; the request was stopped`), "error");
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
		// No reminder for a window that is closing (docs/design.md §5.3.1): a
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
 * sends the model's next request (docs/design.md §5.3.1).
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
