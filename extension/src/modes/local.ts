// Local mode: new_context starts a new window on the same branch. Its tool
// phase opens a rollover in contextd (further new_context calls of the
// message join it); at the batch's turn_end, when every call of the
// message has its result, the rollover is settled and committed and the
// boundary contextd planned is steered in, so it is the next message the
// model sees (docs/design.md §5.3.1). Input the person types meanwhile is held
// and queued after the boundary (input_hold.ts). Earlier windows stay on
// the branch, hidden from the model by contextd's projection and readable
// through `history`.
import { branchIdentity, ctxLeafBody } from "../branch.ts";
import { type Host, text } from "../host.ts";
import { callsNewContext, onInput, releaseHold, startHold } from "../input_hold.ts";
import { installWindowCompaction } from "../compaction.ts";
import { installLifecycle } from "../lifecycle.ts";
import type { RequestArgs, Result } from "../client.ts";
import { isRolloverPending, PENDING_FOR_PERSON, pendingResult } from "../pending.ts";
import { runLocalRollover } from "../local_rollover.ts";
import { completeRefused } from "../rollover.ts";
import { holdLocalCommit } from "../e2e_hold.ts";
import { ensureWindow, installLocalHooks, notesGuard, registerContextRemaining, sendPlanned } from "../localindex.ts";
import { localRouter, registerRouters } from "../router.ts";
import { type Say, SessionSlot, type SessionState } from "../session.ts";
import { dropInterruptedLocal, registerStatus } from "../status.ts";
import { finishPlan } from "../command.ts";
import { installView, installViewHooks } from "../view.ts";
import { NOTICE_TYPE } from "../render.ts";
import { NEW_CONTEXT_DESCRIPTION, newContextParameters } from "../tools.ts";

/** The tool result of a new_context that starts a window (Codex's wording, docs/codex-contract.md). */
export const NEW_WINDOW_RESULT = "A new context window will start without summarizing conversation history.";

/** Registers Local mode: lifecycle (window 0 at start), context projection, new_context, get_context_remaining, history, notes, /contextd. */
export function installLocal(host: Host, say: Say): void {
	const { pi } = host;
	const slot = new SessionSlot(say);
	const view = installView(pi, { mode: "local", reachable: () => !!slot.current?.client && slot.current.contextError === "", connected: () => !!slot.current?.client, tooLarge: () => !!slot.current?.tooLarge, pending: () => false });
	installLifecycle(host, slot, async (s, ctx) => {
		await ensureWindow(host, slot, s, ctx);
	}, view);
	installLocalHooks(host, slot);
	installWindowCompaction(host);
	installViewHooks(pi, view);

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
				ans = await c.request("rollover-create", { path: s.params, body: ctxLeafBody(host.piVersion, ctx) });
			} catch (err) {
				if (!isRolloverPending(err)) throw err;
				host.notify(ctx, PENDING_FOR_PERSON, "warning");
				return pendingResult();
			}
			if (slot.live(s, ctx, "new_context's rollover")) s.localRollover = ans.rollover_id;
			const t = guard.warning ? `${ans.tool_result}\n${guard.warning}` : ans.tool_result;
			// The window the next model call is in: one past the branch's (calls of one message share it).
			const next = (branchIdentity(ctx.sessionManager.getBranch())?.windowNumber ?? 0) + 1;
			return { content: text(t), details: { rollover_id: ans.rollover_id, merged: ans.merged, notes_warning: !!guard.warning, window: { windowNumber: next }, mode: "local" } };
		},
	});

	/** Queues s's held input again, each as it was typed. */
	function sendHeld(s: SessionState): void {
		const r = releaseHold(s.hold);
		s.hold = r.hold;
		for (const h of r.send) {
			const content = h.images?.length ? [{ type: "text" as const, text: h.text }, ...(h.images as never[])] : h.text;
			pi.sendUserMessage(content, { deliverAs: h.deliverAs });
		}
	}

	pi.on("message_end", (event) => {
		const s = slot.current;
		if (s && callsNewContext(event.message as { role?: string; content?: unknown })) s.hold = startHold(s.hold);
		return undefined;
	});
	pi.on("input", (event, ctx) => {
		const s = slot.current;
		if (!s) return { action: "continue" as const };
		const d = onInput(s.hold, event as { text: string; images?: unknown[]; source?: string; streamingBehavior?: "steer" | "followUp" });
		s.hold = d.hold;
		if (d.notice) host.notify(ctx, d.notice, "info");
		return { action: d.action };
	});
	pi.on("turn_end", async (_event, ctx) => {
		const s = slot.current;
		if (!s) return;
		const rid = s.localRollover;
		if (rid === undefined) {
			if (s.completing !== undefined && s.client) {
				// The boundary's turn ended: it is in the file.
				const path = { ...s.params, rollover_id: s.completing };
				s.completing = undefined;
				s.client.request("rollover-complete", { path } as unknown as RequestArgs<"rollover-complete">).catch((err: unknown) => {
					const said = completeRefused(err);
					if (said) host.notify(ctx, said, "error");
				});
			}
			// No rollover follows this batch: held input goes out as typed.
			if (s.hold.holding) sendHeld(s);
			return;
		}
		const c = s.client;
		const path = { ...s.params, rollover_id: rid };
		const outcome = await runLocalRollover({
			call: (op, body) => (c ? c.request(op, { path, body } as unknown as RequestArgs<typeof op>) : Promise.reject(new Error(s.unavailable))),
			leafBody: () => ctxLeafBody(host.piVersion, ctx),
			steer: (m) => {
				if (slot.live(s, ctx, "the new window's boundary")) pi.sendMessage(m, { deliverAs: "steer" });
			},
			notifyError: (m) => host.notify(ctx, m, "error"),
			tellModel: (t) => {
				if (slot.live(s, ctx, "telling the model")) pi.sendMessage({ customType: NOTICE_TYPE, content: t, display: true, details: {} }, { deliverAs: "steer" });
			},
			beforeCommit: holdLocalCommit,
		});
		s.localRollover = undefined;
		if (outcome === "steered") s.completing = rid;
		if (slot.live(s, ctx, "the held input")) sendHeld(s);
	});

	registerContextRemaining(host, slot);
	registerRouters(host, slot, localRouter(host, slot), view);
	registerStatus(
		host,
		slot,
		{
			resetLog: true,
			// The next boundary now, without a model turn.
			async newWindow(s, ctx) {
				const c = s.need();
				// An interrupted rollover (command.ts interruptedLocal) is
				// dropped first, so it does not outlive the window it was to end.
				const said: string[] = [];
				const plan = s.localRollover === undefined ? finishPlan(await c.request("get-session", { path: s.params })) : undefined;
				if (plan?.kind === "drop" && (await dropInterruptedLocal(c, s, plan.rolloverId)) === "dropped") {
					said.push(`contextd: dropped the interrupted rollover ${plan.rolloverId} (nothing of it was in the session file)`);
				}
				const ans = await c.request("session-windows", { path: s.params, body: ctxLeafBody(host.piVersion, ctx) });
				if (!slot.live(s, ctx, "/contextd new")) return [];
				for (const b of ans.append) sendPlanned(host, b);
				return [...said, "a new context window started"];
			},
		},
		view,
	);
}
