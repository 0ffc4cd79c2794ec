// The /contextd command (command.ts plans it): status (the default), new,
// mode, finish, log and help, with argument completion. It never throws:
// every failure, and every null or missing field in contextd's answers,
// becomes a line of the report.
import type { ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { branchIdentity, ctxLeafBody } from "./branch.ts";
import { completions, finishPlan, helpLines, logLines, parseCommand, type SessionAnswer, type StatusInput, statusLines, stillMissing } from "./command.ts";
import type { Host } from "./host.ts";
import { sendPlanned } from "./localindex.ts";
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
			const log = await s.need().call<{ rollovers?: ResetEntry[] | null } | null>("GET", `${s.path}/rollovers`);
			return logLines(log?.rollovers);
		}
		case "mode": {
			// Pi reloads the extension, which reads CONTEXTD_MODE again and
			// registers the session in the new mode; other Pi processes keep
			// their own setting.
			// ctx is stale once the extension reloaded: the line is said first.
			process.env.CONTEXTD_MODE = cmd.mode;
			host.notify(ctx, `contextd mode: ${cmd.mode} in this Pi process (CONTEXTD_MODE, or "contextd": {"mode": …} in settings.json, makes it lasting)`, "info");
			await ctx.reload();
			return [];
		}
		case "new":
			if (!s) return [NOT_CONNECTED];
			if (!ctx.isIdle()) return ["the model is working: ask it to call new_context, or run /contextd new once it has finished"];
			return actions.newWindow(s, ctx);
		case "finish":
			if (!s) return [NOT_CONNECTED];
			return finish(host, slot, actions, s, ctx);
	}
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
	try {
		out.session = await c.call<SessionAnswer | null>("GET", s.path);
		if (actions.resetLog) out.log = (await c.call<{ rollovers?: ResetEntry[] | null } | null>("GET", `${s.path}/rollovers`))?.rollovers ?? null;
	} catch (err) {
		out.sessionError = (err as Error).message;
	}
	return out;
}

/** /contextd finish: completes an interrupted rollover from what contextd and the file hold. */
async function finish(host: Host, slot: SessionSlot, actions: CommandActions, s: SessionState, ctx: ExtensionCommandContext): Promise<string[]> {
	if (!actions.resetLog) return [`nothing to finish in ${host.settings.mode} mode`];
	const c = s.need();
	const plan = finishPlan(await c.call<SessionAnswer | null>("GET", s.path));
	const base = (rid: string) => `${s.path}/rollovers/${encodeURIComponent(rid)}`;
	const windowLine = () => `context window ${branchIdentity(ctx.sessionManager.getBranch())?.windowNumber ?? "?"} started`;
	switch (plan.kind) {
		case "nothing":
			return [plan.message];
		case "boundary": {
			// The summary (and maybe manifest and snapshot) are in the file,
			// no boundary: contextd plans the one that continues the chain.
			const ans = await c.call<{ append: PlannedEntry[] }>("POST", `${s.path}/windows`, ctxLeafBody(host.piVersion, ctx));
			if (!slot.live(s, ctx, "/contextd finish")) return [];
			for (const b of ans.append) sendPlanned(host, b);
			return [`${windowLine()}: the interrupted rollover is finished`];
		}
		case "settle": {
			if (!actions.settle) return [`rollover ${plan.rolloverId} is ${host.settings.mode === "local" ? "Local and needs no settled phase" : "pending"}`];
			if (!ctx.isIdle()) return ["the model is working: run /contextd finish once it has finished"];
			const outcome = await actions.settle(s, plan.rolloverId, ctx);
			return [outcome === "completed" ? `${windowLine()}: the pending rollover is finished` : `the pending rollover ${outcome === "deferred" ? "waits for tool results" : "failed (see the error above)"}`];
		}
		case "commit": {
			// Each step is idempotent for the same rollover: commit answers
			// the same entries; only those not in the file yet are appended.
			const ans = await c.call<{ append: PlannedEntry[] }>("POST", `${base(plan.rolloverId)}/commit`, { summary_entry_id: plan.summaryEntryId });
			if (!slot.live(s, ctx, "/contextd finish")) return [];
			const todo = stillMissing(ans.append, plan.missing);
			for (const e of todo) if (e.type === "custom") host.pi.appendEntry(e.customType, e.data);
			for (const e of todo) if (e.type === "custom_message") sendPlanned(host, e);
			await c.call("POST", `${base(plan.rolloverId)}/complete`).catch(() => undefined);
			return [`the interrupted rollover is finished (${todo.map((e) => e.customType).join(", ") || "nothing was missing"})`];
		}
	}
}

/** Registers /contextd with its subcommands and their completion. */
export function registerStatus(host: Host, slot: SessionSlot, actions: CommandActions, view?: View): void {
	host.pi.registerCommand("contextd", {
		description: "contextd: status (default), new, mode local|tree|off, finish, log, help",
		getArgumentCompletions: (prefix) => completions(prefix),
		handler: async (args, ctx) => {
			const lines = await runCommand(host, slot, actions, args, ctx).catch((err: unknown) => [`contextd: ${(err as Error).message}`]);
			if (lines.length === 0) return; // nothing to say, or the extension reloaded (/contextd mode) and ctx is stale
			host.notify(ctx, lines.join("\n"), "info");
			view?.refresh(ctx);
		},
	});
}
