// Remote mode: history and notes live on the Codex backend, reached through
// contextd with Pi's ChatGPT/Codex login, on the Codex transport only and
// with no local fallback (docs/codex-contract.md). contextd does not index
// the session file here: it plans window 0 (adoption, docs/design.md §4),
// and the extension keeps the next windows' identity on Pi's branch
// (windows.ts), sends only the current window to the model, and shapes the
// Codex request's reserved namespaces (remote.ts).
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { readFileSync } from "node:fs";
import { branchIdentity, ctxLeafBody } from "../branch.ts";
import { codexHeaders } from "../codexauth.ts";
import { type Host, text } from "../host.ts";
import { installWindowCompaction, withBoundary } from "../compaction.ts";
import { installLifecycle } from "../lifecycle.ts";
import { encryptedOutputs, isCodexTransport, NAMESPACE_SPECS, type NamespaceSpecs, routerMessage, shapeCodexRequest, specsFromProtocol, TRUNCATION_HEADER, truncationPolicy } from "../remote.ts";
import { registerRouters, remoteRouter } from "../router.ts";
import { type Say, SessionSlot, type SessionState } from "../session.ts";
import { registerStatus } from "../status.ts";
import { installView, installViewHooks } from "../view.ts";
import { NEW_CONTEXT_DESCRIPTION, newContextParameters } from "../tools.ts";
import { ADOPTION_NOTICE, boundaryMessage, nextIdentity, sliceAtLatestBoundary, usableHint } from "../windows.ts";
import { sendPlanned } from "../localindex.ts";
import { NEW_WINDOW_RESULT } from "./local.ts";

/**
 * The namespace specs Remote sends: the built-in ones, or those of the
 * protocol file settings.codexSchemaFile names. error is set when that file
 * cannot be used; requests then fail rather than use other schemas.
 */
export function loadSpecs(file: string | undefined, read: (path: string) => string = (p) => readFileSync(p, "utf8")): { specs: NamespaceSpecs; error: string } {
	if (!file) return { specs: NAMESPACE_SPECS, error: "" };
	try {
		return { specs: specsFromProtocol(JSON.parse(read(file))), error: "" };
	} catch (err) {
		return {
			specs: NAMESPACE_SPECS,
			error: `contextd: the Codex schema file ${file} cannot be used: ${(err as Error).message}; fix the file or unset CONTEXTD_CODEX_SCHEMA / codexSchemaFile`,
		};
	}
}

/** Registers Remote mode: lifecycle (window 0 at start), the current-window context, Codex wire shaping, new_context, history, notes, /contextd. */
export function installRemote(host: Host, say: Say): void {
	const { pi, settings } = host;
	const slot = new SessionSlot(say);
	const view = installView(pi, { mode: "remote", reachable: () => !!slot.current?.client, connected: () => !!slot.current?.client, pending: () => false });

	/** The backend's thread hint through contextd; "" when there is none or the call fails (Codex omits it then). */
	async function remoteHint(s: SessionState, ctx: ExtensionContext): Promise<string> {
		try {
			const headers = { ...(await codexHeaders(ctx)), [TRUNCATION_HEADER]: truncationPolicy("thread_hint") };
			const a = await s.need().request("notes-thread_hint", { body: { context: { session_id: s.id, current_agent_name: settings.agentName } }, headers });
			return usableHint(a.text);
		} catch {
			return "";
		}
	}

	// Window 0 is contextd's plan, as in Local and Tree: on a branch that
	// already holds a conversation it begins at the branch's first entry
	// (adoption); the backend's thread hint goes into its boundary.
	installLifecycle(host, slot, async (s, ctx) => {
		if (branchIdentity(ctx.sessionManager.getBranch())) return;
		const hint = await remoteHint(s, ctx);
		const body = { ...ctxLeafBody(host.piVersion, ctx), ...(hint ? { thread_hint: hint } : {}) };
		const ans = await s.need().request("session-windows", { path: s.params, body });
		if (!slot.live(s, ctx, "opening window 0")) return;
		for (const b of ans.append) sendPlanned(host, b);
		if (ans.window.startEntryId) host.notify(ctx, ADOPTION_NOTICE, "info");
	}, view);

	installViewHooks(pi, view);

	// Only the current window reaches the model; earlier windows are
	// recovered through the Codex backend, never from local data. After a
	// compaction cut the boundary away it is sent again (compaction.ts).
	pi.on("context", async (event, ctx) => ({
		messages: withBoundary(sliceAtLatestBoundary(event.messages as never[]), ctx.sessionManager.getBranch() as never[]) as typeof event.messages,
	}));
	installWindowCompaction(host);

	const { specs, error: specsError } = loadSpecs(settings.codexSchemaFile);
	if (specsError) pi.on("session_start", async (_e, ctx) => host.notify(ctx, specsError, "error"));
	pi.on("before_provider_request", (event, ctx) => {
		if (!isCodexTransport(ctx.model)) return undefined;
		if (specsError) throw new Error(specsError);
		return shapeCodexRequest(event.payload, encryptedOutputs(ctx.sessionManager.getBranch()), specs);
	});
	// A namespaced call from the model becomes a router call before Pi looks
	// its tool up by name (docs/codex-contract.md "Calls on the wire").
	pi.on("message_end", (event) => {
		const message = routerMessage(event.message as { role: string; content?: unknown });
		return message ? { message: message as typeof event.message } : undefined;
	});

	pi.registerTool({
		name: "new_context",
		label: "New context",
		description: NEW_CONTEXT_DESCRIPTION,
		parameters: newContextParameters,
		...view.renderers("new_context"),
		async execute(_id, _params, _signal, _onUpdate, ctx) {
			const s = slot.require();
			s.need();
			// Several new_context calls of one message open one window
			// (docs/design.md §5.3.1): the first steers the boundary, the others
			// join it.
			if (s.remoteWindow) return { content: text(NEW_WINDOW_RESULT), details: { window: s.remoteWindow, merged: true, mode: "remote" } };
			const next = nextIdentity(branchIdentity(ctx.sessionManager.getBranch()));
			s.remoteWindow = next;
			// The hint comes from the Codex backend through contextd.
			const hint = await remoteHint(s, ctx);
			if (slot.live(s, ctx, "new_context's boundary")) pi.sendMessage(boundaryMessage(settings.agentName, next, hint), { deliverAs: "steer" });
			return { content: text(NEW_WINDOW_RESULT), details: { window: next, merged: false, mode: "remote" } };
		},
	});

	// The next message's new_context opens a window of its own.
	pi.on("turn_end", () => {
		const s = slot.current;
		if (s) s.remoteWindow = undefined;
	});

	registerRouters(host, slot, remoteRouter(host, slot), view);
	registerStatus(
		host,
		slot,
		{
			resetLog: false,
			async newWindow(s, ctx) {
				const next = nextIdentity(branchIdentity(ctx.sessionManager.getBranch()));
				const hint = await remoteHint(s, ctx);
				if (!slot.live(s, ctx, "/contextd new")) return [];
				pi.sendMessage(boundaryMessage(settings.agentName, next, hint));
				return [`context window ${next.windowNumber} started`];
			},
		},
		view,
	);
}
