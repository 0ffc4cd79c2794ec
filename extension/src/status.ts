// The /contextd command: the mode, contextd's address and health, the
// current window, archives, the pending or incomplete rollover and (Local,
// Tree) the last rollovers of the reset log.
import type { Host } from "./host.ts";
import { type ResetEntry, resetLogLines } from "./quality.ts";
import { NOT_CONNECTED, type SessionSlot } from "./session.ts";

/** GET /v1/sessions/{id}'s answer (fields used here). */
interface SessionAnswer {
	window: { windowNumber: number; currentWindowId: string } | null;
	archives?: number;
	rollover: { state?: string; rollover_id?: string } | null;
	incomplete_rollover: { rollover_id?: string } | null;
	state?: string;
}

/** The /contextd report of the live session, one fact a line. resetLog: also list the reset log (Local and Tree). */
export async function status(host: Host, slot: SessionSlot, resetLog: boolean): Promise<string> {
	const lines = [`contextd mode: ${host.settings.mode}`];
	const s = slot.current;
	if (!s?.client) return [...lines, `contextd: ${s?.unavailable ?? NOT_CONNECTED}`].join("\n");
	const client = s.client;
	lines.push(`contextd: ${client.url} (${(await host.healthy(client.url)) ? "healthy" : "not answering /healthz"})`);
	try {
		const st = await client.call<SessionAnswer>("GET", s.path);
		lines.push(st.window ? `window ${st.window.windowNumber} (${st.window.currentWindowId})` : "no window on this branch yet");
		if (st.archives !== undefined) lines.push(`archives: ${st.archives}`);
		lines.push(st.rollover ? `rollover ${st.rollover.rollover_id}: ${st.rollover.state}` : "no pending rollover");
		if (st.incomplete_rollover) lines.push(`incomplete rollover ${st.incomplete_rollover.rollover_id}: retry its commit (see contextd README)`);
		if (resetLog) {
			const log = await client.call<{ rollovers: ResetEntry[] }>("GET", `${s.path}/rollovers`);
			lines.push(...resetLogLines(log.rollovers));
		}
	} catch (err) {
		lines.push((err as Error).message);
	}
	return lines.join("\n");
}

/** Registers /contextd. */
export function registerStatus(host: Host, slot: SessionSlot, resetLog: boolean): void {
	host.pi.registerCommand("contextd", {
		description: "Show contextd's mode, window, archives, rollovers and health",
		handler: async (_args, ctx) => {
			host.notify(ctx, await status(host, slot, resetLog), "info");
		},
	});
}
