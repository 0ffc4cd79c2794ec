// Local mode: new_context starts a new window on the same branch; contextd
// plans its boundary, which the extension steers in after the tool result.
// Earlier windows stay on the branch, hidden from the model by contextd's
// projection and readable through `history`.
import { ctxLeafBody } from "../branch.ts";
import { type Host, text } from "../host.ts";
import { installLifecycle } from "../lifecycle.ts";
import { ensureWindow, finishRollover, installLocalHooks, notesGuard, registerContextRemaining, sendPlanned } from "../localindex.ts";
import type { PlannedEntry } from "../rollover.ts";
import { localRouter, registerRouters } from "../router.ts";
import { type Say, SessionSlot } from "../session.ts";
import { registerStatus } from "../status.ts";
import { installView, installViewHooks } from "../view.ts";
import { NEW_CONTEXT_DESCRIPTION, newContextParameters } from "../tools.ts";

/** The tool result of a new_context that starts a window (Codex's wording, docs/codex-contract.md). */
export const NEW_WINDOW_RESULT = "A new context window will start without summarizing conversation history.";

/** Registers Local mode: lifecycle (window 0 at start), context projection, new_context, get_context_remaining, history, notes, /contextd. */
export function installLocal(host: Host, say: Say): void {
	const { pi } = host;
	const slot = new SessionSlot(say);
	const view = installView(pi, { mode: "local", reachable: () => !!slot.current?.client && slot.current.contextError === "", pending: () => false });
	installLifecycle(host, slot, async (s, ctx) => {
		await ensureWindow(host, slot, s, ctx);
	});
	installLocalHooks(host, slot);
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
			const ans = await c.request("session-windows", { path: s.params, body: ctxLeafBody(host.piVersion, ctx) });
			if (slot.live(s, ctx, "new_context's boundary")) {
				// Steered: lands after this tool result, before the next model call.
				for (const b of ans.append) sendPlanned(host, b, { deliverAs: "steer" });
			}
			const t = guard.warning ? `${NEW_WINDOW_RESULT}\n${guard.warning}` : NEW_WINDOW_RESULT;
			return { content: text(t), details: { window: ans.window, notes_warning: !!guard.warning } };
		},
	});

	registerContextRemaining(host);
	registerRouters(host, slot, localRouter(host, slot), view);
	registerStatus(
		host,
		slot,
		{
			resetLog: true,
			// The next boundary now, without a model turn.
			async newWindow(s, ctx) {
				const ans = await s.need().request("session-windows", { path: s.params, body: ctxLeafBody(host.piVersion, ctx) });
				if (!slot.live(s, ctx, "/contextd new")) return [];
				for (const b of ans.append) sendPlanned(host, b);
				return ["a new context window started"];
			},
		},
		view,
	);
}
