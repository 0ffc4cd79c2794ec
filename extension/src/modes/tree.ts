// Tree mode: new_context plans a rollover (tool phase, the run ends after
// the batch); at Pi's next agent_settled the settled phase navigates to the
// window's start with a branch summary and appends the manifest, the note
// snapshot and the new boundary (rollover.ts). The decisions across Pi
// events (pending rollover, input held during it) are tree-state.ts's
// reducer; this file performs its actions with Pi.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { branchIdentity, ctxLeafBody } from "../branch.ts";
import { ContextdError, type RequestArgs, type Result } from "../client.ts";
import { isRolloverPending, PENDING_FOR_PERSON, pendingResult } from "../pending.ts";
import { type Host, text } from "../host.ts";
import { callsNewContext } from "../input_hold.ts";
import { installLifecycle } from "../lifecycle.ts";
import { prefixed } from "../notify.ts";
import { handOff, receive, replacedDuringSummaryNotice } from "../handoff.ts";
import { FINISHED_FROM_FILE, finishRollover, installLocalHooks, notesGuard, registerContextRemaining, sendPlanned } from "../localindex.ts";
import { RELOADED_DURING_SUMMARY, settleRollover } from "../rollover.ts";
import { NOTICE_TYPE } from "../render.ts";
import { localRouter, registerRouters } from "../router.ts";
import { type Say, SessionSlot, type SessionState } from "../session.ts";
import { registerStatus } from "../status.ts";
import { CAPTURE_ARGUMENT } from "../command.ts";
import { installView, installViewHooks } from "../view.ts";
import { catchEscape, STOPPING_THROUGH_COMPACTION, summaryStop } from "../escape.ts";
import { catchSummaryCommands, TREE_WAITS } from "../summary_commands.ts";
import { NEW_CONTEXT_DESCRIPTION, newContextParameters } from "../tools.ts";
import { type RolloverOutcome, type TreeAction, type TreeEvent, treeStep } from "../tree-state.ts";

/** What the extension sends itself at session start to capture a command context (navigateTree needs one): /contextd with an argument no person is offered. */
export const CAPTURE_MESSAGE = `/contextd ${CAPTURE_ARGUMENT}`;

/** How long a reloaded Tree extension waits before sending a committed rollover's missing boundary itself, in milliseconds (openWindow). */
export const BOUNDARY_GRACE_MS = 1000;

export { TREE_WAITS } from "../summary_commands.ts";

/**
 * What the person is told at once when they start another session (/new,
 * /resume, /fork, /clone) while a rollover's branch summary is written: Pi
 * stops the summary first (teardownCurrent: abort) and opens the new
 * session only when the summary's request has ended, which can take a while.
 */
export const SWITCH_WAITS = "contextd: the new session opens once Pi has stopped the branch summary; this session keeps its context window";

/** Registers Tree mode: Local's hooks and tools, with new_context as a rollover, input holding and /compact through contextd. */
export function installTree(host: Host, say: Say): void {
	const { pi } = host;
	const slot = new SessionSlot(say);
	const view = installView(pi, {
		mode: "tree",
		reachable: () => !!slot.current?.client && slot.current.contextError === "", connected: () => !!slot.current?.client,
		tooLarge: () => !!slot.current?.tooLarge,
		pending: () => slot.current?.tree.pending !== undefined,
	});

	// A session this one replaced may leave its boundary text in the shared
	// editor and a sentence for the person (handoff.ts): this session's ctx
	// takes them while it is live (a stale one throws: kept for the next).
	pi.on("session_start", async (_e, ctx) => {
		receive((h) => {
			if (h.leakedEditorText !== undefined && h.leakedEditorText !== "" && ctx.ui.getEditorText() === h.leakedEditorText) ctx.ui.setEditorText("");
			host.notify(ctx, h.notice, "warning");
			return true;
		});
	});

	installLifecycle(host, slot, async (s, ctx) => {
		pi.sendUserMessage(CAPTURE_MESSAGE, { expandPromptTemplates: true });
		await openWindow(s, ctx);
		// The pending rollover is contextd's fact, not this runtime's: a
		// session resumed or reloaded between new_context's tool phase and
		// the settled phase settles it at the next agent_settled.
		const st = await s.need().request("get-session", { path: s.params });
		if (st.rollover?.state === "pending" && slot.live(s, ctx, "restoring the pending rollover")) {
			dispatch(s, { type: "planned", rolloverId: st.rollover.rollover_id }, ctx);
		}
	}, view);
	installLocalHooks(host, slot);
	installViewHooks(pi, view);

	/**
	 * Window 0, or what an interrupted rollover misses, at session start
	 * (ensureWindow). When only the boundary of a committed rollover is
	 * missing, the extension instance that ran it may still have it in
	 * Pi's queue: Pi 1.6 defers a /reload typed during the summary and the
	 * boundary's sendMessage until the settled handlers returned, in that
	 * order, so the reloaded extension starts before the boundary is
	 * written. It is sent BOUNDARY_GRACE_MS later unless the branch has a
	 * boundary by then, so the window does not open twice.
	 */
	async function openWindow(s: SessionState, ctx: ExtensionContext): Promise<void> {
		if (branchIdentity(ctx.sessionManager.getBranch())) return;
		const ans = await s.need().request("session-windows", { path: s.params, body: ctxLeafBody(host.piVersion, ctx) });
		const send = () => {
			if (!slot.live(s, ctx, "opening the window") || branchIdentity(ctx.sessionManager.getBranch())) return;
			for (const e of ans.finish ?? []) pi.appendEntry(e.customType, e.data);
			for (const b of ans.append) sendPlanned(host, b);
			if (ans.rollover_id) host.notify(ctx, `contextd: ${FINISHED_FROM_FILE}`, "info");
		};
		if (ans.rollover_id && !ans.finish?.length) host.setTimer(send, BOUNDARY_GRACE_MS);
		else send();
	}

	/**
	 * Applies event e to s's Tree state and performs its synchronous actions
	 * (deliver, timer); returns the input handler's answer and the rollover
	 * to settle, which only agent_settled awaits.
	 */
	function dispatch(s: SessionState, e: TreeEvent, ctx: ExtensionContext | undefined): { input?: "continue" | "handled"; settle?: string } {
		const r = treeStep(s.tree, e);
		s.tree = r.state;
		const out: { input?: "continue" | "handled"; settle?: string } = {};
		for (const a of r.actions) perform(s, a, ctx, out);
		return out;
	}

	function perform(s: SessionState, a: TreeAction, ctx: ExtensionContext | undefined, out: { input?: "continue" | "handled"; settle?: string }): void {
		switch (a.type) {
			case "input":
				out.input = a.action;
				return;
			case "settle":
				out.settle = a.rolloverId;
				return;
			case "deliver":
				if (!slot.live(s, ctx, `delivering ${a.inputs.length} held input(s)`)) return;
				for (const h of a.inputs) {
					const content = h.images?.length ? [{ type: "text" as const, text: h.text }, ...(h.images as never[])] : h.text;
					pi.sendUserMessage(content, { deliverAs: "followUp" });
				}
				return;
			case "notify":
				if (ctx && slot.live(s, ctx, "telling that input is held")) host.notify(ctx, view.heldNotice(a.message), "info");
				return;
			case "timer":
				host.setTimer(() => dispatch(s, { type: "timeout", generation: a.generation }, undefined), a.ms);
				return;
		}
	}

	/**
	 * Runs navigate (the rollover's navigateTree) with the person's Escape
	 * stopping its branch summary while it runs (escape.ts), and /tree or
	 * /compact typed meanwhile refused in one sentence (summary_commands.ts).
	 */
	async function escapable<T>(s: SessionState, ctx: ExtensionContext, summarize: boolean, navigate: () => Promise<T>): Promise<T> {
		const stops = summarize
			? [
					catchEscape(ctx, () => stopSummary(s, ctx)),
					catchSummaryCommands(ctx, (m) => {
						if (slot.live(s, ctx, "refusing a command typed during the summary")) host.notify(ctx, m, "warning");
					}),
				]
			: [];
		try {
			return await navigate();
		} finally {
			for (const stop of stops) stop();
		}
	}

	/**
	 * Stops the branch summary Pi is writing for s's rollover: ctx.abort()
	 * on Pi 0.86 and later; on Pi 0.85 ctx.compact(), whose compaction aborts
	 * the summary first and is then cancelled at session_before_compact
	 * (s.compactionStopsSummary). navigateTree then answers cancelled and the
	 * rollover is aborted as after an RPC abort.
	 */
	function stopSummary(s: SessionState, ctx: ExtensionContext): void {
		if (!slot.live(s, ctx, "stopping the branch summary")) return;
		if (summaryStop(host.piVersion) === "abort") {
			ctx.abort();
			return;
		}
		s.compactionStopsSummary = true;
		host.notify(ctx, STOPPING_THROUGH_COMPACTION, "info");
		const done = () => {
			s.compactionStopsSummary = false;
		};
		ctx.compact({ onComplete: done, onError: done });
	}

	/** The settled phase of rolloverId; triggerTurn false: the new window starts no model turn (/contextd new, finish). */
	function rollover(s: SessionState, rolloverId: string, ctx: ExtensionContext, triggerTurn = true): Promise<RolloverOutcome> {
		const c = s.client;
		const cmd = s.commandCtx;
		const path = { ...s.params, rollover_id: rolloverId };
		const nav = cmd ? view.navigating(ctx, (id, o) => escapable(s, ctx, o.summarize, () => cmd.navigateTree(id, o))) : undefined;
		return settleRollover({
			call: (op, body) => (c ? c.request(op, { path, body } as unknown as RequestArgs<typeof op>) : Promise.reject(new ContextdError(s.unavailable))),
			leafBody: () => ctxLeafBody(host.piVersion, ctx),
			navigateTree: nav?.navigate,
			windowStarted: nav?.started,
			leafEntry: () => ctx.sessionManager.getLeafEntry() as { id: string; type: string; targetId?: string } | undefined,
			entry: (id) => ctx.sessionManager.getEntry(id),
			entryText: (id) => entryText(ctx.sessionManager.getEntry(id)),
			// After a /reload the person is still in this session: the
			// reloaded extension finishes the rollover from the file.
			replacedAfterSummary: (leaked) =>
				handOff({ ...(leaked ? { leakedEditorText: leaked } : {}), notice: s.endedBy === "reload" ? RELOADED_DURING_SUMMARY : replacedDuringSummaryNotice(s.file) }),
			getEditorText: () => ctx.ui.getEditorText(),
			setEditorText: (t) => ctx.ui.setEditorText(t),
			appendEntry: (t, data) => pi.appendEntry(t, data),
			sendMessage: (m, o) => pi.sendMessage(m, o),
			notifyError: (m) => {
				// A session replaced or reloaded meanwhile has no UI left
				// (never the stale ctx): the session or the reloaded
				// extension that took its place shows the line (handoff.ts).
				if (!s.ended && slot.current === s) host.notify(ctx, m, "error");
				else if (m === RELOADED_DURING_SUMMARY) handOff({ notice: m });
				else handOff({ notice: `contextd: new context did not happen: session ${s.id} was replaced while its rollover ran; its branch is kept as it was` });
			},
			ended: () => s.ended || slot.current !== s,
			tellModel: (t) => {
				if (!s.ended && slot.current === s) pi.sendMessage({ customType: NOTICE_TYPE, content: t, display: true, details: {} }, { triggerTurn: false });
			},
			setInternalNavigation: (on) => {
				s.internalNavigation = on;
				s.ownNavigationSeen = false;
			},
			sameSession: slot.live(s, ctx, "the rollover") && ctx.sessionManager.getSessionId() === s.id,
			triggerTurn,
		});
	}

	pi.registerTool({
		name: "new_context",
		label: "New context",
		description: NEW_CONTEXT_DESCRIPTION,
		parameters: newContextParameters,
		...view.renderers("new_context"),
		async execute(_id, _params, _signal, _onUpdate, ctx) {
			const s = slot.require();
			const c = s.need();
			const guard = await notesGuard(host, s, ctx);
			if (!guard.proceed) {
				return { content: text(guard.refusal ?? ""), details: { refused: true, notes_guard: host.settings.notesGuard } };
			}
			let ans: Result<"rollover-create">;
			try {
				ans = await c.request("rollover-create", {
				path: s.params,
				body: { ...ctxLeafBody(host.piVersion, ctx), command_context_ready: s.commandCtx !== undefined },
			});
			} catch (err) {
				if (!isRolloverPending(err)) throw err;
				host.notify(ctx, PENDING_FOR_PERSON, "warning");
				return pendingResult();
			}
			dispatch(s, { type: "planned", rolloverId: ans.rollover_id }, ctx);
			const t = guard.warning ? `${ans.tool_result}\n${guard.warning}` : ans.tool_result;
			// terminate: the run ends after this batch; agent_settled performs the rollover.
			return { content: text(t), details: { rollover_id: ans.rollover_id, merged: ans.merged, notes_warning: !!guard.warning, mode: "tree" }, terminate: true };
		},
	});

	registerContextRemaining(host);
	registerRouters(host, slot, localRouter(host, slot), view);

	// Input is held from the end of the message that calls new_context
	// (docs/design.md §5.3.1); a turn_end without a rollover releases it.
	pi.on("message_end", (event, ctx) => {
		const s = slot.current;
		if (s && callsNewContext(event.message as { role?: string; content?: unknown })) dispatch(s, { type: "called" }, ctx);
		return undefined;
	});
	pi.on("turn_end", (_event, ctx) => {
		const s = slot.current;
		if (s) dispatch(s, { type: "turn_end" }, ctx);
	});
	pi.on("input", (event, ctx) => {
		const s = slot.current;
		const input = s ? dispatch(s, { type: "input", source: event.source, text: event.text, images: event.images }, ctx).input : undefined;
		return { action: input ?? ("continue" as const) };
	});
	// A message drawn after the new window's line: held input is told on a line of its own (view.heldNotice).
	pi.on("message_start", () => view.drawn());
	pi.on("agent_start", (_event, ctx) => {
		const s = slot.current;
		if (s) dispatch(s, { type: "agent_start" }, ctx);
	});
	pi.on("agent_settled", async (_event, ctx) => {
		const s = slot.current;
		if (!s) return;
		const rolloverId = dispatch(s, { type: "settled" }, ctx).settle;
		if (rolloverId === undefined) return;
		let outcome: RolloverOutcome = "failed";
		try {
			outcome = await rollover(s, rolloverId, ctx);
		} finally {
			dispatch(s, { type: "rolled", rolloverId, outcome }, ctx);
		}
	});

	// The person's /tree while a rollover runs would move the leaf under its
	// summary (Pi 0.85 runs both navigations) or before its boundary (Pi 1.6
	// defers a /tree typed during the summary until the settled handlers
	// returned, ahead of the boundary): it is refused until the new
	// window's run started (docs/design.md §5.3.1 row "/tree navigation by
	// the person"). The first session_before_tree of an internal navigation
	// is the rollover's own.
	pi.on("session_before_tree", async (_event, ctx) => {
		const s = slot.current;
		if (!s) return undefined;
		if (s.internalNavigation && !s.ownNavigationSeen) {
			s.ownNavigationSeen = true;
			return undefined;
		}
		if (!s.internalNavigation && !s.tree.rolling) return undefined;
		host.notify(ctx, TREE_WAITS, "warning");
		return { cancel: true };
	});

	// /new, /resume, /fork, /clone while the summary is written: Pi emits
	// session_before_switch or session_before_fork at once, then waits for
	// the aborted summary before it opens the new session (Pi 0.85.1 and
	// 1.6.0, AgentSessionRuntime); the person is told why nothing moves yet
	// (docs/design.md §5.3.1 row "/new, /resume, /fork, /clone").
	const switchWaits = (ctx: ExtensionContext) => {
		const s = slot.current;
		if (s?.internalNavigation) host.notify(ctx, SWITCH_WAITS, "info");
		return undefined;
	};
	pi.on("session_before_switch", (_event, ctx) => switchWaits(ctx));
	pi.on("session_before_fork", (_event, ctx) => switchWaits(ctx));

	// Leaving Tree mode: a manual /compact gets contextd's summary, so the
	// archived windows stay reachable; when contextd cannot plan it the
	// compaction is cancelled rather than losing them.
	pi.on("session_before_compact", async (event, ctx) => {
		const s = slot.current;
		// The compaction Escape started on Pi 0.85 only to stop the summary (stopSummary).
		if (s?.compactionStopsSummary) {
			s.compactionStopsSummary = false;
			return { cancel: true };
		}
		if (!s?.client) return;
		try {
			const a = await s.client.request("session-compaction", { path: s.params, body: ctxLeafBody(host.piVersion, ctx) });
			return {
				compaction: { summary: a.summary, firstKeptEntryId: a.first_kept_entry_id, tokensBefore: event.preparation.tokensBefore, details: a.details },
			};
		} catch (err) {
			host.notify(ctx, prefixed(`${(err as Error).message}; compaction cancelled so archived windows are not lost`), "error");
			return { cancel: true };
		}
	});

	registerStatus(
		host,
		slot,
		{
			resetLog: true,
			// Kept with the session: valid until the next session replacement
			// or reload, when session_start captures again.
			capture(ctx) {
				const s = slot.current;
				if (s) s.commandCtx = ctx;
			},
			// A rollover now: the command's own context navigates, and the
			// new window starts no model turn.
			async newWindow(s, ctx) {
				if (s.tree.pending !== undefined || s.tree.rolling) return ["a rollover is already under way"];
				s.commandCtx = ctx;
				const ans = await s.need().request("rollover-create", { path: s.params, body: { ...ctxLeafBody(host.piVersion, ctx), command_context_ready: true } });
				const outcome = await rollover(s, ans.rollover_id, ctx, false);
				// The boundary is on the branch only now, after navigation's
				// own redraw, and no model turn follows to redraw the footer.
				if (outcome === "completed") view.refresh(ctx);
				return outcome === "completed" ? [] : [`the rollover ${outcome === "deferred" ? "waits for tool results: run /contextd finish later" : "failed (see the error above)"}`];
			},
			async settle(s, rolloverId, ctx) {
				s.commandCtx = ctx;
				return rollover(s, rolloverId, ctx, false);
			},
		},
		view,
	);
}

/**
 * The text interactive Pi puts into an empty editor when a navigation to e
 * ends: a user message's or custom message's content, its text parts
 * joined (AgentSession.navigateTree, Pi 0.85.1 and 1.6.0); undefined for
 * other entries.
 */
export function entryText(e: unknown): string | undefined {
	const x = e as { type?: string; content?: unknown; message?: { role?: string; content?: unknown } } | undefined;
	const content = x?.type === "custom_message" ? x.content : x?.type === "message" && x.message?.role === "user" ? x.message.content : undefined;
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return undefined;
	return content.map((c) => ((c as { type?: string }).type === "text" ? ((c as { text?: string }).text ?? "") : "")).join("");
}
