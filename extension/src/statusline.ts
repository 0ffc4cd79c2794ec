// The footer status line (Pi's ctx.ui.setStatus): mode, window number,
// context used in this window, a pending rollover and contextd's health,
// in one short line; when contextd cannot be reached it says so and what
// to do. A pure function of what index.ts knows at each turn and rollover.

/** What the footer status line shows: mode, reachability, window number and context used (percent, 0–100). */
export interface StatusFacts {
	mode: string;
	/** false when contextd cannot be reached or the last call to it failed. */
	reachable: boolean;
	/**
	 * Whether the session connected at session_start. A connected session
	 * finds a restarted contextd by itself (client.ts Contextd.call); one
	 * that did not connect needs /reload. Default true.
	 */
	connected?: boolean;
	/** contextd refused the session as too large for its --memory-limit (toolarge.ts): Pi uses its own context. */
	tooLarge?: boolean;
	window?: number;
	/** Percent of the context window used (Pi's getContextUsage), when known. */
	percent?: number | null;
	/** A Tree rollover is waiting for the run to end, or running. */
	rollover?: "pending" | "summarizing";
}

/** The status key contextd uses in Pi's footer. */
export const STATUS_KEY = "contextd";

/** `contextd tree · window 2 · 34% used · rollover pending`, or what to do when contextd is unreachable. */
export function statusLine(f: StatusFacts): string {
	if (f.mode === "off") return "contextd off";
	if (f.tooLarge) return `contextd ${f.mode} · session too large for --memory-limit: Pi's own context`;
	if (f.connected === false) return `contextd ${f.mode} · not connected: run contextd serve, then /reload`;
	if (!f.reachable) return `contextd ${f.mode} · not reachable: run contextd serve`;
	const parts = [`contextd ${f.mode}`];
	if (f.window !== undefined) parts.push(`window ${f.window}`);
	if (f.percent !== undefined && f.percent !== null) parts.push(`${Math.round(f.percent)}% used`);
	if (f.rollover === "pending") parts.push("rollover pending");
	if (f.rollover === "summarizing") parts.push("writing the summary");
	return parts.join(" · ");
}
