// The /contextd command: the mode, contextd's address and health, the
// current window, archives, the pending or incomplete rollover and (Local,
// Tree) the last rollovers of the reset log.
import type { ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import type { Host } from "./host.ts";
import { resetLogLines } from "./quality.ts";
import { NOT_CONNECTED, type SessionSlot } from "./session.ts";

/** The /contextd report of the live session, one fact a line. resetLog: also list the reset log (Local and Tree). */
export async function status(host: Host, slot: SessionSlot, resetLog: boolean): Promise<string> {
	const lines = [`contextd mode: ${host.settings.mode}`];
	const s = slot.current;
	if (!s?.client) return [...lines, `contextd: ${s?.unavailable ?? NOT_CONNECTED}`].join("\n");
	const client = s.client;
	lines.push(`contextd: ${client.url} (${(await host.healthy(client.url)) ? "healthy" : "not answering /healthz"})`);
	try {
		const st = await client.request("get-session", { path: s.params });
		lines.push(st.window ? `window ${st.window.windowNumber} (${st.window.currentWindowId})` : "no window on this branch yet");
		if (st.archives !== undefined) lines.push(`archives: ${st.archives}`);
		lines.push(st.rollover ? `rollover ${st.rollover.rollover_id}: ${st.rollover.state}` : "no pending rollover");
		const inc = st.incomplete_rollover;
		if (inc) {
			const id = inc.rollover_id ? ` ${inc.rollover_id}` : "";
			const missing = inc.missing?.length ? ` (missing ${inc.missing.join(", ")})` : "";
			lines.push(`interrupted rollover${id}${missing}: run /contextd finish`);
		}
		if (resetLog) {
			const log = await client.request("rollover-log", { path: s.params });
			lines.push(...resetLogLines(log.rollovers));
		}
	} catch (err) {
		lines.push((err as Error).message);
	}
	return lines.join("\n");
}

/** Registers /contextd; with finish (Local and Tree), `/contextd finish` runs it and shows its sentence. */
export function registerStatus(host: Host, slot: SessionSlot, resetLog: boolean, finish?: (ctx: ExtensionCommandContext) => Promise<string>): void {
	host.pi.registerCommand("contextd", {
		description: finish
			? "Show contextd's mode, window, archives, rollovers and health; /contextd finish completes an interrupted rollover"
			: "Show contextd's mode, window, archives, rollovers and health",
		handler: async (args, ctx) => {
			if (finish && args.trim() === "finish") {
				host.notify(ctx, await finish(ctx), "info");
				return;
			}
			host.notify(ctx, await status(host, slot, resetLog), "info");
		},
	});
}
