// The model's `history` and `notes` router tools (tools.ts schemas): one
// flat tool per Codex namespace whose `action` names the operation. Local
// and Tree answer from contextd's local index and append the note entries
// it plans; Remote forwards to the Codex backend through contextd.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { ctxLeafBody } from "./branch.ts";
import { ContextdError, type OperationId } from "./client.ts";
import { codexHeaders } from "./codexauth.ts";
import { type Host, type Text, text } from "./host.ts";
import { isCodexTransport, remoteResult, TRUNCATION_HEADER, truncationPolicy } from "./remote.ts";
import type { PlannedEntry } from "./rollover.ts";
import type { ContextdPort, SessionSlot } from "./session.ts";
import type { View } from "./view.ts";
import { toolError } from "./toolerror.ts";
import { codexArguments, HISTORY_ACTIONS, HISTORY_DESCRIPTION, historyParameters, NOTES_ACTIONS, NOTES_DESCRIPTION, notesParameters } from "./tools.ts";

/** The operation id of a router call: namespace-action, e.g. history-read_item; each is an operation of the OpenAPI document. */
export type RouterOp = `history-${(typeof HISTORY_ACTIONS)[number]}` | `notes-${(typeof NOTES_ACTIONS)[number]}`;

/**
 * Calls router operation op. The arguments are the model's, so they are
 * not typed here: contextd checks them against the same OpenAPI schemas
 * (a 422 names the field) and the answer goes back to the model as JSON.
 */
function routerCall(c: ContextdPort, op: RouterOp, body: Record<string, unknown>, headers?: Record<string, string>): Promise<Record<string, unknown>> {
	const typed = c as unknown as { request(op: OperationId, args: { body: Record<string, unknown>; headers?: Record<string, string> }): Promise<Record<string, unknown>> };
	return typed.request(op satisfies OperationId, { body, headers });
}

/** A router tool's result as Pi takes it. */
export interface RouterResult {
	content: Text[];
	details: unknown;
}

/** Runs one validated router call: namespace, action, the Codex arguments and the request context. */
export type RouterRun = (ns: "history" | "notes", action: string, args: Record<string, unknown>, context: Record<string, string>, ctx: ExtensionContext) => Promise<RouterResult>;

/**
 * Registers `history` then `notes`. An unknown action is refused with the
 * list of known ones; the call runs with the session's context
 * (session_id, current_agent_name). view: how the person sees calls and results (view.ts).
 */
export function registerRouters(host: Host, slot: SessionSlot, run: RouterRun, view?: View): void {
	for (const [ns, actions, description, parameters] of [
		["history", HISTORY_ACTIONS, HISTORY_DESCRIPTION, historyParameters],
		["notes", NOTES_ACTIONS, NOTES_DESCRIPTION, notesParameters],
	] as const) {
		host.pi.registerTool({
			name: ns,
			label: ns === "history" ? "History" : "Notes",
			description,
			parameters,
			...view?.renderers(ns),
			async execute(_id, params, _signal, _onUpdate, ctx) {
				const action = (params as { action: string }).action;
				if (!(actions as readonly string[]).includes(action)) {
					throw new ContextdError(`unknown ${ns} action "${action}"; use one of ${actions.join(", ")}`);
				}
				const s = slot.require();
				s.need();
				const context: Record<string, string> = { session_id: s.id, current_agent_name: host.settings.agentName };
				try {
					return await run(ns, action, codexArguments(params as Record<string, unknown>), context, ctx);
				} catch (err) {
					throw toolError(ns, action, err);
				}
			},
		});
	}
}

/** Local and Tree: the operation on contextd's local index at Pi's live leaf; note writes append the entry contextd plans. */
export function localRouter(host: Host, slot: SessionSlot): RouterRun {
	return async (ns, action, args, context, ctx) => {
		const s = slot.require();
		const leaf = ctxLeafBody(host.piVersion, ctx).leaf_id;
		if (leaf) context.leaf_id = leaf;
		const ans = await routerCall(s.need(), `${ns}-${action}` as RouterOp, { ...args, context });
		const { append, ...result } = ans;
		if (Array.isArray(append) && slot.live(s, ctx, `the ${ns} ${action} entry`)) {
			// The note entry lands before the tool result.
			for (const e of append as PlannedEntry[]) host.pi.appendEntry(e.customType, e.data);
		}
		return { content: text(JSON.stringify(result)), details: {} };
	};
}

/** Remote: the operation on the Codex backend through contextd, Codex transport only, no fallback (docs/codex-contract.md). */
export function remoteRouter(host: Host, slot: SessionSlot): RouterRun {
	return async (ns, action, args, context, ctx) => {
		const s = slot.require();
		const headers = { ...(await codexHeaders(ctx)), [TRUNCATION_HEADER]: truncationPolicy(action) };
		if (!isCodexTransport(ctx.model)) {
			const m = ctx.model ? `${ctx.model.provider}/${ctx.model.id}` : "none";
			throw new ContextdError(
				`remote mode works only on the Codex transport (an openai-codex model); the current model is ${m}; pick an openai-codex model with /model, or switch the contextd mode to local or tree`,
			);
		}
		const ans = await routerCall(s.need(), `${ns}-${action}` as RouterOp, { ...args, context }, headers);
		const r = remoteResult(ns, action, ans);
		return { content: text(r.text), details: r.details };
	};
}
