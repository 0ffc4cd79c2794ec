// Pi extension: Pi uses contextd for Codex-style context windows.
//
// Modes (setting "mode"; default local): off registers nothing; local and
// tree give the model new_context and the flat history/notes router tools
// over contextd's local index; remote forwards the Codex history/notes
// operations through contextd to the Codex backend with Pi's ChatGPT/Codex
// login. contextd never writes the session file: every write it plans is
// appended here with Pi's own API (pi.appendEntry, pi.sendMessage,
// navigateTree).
import type { ExtensionAPI, ExtensionCommandContext, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { getAgentDir, VERSION } from "@earendil-works/pi-coding-agent";
import { connect, type Contextd, ContextdError, healthy } from "./client.ts";
import { applyProjection, type Projection } from "./projection.ts";
import { type PlannedEntry, settleRollover } from "./rollover.ts";
import { runLocalRollover } from "./local_rollover.ts";
import { callsNewContext, emptyHold, type InputHold, onInput, releaseHold, startHold } from "./input_hold.ts";
import { boundaryMessage, identityOf, nextIdentity, sliceAtLatestBoundary, usableHint, type WindowIdentity } from "./windows.ts";
import { resolveSettings, type Settings } from "./settings.ts";
import { notify } from "./notify.ts";
import { encryptedOutputs, isCodexTransport, NAMESPACE_SPECS, type NamespaceSpecs, remoteResult, routerMessage, shapeCodexRequest, specsFromProtocol, TRUNCATION_HEADER, truncationPolicy } from "./remote.ts";
import { contextRemaining, contextRemainingAfterRollover, deliveredThresholds, dueReminder, guardDecision, reminderMessage, type ResetEntry, resetLogLines, windowNoteWrites } from "./quality.ts";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { Type } from "typebox";
import {
	codexArguments,
	HISTORY_ACTIONS,
	HISTORY_DESCRIPTION,
	historyParameters,
	NEW_CONTEXT_DESCRIPTION,
	NOTES_ACTIONS,
	NOTES_DESCRIPTION,
	notesParameters,
} from "./tools.ts";

/** The command the extension sends itself to capture a command context (Tree mode). */
export const CAPTURE_COMMAND = "contextd-capture";

interface ContextAnswer {
	mode: string;
	awaiting_file: boolean;
	needs_boundary: boolean;
	projection: Projection;
}

type Text = { type: "text"; text: string };
const text = (t: string): Text[] => [{ type: "text", text: t }];

export default function contextdExtension(pi: ExtensionAPI) {
	let settings: Settings;
	try {
		settings = resolveSettings({ agentDir: getAgentDir(), env: process.env, flags: {} });
	} catch (err) {
		const msg = `contextd: ${(err as Error).message}; the extension is inactive`;
		pi.on("session_start", async (_e, ctx) => notify(ctx, msg, "error"));
		return;
	}
	const mode = settings.mode;
	if (mode === "off") return;
	const local = mode === "local" || mode === "tree";

	let client: Contextd | undefined;
	let unavailable = "contextd is not connected yet";
	let sessionId = "";
	let commandCtx: ExtensionCommandContext | undefined;
	let pending: { rolloverId: string; sessionId: string } | undefined;
	let internalNavigation = false;
	let contextError = "";
	// Input held while a rollover runs (input_hold.ts; DESIGN.md §5.3.1).
	let hold: InputHold = emptyHold;
	/** Queues the held input again (after the new boundary). */
	const sendHeld = (as?: "steer" | "followUp") => {
		const r = releaseHold(hold, as);
		hold = r.hold;
		for (const h of r.send) {
			const content = h.images?.length ? [{ type: "text" as const, text: h.text }, ...(h.images as never[])] : h.text;
			pi.sendUserMessage(content, { deliverAs: h.deliverAs });
		}
	};

	const sessionPath = () => `/v1/sessions/${encodeURIComponent(sessionId)}`;
	const need = (): Contextd => {
		if (!client) throw new ContextdError(unavailable);
		return client;
	};
	const liveLeaf = (ctx: ExtensionContext) => ctx.sessionManager.getLeafId() ?? undefined;

	// ---- session lifecycle -------------------------------------------------

	pi.registerCommand(CAPTURE_COMMAND, {
		description: "contextd internal: captures the command context Tree rollovers navigate with",
		handler: async (_args, ctx) => {
			// Assigned synchronously: the context is valid until the next
			// session replacement or reload, when session_start captures again.
			commandCtx = ctx;
		},
	});

	/** Appends the boundary of window 0 when the active branch has none. */
	async function ensureWindow(ctx: ExtensionContext): Promise<void> {
		if (branchIdentity(ctx)) return;
		const ans = await need().call<{ append: PlannedEntry[] }>("POST", `${sessionPath()}/windows`, leafBody(ctx));
		for (const b of ans.append) {
			pi.sendMessage({ customType: b.customType, content: b.content ?? "", display: b.display ?? true, details: b.details });
		}
	}

	/** The window identity of the latest boundary on Pi's active branch. */
	function branchIdentity(ctx: ExtensionContext): WindowIdentity | undefined {
		let id: WindowIdentity | undefined;
		for (const e of ctx.sessionManager.getBranch()) {
			if (e.type === "custom_message") id = identityOf(e) ?? id;
		}
		return id;
	}

	/** The backend's thread hint through contextd; "" when there is none or the call fails (Codex omits it then). */
	async function remoteHint(ctx: ExtensionContext): Promise<string> {
		try {
			const headers = { ...(await codexHeaders(ctx)), [TRUNCATION_HEADER]: truncationPolicy("thread_hint") };
			const a = await need().call<{ text?: unknown }>("POST", "/alpha/notes/v2/thread_hint", { context: { session_id: sessionId, current_agent_name: settings.agentName } }, headers);
			return usableHint(a.text);
		} catch {
			return "";
		}
	}

	/** Remote: window 0 when the branch has no boundary. */
	async function ensureRemoteWindow(ctx: ExtensionContext): Promise<void> {
		if (branchIdentity(ctx)) return;
		pi.sendMessage(boundaryMessage(settings.agentName, nextIdentity(undefined), await remoteHint(ctx)));
	}

	/** {leaf_id} when Pi's live leaf is on disk, else {} (0.85 holds entries in memory until the first assistant message). */
	function leafBody(ctx: ExtensionContext): { leaf_id?: string } {
		const leaf = liveLeaf(ctx);
		const hasAssistant = ctx.sessionManager.getEntries().some((e) => e.type === "message" && e.message.role === "assistant");
		return leaf && (hasAssistant || VERSION.split(".")[0] !== "0") ? { leaf_id: leaf } : {};
	}

	pi.on("session_start", async (_event, ctx) => {
		commandCtx = undefined;
		pending = undefined;
		hold = emptyHold;
		client = undefined;
		sessionId = ctx.sessionManager.getSessionId();
		const file = ctx.sessionManager.getSessionFile();
		if (!file) {
			unavailable = "context management needs a saved session; this one is not persisted (--no-session)";
			notify(ctx, `contextd: ${unavailable}`, "error");
			return;
		}
		try {
			const c = await connect(settings);
			await c.call("PUT", sessionPath(), { session_file: file, mode, agent_name: settings.agentName, pi_version: VERSION });
			client = c;
			if (mode === "tree") {
				pi.sendUserMessage(`/${CAPTURE_COMMAND}`, { expandPromptTemplates: true });
			}
			if (local) await ensureWindow(ctx);
			if (mode === "remote") await ensureRemoteWindow(ctx);
		} catch (err) {
			unavailable = (err as Error).message;
			notify(ctx, `contextd: ${unavailable}`, "error");
		}
	});

	pi.on("session_tree", async (_event, ctx) => {
		// An internal rollover appends its own boundary after the manifest
		// and snapshot; user navigation is ordinary and only needs a
		// boundary when it lands on a branch without one.
		if (internalNavigation || !local || !client) return;
		try {
			await ensureWindow(ctx);
		} catch (err) {
			notify(ctx, `contextd: ${(err as Error).message}`, "error");
		}
	});

	// ---- provider context --------------------------------------------------

	if (local) {
		pi.on("context", async (event, ctx) => {
			if (!client) return;
			let ans: ContextAnswer;
			try {
				ans = await client.call<ContextAnswer>("POST", `${sessionPath()}/context`, leafBody(ctx));
			} catch (err) {
				const msg = `contextd: ${(err as Error).message}; this request is sent without context management`;
				if (msg !== contextError) notify(ctx, msg, "error");
				contextError = msg;
				return;
			}
			contextError = "";
			if (ans.awaiting_file) return;
			try {
				return { messages: applyProjection(event.messages as never[], ans.projection) };
			} catch (err) {
				notify(ctx, `contextd: ${(err as Error).message}; the request was stopped`, "error");
				ctx.abort();
				return;
			}
		});
	}

	if (mode === "remote") {
		// Only the current window reaches the model; earlier windows are
		// recovered through the Codex backend, never from local data.
		pi.on("context", async (event) => ({ messages: sliceAtLatestBoundary(event.messages as never[]) }));

		// The reserved namespaces on the wire (remote.ts; reference
		// codex-history-notes.md §1.4, §1.5, §3.7): namespace specs and
		// namespaced calls out, encrypted outputs replayed as
		// encrypted_content items.
		// A configured protocol file (settings.codexSchemaFile) gives the
		// byte-exact specs; when it cannot be read the request is not sent
		// with other schemas (§3.7, no fallback): the hook throws and Pi
		// reports the error.
		let specs: NamespaceSpecs = NAMESPACE_SPECS;
		let specsError = "";
		if (settings.codexSchemaFile) {
			try {
				specs = specsFromProtocol(JSON.parse(readFileSync(settings.codexSchemaFile, "utf8")));
			} catch (err) {
				specsError = `contextd: the Codex schema file ${settings.codexSchemaFile} cannot be used: ${(err as Error).message}; fix the file or unset CONTEXTD_CODEX_SCHEMA / codexSchemaFile`;
				pi.on("session_start", async (_e, ctx) => notify(ctx, specsError, "error"));
			}
		}
		pi.on("before_provider_request", (event, ctx) => {
			if (!isCodexTransport(ctx.model)) return undefined;
			if (specsError) throw new Error(specsError);
			return shapeCodexRequest(event.payload, encryptedOutputs(ctx.sessionManager.getBranch()), specs);
		});
		// A namespaced call from the model becomes a router call before Pi
		// looks its tool up by name (§1.4 "Calls on the wire").
		pi.on("message_end", (event) => {
			const message = routerMessage(event.message as { role: string; content?: unknown });
			return message ? { message: message as typeof event.message } : undefined;
		});
	}

	// ---- tools -------------------------------------------------------------

	pi.registerTool({
		name: "new_context",
		label: "New context",
		description: NEW_CONTEXT_DESCRIPTION,
		parameters: Type.Object({}, { additionalProperties: false }),
		async execute(_id, _params, _signal, _onUpdate, ctx) {
			const c = need();
			// The notes guard (Local and Tree): did this window checkpoint anything?
			const guard = local ? guardDecision(settings.notesGuard, windowNoteWrites(ctx.sessionManager.getBranch())) : { proceed: true };
			if (!guard.proceed) {
				return { content: text(guard.refusal ?? ""), details: { refused: true, notes_guard: settings.notesGuard } };
			}
			const warn = (t: string) => (guard.warning ? `${t}\n${guard.warning}` : t);
			if (mode === "local") {
				// The tool phase: the rollover is performed at this batch's
				// turn_end, after every call of the message has its result;
				// further new_context calls of the message join it.
				const ans = await c.call<{ rollover_id: string; tool_result: string; merged: boolean }>("POST", `${sessionPath()}/rollovers`, leafBody(ctx));
				pending = { rolloverId: ans.rollover_id, sessionId };
				return { content: text(warn(ans.tool_result)), details: { rollover_id: ans.rollover_id, merged: ans.merged, notes_warning: !!guard.warning } };
			}
			if (mode === "tree") {
				const ans = await c.call<{ rollover_id: string; tool_result: string; merged: boolean }>("POST", `${sessionPath()}/rollovers`, {
					...leafBody(ctx),
					command_context_ready: commandCtx !== undefined,
				});
				pending = { rolloverId: ans.rollover_id, sessionId };
				// terminate: the run ends after this batch; agent_settled performs the rollover.
				return { content: text(warn(ans.tool_result)), details: { rollover_id: ans.rollover_id, merged: ans.merged, notes_warning: !!guard.warning }, terminate: true };
			}
			// Remote: the extension keeps the window identity on the branch;
			// the hint comes from the Codex backend through contextd.
			const next = nextIdentity(branchIdentity(ctx));
			pi.sendMessage(boundaryMessage(settings.agentName, next, await remoteHint(ctx)), { deliverAs: "steer" });
			return { content: text("A new context window will start without summarizing conversation history."), details: { window: next } };
		},
	});

	// ---- input and batches during a rollover (Local and Tree) -------------

	if (local) {
		pi.on("message_end", (event) => {
			if (callsNewContext(event.message as { role?: string; content?: unknown })) hold = startHold(hold);
			return undefined;
		});
		pi.on("input", (event, ctx) => {
			const d = onInput(hold, event as { text: string; images?: unknown[]; source?: string; streamingBehavior?: "steer" | "followUp" });
			hold = d.hold;
			if (d.notice) notify(ctx, d.notice, "info");
			return { action: d.action };
		});
		pi.on("turn_end", async (_event, ctx) => {
			const p = pending;
			rolledAtTurn = p !== undefined;
			if (mode === "local" && p) {
				pending = undefined;
				const c = client;
				const base = `${sessionPath()}/rollovers/${encodeURIComponent(p.rolloverId)}`;
				await runLocalRollover({
					post: (path, body) => (c ? c.call("POST", path, body) : Promise.reject(new ContextdError(unavailable))),
					base,
					leafBody: () => leafBody(ctx),
					steer: (m) => pi.sendMessage(m, { deliverAs: "steer" }),
					notifyError: (m) => notify(ctx, m, "error"),
					tellModel: (t) => pi.sendMessage({ customType: "codex-context-notice", content: t, display: true, details: {} }, { deliverAs: "steer" }),
				});
				completing = { base, client: c };
				sendHeld();
				return;
			}
			if (completing) {
				// The boundary's turn ended: it is in the file.
				const { base, client: c } = completing;
				completing = undefined;
				c?.call("POST", `${base}/complete`).catch(() => undefined);
			}
			// No rollover follows this batch (Tree holds until its boundary's run).
			if (hold.holding && !(mode === "tree" && pending)) sendHeld();
		});
	}
	let completing: { base: string; client: Contextd | undefined } | undefined;
	let rolledAtTurn = false; // this turn_end performs or awaits a rollover

	// ---- context awareness (Local and Tree) -------------------------------

	if (local) {
		pi.registerTool({
			name: "get_context_remaining",
			label: "Context remaining",
			description: "Tokens left in the current context window (from Pi's context usage: tokens used, window size, percent used).",
			parameters: Type.Object({}, { additionalProperties: false }),
			async execute(_id, _params, _signal, _onUpdate, ctx) {
				// Local, in the message that calls new_context: the model's
				// next request is in the new window.
				const r = mode === "local" && hold.holding ? contextRemainingAfterRollover(ctx.getContextUsage()) : contextRemaining(ctx.getContextUsage());
				return { content: text(r.text), details: r.details };
			},
		});

		// Once per window and threshold: a reminder custom message (kind
		// reminder for the first threshold, urgent for later ones) before
		// the next model call.
		pi.on("turn_end", async (_event, ctx) => {
			// No reminder for a window that is closing: the next request is
			// the new window's (or, in Tree, the run ends for the rollover).
			const closing = rolledAtTurn;
			rolledAtTurn = false;
			if (closing || !client || settings.reminderThresholds.length === 0) return;
			const branch = ctx.sessionManager.getBranch();
			const usage = ctx.getContextUsage();
			const due = dueReminder(usage?.percent ?? null, settings.reminderThresholds, deliveredThresholds(branch, settings.reminderThresholds));
			const win = branchIdentity(ctx);
			if (!due || !win || !usage || usage.percent === null) return;
			pi.sendMessage(reminderMessage(usage.percent, due.kind, win, randomUUID()), { deliverAs: "steer" });
		});
	}

	for (const [ns, actions, description, parameters] of [
		["history", HISTORY_ACTIONS, HISTORY_DESCRIPTION, historyParameters],
		["notes", NOTES_ACTIONS, NOTES_DESCRIPTION, notesParameters],
	] as const) {
		pi.registerTool({
			name: ns,
			label: ns === "history" ? "History" : "Notes",
			description,
			parameters,
			async execute(_id, params, _signal, _onUpdate, ctx) {
				const action = (params as { action: string }).action;
				if (!(actions as readonly string[]).includes(action)) {
					throw new ContextdError(`unknown ${ns} action "${action}"; use one of ${actions.join(", ")}`);
				}
				const c = need();
				const context: Record<string, string> = { session_id: sessionId, current_agent_name: settings.agentName };
				let headers: Record<string, string> = {};
				if (local) {
					const leaf = leafBody(ctx).leaf_id;
					if (leaf) context.leaf_id = leaf;
				} else {
					headers = { ...(await codexHeaders(ctx)), [TRUNCATION_HEADER]: truncationPolicy(action) };
					// Remote is Codex-transport only, no fallback (reference §3.1, §3.7).
					if (!isCodexTransport(ctx.model)) {
						const m = ctx.model ? `${ctx.model.provider}/${ctx.model.id}` : "none";
						throw new ContextdError(
							`remote mode works only on the Codex transport (an openai-codex model); the current model is ${m}; pick an openai-codex model with /model, or switch the contextd mode to local or tree`,
						);
					}
				}
				const ans = await c.call<Record<string, unknown>>("POST", `/alpha/${ns}/v2/${action}`, { ...codexArguments(params as Record<string, unknown>), context }, headers);
				if (!local) {
					const r = remoteResult(ns, action, ans);
					return { content: text(r.text), details: r.details };
				}
				const { append, ...result } = ans;
				if (Array.isArray(append)) {
					// The note entry lands before the tool result.
					for (const e of append as PlannedEntry[]) pi.appendEntry(e.customType, e.data);
				}
				return { content: text(JSON.stringify(result)), details: {} };
			},
		});
	}

	/** Authorization and ChatGPT-Account-ID from Pi's openai-codex login (Remote mode). */
	async function codexHeaders(ctx: ExtensionContext): Promise<Record<string, string>> {
		const token = await ctx.modelRegistry.getApiKeyForProvider("openai-codex");
		if (!token) {
			throw new ContextdError(
				"remote mode needs Pi's ChatGPT/Codex login (provider openai-codex) and there is none; run /login, or switch the contextd mode to local or tree",
			);
		}
		const headers: Record<string, string> = { Authorization: `Bearer ${token}` };
		const account = chatgptAccountId(token);
		if (account) headers["ChatGPT-Account-ID"] = account;
		return headers;
	}

	// ---- Tree rollover (settled phase) ------------------------------------

	if (mode === "tree") {
		// Input the user sends while a rollover runs (typed during the
		// summarization) would start a run on the old branch, or run before
		// the boundary's turn; it is held and delivered as a follow-up of the
		// boundary's run, so it lands after the new boundary (seed
		// lifecycle). Pi 0.85 fires `input` at once and may start the
		// boundary's run while the settled handler still runs; Pi 1.6 defers
		// both the user's prompt and the boundary's sendMessage until the
		// settled handlers have returned (agent-session.js
		// _deferredSettledActions), in arrival order, so input stays held
		// until the boundary's run starts. A failed or deferred rollover
		// starts no run: held input is delivered at once.
		let rolling = false; // the settled phase runs
		let settledDone = false; // the rollover returned "completed"
		let runStarted = false; // agent_start seen while rolling
		const release = () => {
			rolling = settledDone = runStarted = false;
			sendHeld("followUp");
		};
		pi.on("agent_start", () => {
			if (!rolling) return;
			if (settledDone) release();
			else runStarted = true;
		});
		pi.on("agent_settled", async (_event, ctx) => {
			const p = pending;
			if (!p) return;
			pending = undefined;
			rolling = true;
			hold = startHold(hold);
			settledDone = runStarted = false;
			let outcome: Awaited<ReturnType<typeof rollover>> = "failed";
			try {
				outcome = await rollover(p, ctx);
			} finally {
				if (outcome !== "completed" || runStarted) {
					release();
				} else {
					// The boundary's run starts after this handler (1.6) or
					// shortly; never hold input longer than 10 s.
					settledDone = true;
					setTimeout(() => {
						if (rolling && settledDone) release();
					}, 10_000).unref?.();
				}
			}
			// Deferred: calls of the leaf's batch have no result yet;
			// settle again at the next agent_settled.
			if (outcome === "deferred" && pending === undefined) pending = p;
		});
	}

	async function rollover(p: { rolloverId: string; sessionId: string }, ctx: ExtensionContext): Promise<"completed" | "failed" | "deferred"> {
		const c = client;
		const cmd = commandCtx;
		return settleRollover({
			post: (path, body) => (c ? c.call("POST", path, body) : Promise.reject(new ContextdError(unavailable))),
			base: `${sessionPath()}/rollovers/${encodeURIComponent(p.rolloverId)}`,
			leafBody: () => leafBody(ctx),
			navigateTree: cmd ? (id, o) => cmd.navigateTree(id, o) : undefined,
			leafEntry: () => ctx.sessionManager.getLeafEntry(),
			getEditorText: () => ctx.ui.getEditorText(),
			setEditorText: (t) => ctx.ui.setEditorText(t),
			appendEntry: (t, data) => pi.appendEntry(t, data),
			sendMessage: (m, o) => pi.sendMessage(m, o),
			notifyError: (m) => notify(ctx, m, "error"),
			setInternalNavigation: (on) => {
				internalNavigation = on;
			},
			sameSession: p.sessionId === sessionId,
		});
	}

	// ---- leaving Tree mode: manual /compact -----------------------------

	if (mode === "tree") {
		pi.on("session_before_compact", async (event, ctx) => {
			if (!client) return;
			try {
				const a = await client.call<{ summary: string; first_kept_entry_id: string; details: unknown }>("POST", `${sessionPath()}/compaction`, leafBody(ctx));
				return {
					compaction: { summary: a.summary, firstKeptEntryId: a.first_kept_entry_id, tokensBefore: event.preparation.tokensBefore, details: a.details },
				};
			} catch (err) {
				notify(ctx, `contextd: ${(err as Error).message}; compaction cancelled so archived windows are not lost`, "error");
				return { cancel: true };
			}
		});
	}

	// ---- status -------------------------------------------------------------

	pi.registerCommand("contextd", {
		description: "Show contextd's mode, window, archives, rollovers and health",
		handler: async (_args, ctx) => {
			notify(ctx, await status(), "info");
		},
	});

	async function status(): Promise<string> {
		const lines = [`contextd mode: ${mode}`];
		if (!client) return [...lines, `contextd: ${unavailable}`].join("\n");
		lines.push(`contextd: ${client.url} (${(await healthy(client.url)) ? "healthy" : "not answering /healthz"})`);
		try {
			const st = await client.call<{
				window: { windowNumber: number; currentWindowId: string } | null;
				archives?: number;
				rollover: { state?: string; rollover_id?: string } | null;
				incomplete_rollover: { rollover_id?: string } | null;
				state?: string;
			}>("GET", sessionPath());
			lines.push(st.window ? `window ${st.window.windowNumber} (${st.window.currentWindowId})` : "no window on this branch yet");
			if (st.archives !== undefined) lines.push(`archives: ${st.archives}`);
			lines.push(st.rollover ? `rollover ${st.rollover.rollover_id}: ${st.rollover.state}` : "no pending rollover");
			if (st.incomplete_rollover) lines.push(`incomplete rollover ${st.incomplete_rollover.rollover_id}: retry its commit (see contextd README)`);
			if (local) {
				const log = await client.call<{ rollovers: ResetEntry[] }>("GET", `${sessionPath()}/rollovers`);
				lines.push(...resetLogLines(log.rollovers));
			}
		} catch (err) {
			lines.push((err as Error).message);
		}
		return lines.join("\n");
	}
}

/** The chatgpt_account_id claim of a ChatGPT access token (a JWT), if any. */
export function chatgptAccountId(token: string): string | undefined {
	const part = token.split(".")[1];
	if (!part) return undefined;
	try {
		const claims = JSON.parse(Buffer.from(part, "base64url").toString("utf8")) as Record<string, unknown>;
		const auth = claims["https://api.openai.com/auth"] as { chatgpt_account_id?: string } | undefined;
		return auth?.chatgpt_account_id;
	} catch {
		return undefined;
	}
}
