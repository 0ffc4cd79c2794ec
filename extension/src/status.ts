// The /contextd command (command.ts plans it): status (the default), new,
// mode, finish, log and help, with argument completion. It never throws:
// every failure, and every null or missing field in contextd's answers,
// becomes a line of the report.
import type { ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { branchIdentity, ctxLeafBody, emptyWindow } from "./branch.ts";
import { CAPTURE_ARGUMENT, completions, entryNames, finishPlan, helpLines, logLines, parseCommand, type StatusInput, statusLines, stillMissing, SWITCHABLE_MODES, type SwitchableMode } from "./command.ts";
import type { Host } from "./host.ts";
import { ContextdError, type Result } from "./client.ts";
import { prefixed } from "./notify.ts";
import { isRolloverPending, PENDING_FOR_PERSON } from "./pending.ts";
import { ensureWindow } from "./localindex.ts";
import type { ResetEntry } from "./quality.ts";
import type { PlannedEntry } from "./rollover.ts";
import { NOT_CONNECTED, type SessionSlot, type SessionState } from "./session.ts";
import type { RolloverOutcome } from "./tree-state.ts";
import type { View } from "./view.ts";

/** What a mode lets /contextd do besides reporting. */
export interface CommandActions {
	/** Local and Tree: GET …/rollovers is the reset log, and an interrupted rollover can be finished. */
	resetLog: boolean;
	/** Starts the next window now (Pi is idle); returns the report's lines. */
	newWindow(s: SessionState, ctx: ExtensionCommandContext): Promise<string[]>;
	/** Tree: keeps the command context of the "/contextd CAPTURE_ARGUMENT" the extension sent itself (navigateTree needs one). */
	capture?(ctx: ExtensionCommandContext): void;
	/** Tree: runs the settled phase of a pending rollover now. */
	settle?(s: SessionState, rolloverId: string, ctx: ExtensionCommandContext): Promise<RolloverOutcome>;
}

/** The contextd a Pi started: <state-dir>/autostart.json's pid (written by the auto-start) and its log, <state-dir>/contextd.log. */
export function autoStarted(stateDir: string, read: (p: string) => string = (p) => readFileSync(p, "utf8")): { pid?: number; logFile?: string } | undefined {
	try {
		const a = JSON.parse(read(join(stateDir, "autostart.json"))) as { pid?: unknown };
		return typeof a.pid === "number" ? { pid: a.pid, logFile: join(stateDir, "contextd.log") } : undefined;
	} catch {
		return undefined;
	}
}

/** The report of /contextd ARGS, one line each. */
export async function runCommand(host: Host, slot: SessionSlot, actions: CommandActions, args: string, ctx: ExtensionCommandContext): Promise<string[]> {
	const cmd = parseCommand(args);
	if ("error" in cmd) return [cmd.error];
	const mode = host.settings.mode;
	const s = slot.current;
	switch (cmd.sub) {
		case "help":
			return helpLines();
		case "status":
			return statusLines(await statusInput(host, actions, s, ctx));
		case "log": {
			if (!actions.resetLog) return [`the reset log is kept in Local and Tree mode; this session is ${mode}`];
			if (!s) return [NOT_CONNECTED];
			const log = await s.need().request("rollover-log", { path: s.params });
			return logLines(log?.rollovers);
		}
		case "mode":
			await switchMode(host.notify, cmd.mode, ctx);
			return [];
		case "new":
			if (!s) return [NOT_CONNECTED];
			if (!ctx.isIdle()) return ["the model is working: ask it to call new_context, or run /contextd new once it has finished"];
			{
				const empty = emptyWindow(ctx.sessionManager.getBranch());
				if (empty) return [windowEmptyLine(empty.windowNumber)];
			}
			return actions.newWindow(s, ctx);
		case "finish":
			if (!s) return [NOT_CONNECTED];
			return finish(host, slot, actions, s, ctx);
	}
}

/** What /contextd new answers in a window that holds nothing yet (emptyWindow). */
export function windowEmptyLine(windowNumber: number): string {
	return `window ${windowNumber} has nothing in it yet, so there is no window to close: run /contextd new again once it holds some work`;
}

async function statusInput(host: Host, actions: CommandActions, s: SessionState | undefined, ctx: ExtensionCommandContext): Promise<StatusInput> {
	const base: StatusInput = {
		mode: host.settings.mode,
		branchWindow: branchIdentity(ctx.sessionManager.getBranch()),
		usage: ctx.getContextUsage(),
		started: autoStarted(host.settings.stateDir),
	};
	const c = s?.client;
	if (!s || !c) return { ...base, unavailable: s?.unavailable ?? NOT_CONNECTED };
	const out: StatusInput = { ...base, url: c.url, healthy: await host.healthy(c.url) };
	// contextd answers: the footer's "not reachable" goes (the handler redraws it).
	if (out.healthy) s.reached();
	try {
		out.session = await c.request("get-session", { path: s.params });
		if (actions.resetLog) out.log = (await c.request("rollover-log", { path: s.params }))?.rollovers ?? null;
	} catch (err) {
		out.sessionError = (err as Error).message;
	}
	return out;
}

/** /contextd finish: completes an interrupted rollover from what contextd and the file hold. Every failure is one sentence in Pi terms. */
async function finish(host: Host, slot: SessionSlot, actions: CommandActions, s: SessionState, ctx: ExtensionCommandContext): Promise<string[]> {
	if (!actions.resetLog) return [`nothing to finish in ${host.settings.mode} mode`];
	const c = s.need();
	const plan = finishPlan(await c.request("get-session", { path: s.params }));
	const windowLine = () => `context window ${branchIdentity(ctx.sessionManager.getBranch())?.windowNumber ?? "?"} started`;
	switch (plan.kind) {
		case "nothing":
		case "boundary":
		case "commit": {
			// contextd plans what the file lacks (POST …/windows): an
			// interrupted rollover's manifest and note snapshot, then the
			// boundary that continues the chain, whether its own state holds
			// the rollover or was lost (then only the file tells).
			const ans = await ensureWindow(host, slot, s, ctx);
			if (!slot.live(s, ctx, "/contextd finish")) return [];
			const rolloverId = ans?.rollover_id || (plan.kind === "commit" ? plan.rolloverId : "");
			if (rolloverId) {
				// The rollover in contextd's state completes once its entries
				// are in the file; a failure is said, never dropped.
				const failed = await completeFinished(c, s, rolloverId);
				if (failed) return [failed];
			}
			if (!ans) return [plan.kind === "commit" ? `contextd: finished the interrupted rollover ${rolloverId}: its entries were already in the session file` : plan.kind === "nothing" ? plan.message : "nothing to finish: this branch has a current window"];
			const what = entryNames([...(ans.finish ?? []), ...ans.append].map((e) => e.customType));
			if (plan.kind === "nothing" && !ans.finish?.length && !ans.rollover_id) return [`this branch had no window; opened one (${what})`];
			return [`contextd: finished the interrupted rollover${ans.rollover_id ? ` ${ans.rollover_id}` : ""}: appended ${what}`];
		}
		case "drop": {
			if (!ctx.isIdle()) return ["the model is working: run /contextd finish once it has finished"];
			if ((await dropInterruptedLocal(c, s, plan.rolloverId)) === "completed") return [`contextd: the interrupted rollover ${plan.rolloverId} is finished: its boundary is in the session file`];
			const w = plan.window === undefined ? "the current window" : `window ${plan.window}`;
			return [`contextd: the interrupted rollover ${plan.rolloverId} had put nothing in the session file, so it is dropped and ${w} goes on; the model's next new_context (or /contextd new) starts the next window`];
		}
		case "settle": {
			if (!actions.settle) return [`rollover ${plan.rolloverId} is pending: it is settled when the model's turn ends`];
			if (!ctx.isIdle()) return ["the model is working: run /contextd finish once it has finished"];
			const outcome = await actions.settle(s, plan.rolloverId, ctx);
			return [outcome === "completed" ? `${windowLine()}: the pending rollover is finished` : `the pending rollover ${outcome === "deferred" ? "waits for tool results" : "failed (see the error above)"}`];
		}
	}
}

/** How often and how far apart /contextd finish asks whether the rollover completed: Pi may write the boundary a moment after sendMessage. */
const COMPLETE_TRIES = 10;
const COMPLETE_WAIT_MS = 100;

/**
 * Completes rolloverId once the entries /contextd finish appended are in
 * the file. Returns undefined when it completed, else the sentence the
 * person gets: what the file lacks and what to do in Pi.
 */
async function completeFinished(c: ReturnType<SessionState["need"]>, s: SessionState, rolloverId: string): Promise<string | undefined> {
	const path = { ...s.params, rollover_id: rolloverId };
	let waiting: readonly string[] = [];
	for (let i = 0; i < COMPLETE_TRIES; i++) {
		let info: Result<"rollover-complete">;
		try {
			info = await c.request("rollover-complete", { path });
		} catch (err) {
			if (err instanceof ContextdError && err.status === 0) return prefixed(err.message);
			return `contextd: the interrupted rollover ${rolloverId} could not be finished (${err instanceof ContextdError && err.status ? `contextd answered ${err.status}` : "no answer"}); /contextd shows where it stands and /contextd finish tries again`;
		}
		if (info.state === "completed") return undefined;
		waiting = info.waiting_for ?? [];
		await new Promise((r) => setTimeout(r, COMPLETE_WAIT_MS));
	}
	return `contextd: the interrupted rollover ${rolloverId} is not finished: this branch lacks its ${waiting.join(", ") || "entries"} after its branch summary; use /tree to go to that summary and run /contextd finish there`;
}

/** The abort reason of an interrupted Local rollover /contextd finish drops. */
export const DROPPED_REASON = "dropped by /contextd finish: the rollover was interrupted between its settle and its commit, and nothing of it reached the session file";

/**
 * Drops (aborts) the interrupted Local rollover rolloverId (command.ts
 * interruptedLocal): "dropped", or "completed" when its boundary reached
 * the file meanwhile (contextd then refuses the abort and completes it).
 * Errors: a ContextdError.
 */
export async function dropInterruptedLocal(c: ReturnType<SessionState["need"]>, s: SessionState, rolloverId: string): Promise<"dropped" | "completed"> {
	try {
		await c.request("rollover-abort", { path: { ...s.params, rollover_id: rolloverId }, body: { reason: DROPPED_REASON } });
		return "dropped";
	} catch (err) {
		if (err instanceof ContextdError && err.code === "conflict") return "completed";
		throw err;
	}
}

/**
 * /contextd mode M: sets CONTEXTD_MODE for this Pi process and reloads the
 * extension, which reads it again and registers the session in mode M
 * (from off too: Off mode keeps /contextd). Other Pi processes keep their
 * own setting. ctx is stale once the extension reloaded: the line is said
 * first.
 */
export async function switchMode(notify: Host["notify"], mode: SwitchableMode, ctx: ExtensionCommandContext): Promise<void> {
	process.env.CONTEXTD_MODE = mode;
	notify(ctx, `contextd mode: ${mode} in this Pi process (CONTEXTD_MODE, or "contextd": {"mode": …} in settings.json, makes it lasting)`, "info");
	await ctx.reload();
}

/** The description Pi shows for /contextd in autocomplete. */
export const COMMAND_DESCRIPTION = `contextd: status (default), new, mode ${SWITCHABLE_MODES.join("|")}, finish, log, help`;

/** Registers /contextd with its subcommands and their completion. */
export function registerStatus(host: Host, slot: SessionSlot, actions: CommandActions, view?: View): void {
	host.pi.registerCommand("contextd", {
		description: COMMAND_DESCRIPTION,
		getArgumentCompletions: (prefix) => completions(prefix),
		handler: async (args, ctx) => {
			if (args.trim() === CAPTURE_ARGUMENT) {
				actions.capture?.(ctx);
				return;
			}
			const lines = await runCommand(host, slot, actions, args, ctx).catch((err: unknown) => [isRolloverPending(err) ? PENDING_FOR_PERSON : prefixed((err as Error).message)]);
			if (lines.length === 0) return; // nothing to say, or the extension reloaded (/contextd mode) and ctx is stale
			host.notify(ctx, lines.join("\n"), "info");
			view?.refresh(ctx);
		},
	});
}
