// Per-session state: one object per Pi session, created at session_start
// (every reason: startup, reload, new, resume, fork) and dropped at
// session_shutdown or when the next session_start replaces it. Every
// handler reads its state from the live session and nothing else, so no
// fact of one session leaks into another; a handler whose session was
// replaced while it awaited does nothing and says so (SessionSlot.live).
// Facts Pi's branch already holds (the window, notes) are read from the
// branch when needed, never cached here (see docs/pi-facts.md).
import type { ExtensionCommandContext, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { ContextdError, type OperationId, type RequestArgs, type Result } from "./client.ts";
import { emptyHold, type InputHold } from "./input_hold.ts";
import { type TreeState, initialTreeState } from "./tree-state.ts";

/** Why there is no client before a session registered. */
export const NOT_CONNECTED = "contextd is not connected yet";

/** The contextd calls the installers make: Contextd (client.ts) in Pi, a fake in unit tests. */
export interface ContextdPort {
	/** contextd's base URL, e.g. http://127.0.0.1:7467. */
	readonly url: string;
	/** Calls operation op with the generated OpenAPI types; rejects with a ContextdError saying what failed (client.ts Contextd.request). */
	request<K extends OperationId>(op: K, args: RequestArgs<K>): Promise<Result<K>>;
	/** Sentences for the person running Pi from connecting (launcher.ts: a version difference, a restart); shown once at session start. */
	readonly notices?: readonly string[];
}

/** Everything a handler needs about one Pi session. */
export class SessionState {
	/** Pi's session id (SessionManager.getSessionId()). */
	readonly id: string;
	/** The session file; undefined for a session that is not persisted (--no-session). */
	readonly file: string | undefined;
	/** contextd once the session is registered; undefined before that or when it failed. */
	client: ContextdPort | undefined;
	/** Why client is undefined, as one sentence (shown to the model and the person). */
	unavailable = NOT_CONNECTED;
	/** Tree: the command context captured by the extension's own "/contextd CAPTURE_ARGUMENT" (navigateTree needs one). */
	commandCtx: ExtensionCommandContext | undefined;
	/** Tree: set while the rollover's own navigateTree runs, so session_tree ignores it. */
	internalNavigation = false;
	/** Tree: the rollover's own navigateTree has emitted its session_before_tree; a later one while internalNavigation is the person's /tree. */
	ownNavigationSeen = false;
	/** Tree on Pi 0.85: Escape started a compaction only to stop the branch summary (escape.ts); session_before_compact cancels it. */
	compactionStopsSummary = false;
	/** The last /context error notified, so a repeated failure is said once (contextErrorStep). */
	contextError = "";
	/** Tree: the pending rollover and the input-holding state (tree-state.ts). */
	tree: TreeState = initialTreeState();
	/** Local: input held while a rollover runs (input_hold.ts). */
	hold: InputHold = emptyHold;
	/** Local: the rollover new_context opened, performed at the batch's turn_end (local_rollover.ts). */
	localRollover: string | undefined;
	/** Local: the rollover whose boundary was steered, completed at the next turn_end. */
	completing: string | undefined;
	/** Remote: the window the current message's new_context steered (later calls of the message join it). */
	remoteWindow: unknown;
	/** contextd refused the session as too large for its memory limit (toolarge.ts): set aside, Pi uses its own context. */
	tooLarge = false;
	/** The concurrent_writers warning was shown (writers.ts): once per session. */
	writersWarned = false;
	/** Set when the session ended or was replaced; handlers then do nothing. */
	ended = false;
	/** Why Pi shut the session down (session_shutdown's reason: "reload" keeps the session file open in Pi); undefined while live or when a session_start replaced it without one. */
	endedBy: SessionEndReason | undefined;

	constructor(id: string, file: string | undefined) {
		this.id = id;
		this.file = file;
	}

	/** The path parameters of this session's contextd routes (/v1/sessions/{session_id}/…). */
	get params(): { session_id: string } {
		return { session_id: this.id };
	}

	/**
	 * contextd answered this session (a request succeeded, or /contextd found
	 * /healthz answering): the last /context error no longer holds, so the
	 * footer's "not reachable" (statusline.ts) goes at its next redraw.
	 * Returns whether there was an error to clear, i.e. whether the footer
	 * needs redrawing now.
	 */
	reached(): boolean {
		const had = this.contextError !== "";
		this.contextError = "";
		return had;
	}

	/** The registered client; throws a ContextdError saying why there is none. */
	need(): ContextdPort {
		if (!this.client) throw new ContextdError(this.unavailable);
		return this.client;
	}
}

/**
 * port, with answered() called after each request that succeeds (the
 * installers' clients: SessionState.reached, then a footer redraw). url and
 * notices are port's own, read at each use (a client that found a
 * restarted contextd changes its url).
 */
export function answering(port: ContextdPort, answered: () => void): ContextdPort {
	return {
		get url() {
			return port.url;
		},
		get notices() {
			return port.notices;
		},
		async request(op, args) {
			const r = await port.request(op, args);
			answered();
			return r;
		},
	};
}

/** session_shutdown's reason (SessionShutdownEvent, Pi 0.85.1 and 1.6.0). */
export type SessionEndReason = "quit" | "reload" | "new" | "resume" | "fork";

/** Where a handler's "session replaced" line goes: Pi's notify (notify.ts) in Pi, a recorder in tests. */
export type Say = (ctx: ExtensionContext | undefined, message: string) => void;

/**
 * The one live SessionState of an extension instance. start() replaces the
 * previous one (marking it ended), end() drops it; live() is how a handler
 * gets its state back after an await.
 */
export class SessionSlot {
	#current: SessionState | undefined;
	readonly #say: Say;

	constructor(say: Say) {
		this.#say = say;
	}

	/** Creates the state of ctx's session, replacing (and ending) any previous one. */
	start(ctx: ExtensionContext): SessionState {
		if (this.#current) this.#current.ended = true;
		const s = new SessionState(ctx.sessionManager.getSessionId(), ctx.sessionManager.getSessionFile());
		this.#current = s;
		return s;
	}

	/** Drops the current state (session_shutdown), recording why it ended. */
	end(reason?: SessionEndReason): void {
		if (this.#current) {
			this.#current.ended = true;
			this.#current.endedBy = reason;
		}
		this.#current = undefined;
	}

	/** The current state, or undefined before the first session_start and after session_shutdown. */
	get current(): SessionState | undefined {
		return this.#current;
	}

	/** The current state; throws a ContextdError (contextd is not connected yet) before session_start. */
	require(): SessionState {
		if (!this.#current) throw new ContextdError(NOT_CONNECTED);
		return this.#current;
	}

	/**
	 * Whether s is still the live session of ctx. When it is not (the session
	 * ended or was replaced while the handler awaited), says so in one line
	 * naming what was skipped, and returns false: the handler does nothing.
	 */
	live(s: SessionState, ctx: ExtensionContext | undefined, what: string): boolean {
		if (!s.ended && this.#current === s) return true;
		this.#say(ctx, `contextd: ${what} skipped: session ${s.id} ended or was replaced meanwhile`);
		return false;
	}
}
