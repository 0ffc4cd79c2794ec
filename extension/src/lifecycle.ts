// The session lifecycle every active mode shares: session_start (every
// reason) creates the session's state, connects to contextd and registers
// the session file; session_shutdown drops the state. What a mode does once
// the session is registered (open window 0, capture a command context) is
// its own onRegistered.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { Host } from "./host.ts";
import { prefixed } from "./notify.ts";
import { answering, type SessionSlot, type SessionState } from "./session.ts";
import { isSessionTooLarge, setTooLargeAside } from "./toolarge.ts";
import { UnreachableError } from "./transport.ts";
import type { View } from "./view.ts";
import { type Problem, warnConcurrentWriters } from "./writers.ts";

/** The sentence a session without a file gets: Pi was started with --no-session. */
export const NO_SESSION_FILE = "context management needs a saved session; this one is not persisted (--no-session)";

/**
 * What a session that found no contextd at session_start is told: the
 * error's sentence, and for an unreachable contextd in interactive Pi
 * ", then /reload": the extension connects only at session_start, so a
 * contextd started later serves this session after /reload (or /new,
 * /resume). Print mode (`pi -p`, no UI) has no /reload: its next run
 * connects. A session that did connect re-reads the discovery file at
 * each call instead (client.ts Contextd.call) and needs no /reload.
 */
export function unconnectedSentence(err: unknown, interactive: boolean): string {
	const msg = (err as Error).message;
	return interactive && err instanceof UnreachableError && !msg.includes("/reload") ? `${msg}, then /reload` : msg;
}

/**
 * Registers session_start and session_shutdown. onRegistered runs after
 * contextd accepted the session (PUT /v1/sessions/{id}); its errors are
 * notified like a failed connection. The session's client clears a
 * remembered /context error at each request that succeeds and then has
 * view redraw the footer, so a contextd that answers again (restarted,
 * found by /contextd finish or a tool call) is not shown as unreachable
 * until the next turn.
 */
export function installLifecycle(host: Host, slot: SessionSlot, onRegistered: (s: SessionState, ctx: ExtensionContext) => Promise<void>, view?: Pick<View, "refresh">): void {
	const { pi, settings } = host;
	pi.on("session_start", async (_event, ctx) => {
		const s = slot.start(ctx);
		if (!s.file) {
			s.unavailable = NO_SESSION_FILE;
			host.notify(ctx, prefixed(s.unavailable), "error");
			return;
		}
		try {
			const c = await host.connect(settings);
			if (!slot.live(s, ctx, "registering the session")) return;
			for (const n of c.notices ?? []) host.notify(ctx, `contextd: ${n}`, "warning");
			const reg = await c.request("register-session", {
				path: s.params,
				body: { session_file: s.file, mode: settings.mode, agent_name: settings.agentName, pi_version: host.piVersion, pid: process.pid },
			});
			if (!slot.live(s, ctx, "registering the session")) return;
			s.client = answering(c, () => {
				if (s.reached() && !s.ended) redraw(view, ctx);
			});
			warnConcurrentWriters(host, s, ctx, reg?.problems);
			// A rollover the previous Pi left open was aborted: its window goes on.
			for (const p of reg?.problems ?? []) if (p.reason === "interrupted_rollover") host.notify(ctx, `contextd: ${p.detail ?? "an interrupted rollover was aborted"}`, "warning");
			await onRegistered(s, ctx);
		} catch (err) {
			if (isSessionTooLarge(err)) {
				setTooLargeAside(host, s, ctx, err);
				return;
			}
			s.unavailable = unconnectedSentence(err, ctx.hasUI);
			host.notify(ctx, prefixed(s.unavailable), "error");
		}
	});
	pi.on("session_shutdown", async (event) => {
		slot.end(event.reason);
	});
}

/**
 * Redraws the footer on the ctx of the session's session_start; a ctx Pi
 * has marked stale (a reload) throws, and there is then no footer of this
 * session left to draw.
 */
function redraw(view: Pick<View, "refresh"> | undefined, ctx: ExtensionContext): void {
	try {
		view?.refresh(ctx);
	} catch {
		// stale ctx: nothing to draw on
	}
}
