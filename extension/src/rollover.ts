// The settled phase of a Tree rollover (docs/design.md): settle, save the editor text, navigateTree(boundary, {summarize})
// with the captured command context, commit, append manifest and note
// snapshot, then the boundary (the only entry that triggers a turn),
// complete, restore the editor text. Every failure ends in one concise UI
// error; before navigation completes the old branch is kept (the rollover
// is aborted), after it no turn starts and contextd reports the rollover
// as incomplete. Pi's objects are passed in, so this runs in unit tests.

import { ContextdError, type RequestBody, type Result, type Schemas } from "./client.ts";
import type { RolloverOutcome } from "./tree-state.ts";

/** An entry contextd plans for the extension to append: a custom entry (appendEntry) or a custom message (sendMessage). */
export type PlannedEntry = Schemas["CoordinatorPlannedEntry"];

/** The contextd operations of one rollover's settled phase. */
export type RolloverOp = "rollover-settle" | "rollover-commit" | "rollover-complete" | "rollover-abort";

/** The ports of the settled phase: contextd calls and Pi's objects, passed in so it runs in unit tests. */
export interface RolloverDeps {
	/** Calls operation op of this rollover (session and rollover ids filled in); rejects with a ContextdError saying what failed. */
	call<K extends RolloverOp>(op: K, body: RequestBody<K>): Promise<Result<K>>;
	/** Pi's live leaf when it is on disk ({} otherwise). */
	leafBody(): { leaf_id?: string };
	/** The captured command context's navigateTree, or undefined when none was captured. */
	navigateTree: ((targetId: string, options: { summarize: boolean; label?: string }) => Promise<{ cancelled: boolean }>) | undefined;
	/** The current leaf entry after navigation (a label entry names its target: targetId). */
	leafEntry(): { id: string; type: string; targetId?: string } | undefined;
	/** The entry of id (Pi's sessionManager.getEntry). */
	entry(id: string): { id: string; type: string } | undefined;
	/** The editor's text (Pi's ctx.ui.getEditorText; "" headless). */
	getEditorText(): string;
	/** Sets the editor's text (Pi's ctx.ui.setEditorText). */
	setEditorText(text: string): void;
	/** Appends a custom entry (Pi's pi.appendEntry). */
	appendEntry(customType: string, data: unknown): void;
	/** Sends a custom message (Pi's pi.sendMessage); triggerTurn starts the boundary's run. */
	sendMessage(m: { customType: string; content: string; display: boolean; details: unknown }, options: { triggerTurn: boolean }): void;
	/** Says one error line to the person (notify.ts). */
	notifyError(message: string): void;
	/** Set while navigateTree runs, so session_tree tells this internal navigation from a user's /tree. */
	setInternalNavigation(on: boolean): void;
	/** False when the session changed between the tool phase and now. */
	sameSession: boolean;
	/** Whether the session ended or was replaced (or the extension reloaded) since the settled phase began. */
	ended?(): boolean;
	/** The text of entry id (a custom message's or user message's content), which interactive Pi puts into an empty editor when navigation to it ends. */
	entryText?(id: string): string | undefined;
	/**
	 * The session was replaced while navigation ran and navigation then
	 * completed: the old file holds the branch summary, not the manifest.
	 * Hands the new session the editor text Pi may have put into its editor
	 * (the target's text) and the sentence to show (handoff.ts).
	 */
	replacedAfterSummary?(leakedEditorText: string | undefined): void;
	/** Tells the model, in its current window, that the new window did not open (a custom message, no turn). */
	tellModel?(text: string): void;
	/** Tells the person the new window started (view.ts windowStarted); called once its boundary is sent, never before. */
	windowStarted?(): void;
	/** Whether the boundary starts a turn (default true: new_context's run goes on in the new window; /contextd new starts none). */
	triggerTurn?: boolean;
}

/**
 * contextd refuses a settle with the problem code open_tool_calls while the
 * leaf's tool batch holds calls without results (a rollover never separates
 * a call from its result): the rollover stays pending and is settled again
 * at Pi's next agent_settled.
 */
export function isOpenCallsConflict(err: unknown): boolean {
	return err instanceof ContextdError && err.code === "open_tool_calls";
}

/**
 * What the person is told, in the UI of the extension instance that took
 * over (handoff.ts), when the extension was reloaded while Pi's navigation
 * ran and the navigation then completed, or when it was reloaded or the
 * session replaced and the navigation threw: Pi may still write the
 * summary (0.85's reload does not stop it), and the session's next
 * extension instance finishes the rollover from the file (localindex.ts
 * ensureWindow at session_tree), so it is not aborted.
 */
export const RELOADED_DURING_SUMMARY =
	"contextd: the extension was reloaded or the session replaced while a rollover's summary ran; the new context window opens from the session file once Pi has written the summary (run /contextd finish if it does not)";

/**
 * reason without the "contextd: " of contextd's refusals (client.ts; the
 * sentence it goes into names contextd already), or a plain sentence when
 * it names an HTTP route or curl: contextd's sentences for API clients,
 * which neither the model nor the person can act on in Pi (/contextd
 * shows where the rollover stands).
 */
export function withoutRoutes(reason: string): string {
	return /\b(GET|POST|PUT|DELETE) \/|\/v1\/|\bcurl\b/.test(reason) ? "contextd refused a step of the rollover" : reason.replace(/^contextd: /, "");
}

/** What the model is told when a rollover stopped before its window opened: it is still in its window (withoutRoutes). */
export function notOpenedText(reason: string): string {
	return `The new context window did not open (${withoutRoutes(reason)}); you are still in the same context window.`;
}

/**
 * The branch summary navigateTree appended: the leaf, or the target of the
 * label entry Pi appends right after it when navigateTree was given a label
 * (AgentSession.navigateTree, Pi 0.85.1 and 1.6.0).
 */
function summaryEntry(d: Pick<RolloverDeps, "leafEntry" | "entry">): { id: string; type: string } | undefined {
	const leaf = d.leafEntry();
	if (leaf?.type === "label" && leaf.targetId) return d.entry(leaf.targetId);
	return leaf;
}

/**
 * Runs the settled phase of one rollover. Returns "completed", "failed"
 * (one UI error said) or "deferred" (tool calls of the leaf have no result
 * yet: settle again at the next agent_settled).
 */
export async function settleRollover(d: RolloverDeps): Promise<RolloverOutcome> {
	// keptOld: the old branch is kept as it was, so the model, told by
	// new_context's result that a window would start, is told it did not.
	const fail = async (msg: string, abort: boolean, keptOld = abort) => {
		if (abort) {
			try {
				await d.call("rollover-abort", { reason: msg.slice(0, 1000) });
			} catch {
				// contextd keeps the rollover inspectable; the UI error says what happened
			}
		}
		d.notifyError(`contextd: new context failed: ${withoutRoutes(msg)}`);
		if (keptOld && !d.ended?.()) d.tellModel?.(notOpenedText(msg.replace(/; the old branch is kept$/, "")));
		return "failed" as const;
	};
	if (!d.sameSession) return fail("the session changed before the rollover could run; the old branch is kept", true);
	if (!d.navigateTree) return fail("no command context was captured for Tree navigation; run /reload and retry; the old branch is kept", true);
	let settle: Result<"rollover-settle">;
	try {
		settle = await d.call("rollover-settle", d.leafBody());
	} catch (err) {
		if (isOpenCallsConflict(err)) return "deferred";
		return fail(`${(err as Error).message}; the old branch is kept`, false, true);
	}
	if (!settle.navigate_to) return fail("contextd planned no navigation for a Tree rollover; the old branch is kept", true);
	const editorText = d.getEditorText();
	const targetText = d.entryText?.(settle.navigate_to);
	d.setInternalNavigation(true);
	let cancelled: boolean;
	try {
		// The label names the archive in /tree ("contextd window 0 archive"); Pi attaches it to the summary.
		cancelled = (await d.navigateTree(settle.navigate_to, { summarize: settle.summarize, ...(settle.label ? { label: settle.label } : {}) })).cancelled;
	} catch (err) {
		if (d.ended?.()) {
			d.notifyError(RELOADED_DURING_SUMMARY);
			return "failed";
		}
		return fail(`navigation failed (${(err as Error).message}); the old branch is kept`, true);
	} finally {
		d.setInternalNavigation(false);
	}
	if (cancelled) return fail("navigation was cancelled; the old branch is kept", true);
	// Replaced under the summary (/new, /resume, /fork): this ctx is stale,
	// Pi may have put the target's text into the new session's empty
	// editor, and the old file has the summary but not the manifest (its
	// next session_start finishes the rollover from the file).
	if (d.ended?.()) {
		d.replacedAfterSummary?.(targetText);
		return "failed";
	}
	// Interactive Pi puts the text of a custom-message target (the
	// boundary) into an empty editor when navigation ends
	// (interactive-mode.js navigateTree, 0.85.1 and 1.6.0): it is not the
	// person's, so the editor is emptied again at once.
	if (!editorText && d.getEditorText()) d.setEditorText("");
	const leaf = summaryEntry(d);
	if (!leaf || leaf.type !== "branch_summary") {
		return fail("navigation did not append a branch summary; run /contextd to inspect the session", true);
	}
	let commit: Result<"rollover-commit">;
	try {
		commit = await d.call("rollover-commit", { summary_entry_id: leaf.id });
	} catch (err) {
		// Navigation completed: no turn starts until the branch holds the
		// recovery state; contextd reports the rollover as incomplete.
		return fail(`${(err as Error).message}; the window was archived but not opened; no turn was started, run /contextd`, false);
	}
	for (const e of commit.append) {
		if (e.type === "custom") d.appendEntry(e.customType, e.data);
	}
	for (const e of commit.append) {
		if (e.type === "custom_message") {
			d.sendMessage({ customType: e.customType, content: e.content ?? "", display: e.display ?? true, details: e.details }, { triggerTurn: d.triggerTurn ?? true });
		}
	}
	d.windowStarted?.();
	try {
		await d.call("rollover-complete", undefined);
	} catch (err) {
		// Unreached, contextd completes the rollover when it next reads
		// the entries; any answer refusing it is said.
		const said = completeRefused(err);
		if (said) d.notifyError(said);
	}
	if (editorText) d.setEditorText(editorText);
	return "completed";
}

/**
 * The sentence the person gets when contextd answered a rollover's complete
 * with an error once its boundary was sent (the window started); undefined
 * when contextd was not reached (it completes the rollover when it next
 * reads the entries, and the provider-context hook already says it is
 * away).
 */
export function completeRefused(err: unknown): string | undefined {
	if (!(err instanceof ContextdError) || err.status === 0) return undefined;
	return `contextd: the new context window started, but contextd did not record the rollover as finished (it answered ${err.status}); /contextd shows where it stands and /contextd finish finishes it`;
}
