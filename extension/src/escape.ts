// Escape while a Tree rollover's branch summary is written stops it, as
// Escape does during the summary of a person's own /tree. Interactive Pi
// gives that Escape handler only to its tree selector's navigation
// (interactive-mode.js: onEscape → abortBranchSummary); a navigation an
// extension started (the captured command context's navigateTree) gets
// none, and during agent_settled the editor's Escape neither aborts
// (isStreaming is false) nor does anything but count towards a double
// Escape (Pi 0.85.1 and 1.6.0). The extension catches Escape itself with
// ctx.ui.onTerminalInput (a no-op outside the TUI) while the summary runs.
//
// How the summary is stopped depends on Pi (docs/design.md §5.3.1 row
// "Escape (abort) during the summary"):
//   - Pi 0.86 and later: ctx.abort() runs the TUI's abort handler, which
//     calls AgentSession.abort(), and that aborts the branch summary;
//   - Pi 0.85: the TUI's abort handler aborts only the agent run
//     (restoreQueuedMessagesToEditor → agent.abort()), and the only other
//     call an extension has that reaches AgentSession.abort() without
//     leaving the session is ctx.compact(): the manual compaction aborts
//     the summary first, then the Tree extension cancels the compaction
//     itself at session_before_compact (Pi then shows "Compaction
//     cancelled", or "Compaction failed: Nothing to compact" when Pi
//     finds nothing to compact before it asks the extension).
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { isKeyRelease, matchesKey } from "@earendil-works/pi-tui";

/** How Escape stops the summary on a Pi: "abort" (ctx.abort()) or "compact" (ctx.compact(), then cancelled). */
export type SummaryStop = "abort" | "compact";

/** What the person is told on Pi 0.85, where the stop takes a compaction that Pi then reports as failed ("Nothing to compact") or cancelled. */
export const STOPPING_THROUGH_COMPACTION = "contextd: Escape stops the branch summary; on Pi 0.85 that takes a compaction, which Pi then reports as failed or cancelled (nothing is compacted)";

/**
 * How Escape stops a branch summary on Pi piVersion ("0.85.1", "1.6.0"):
 * "compact" below 0.86.0, whose TUI abort handler leaves the summary
 * running, else "abort". A version that does not parse is taken as new.
 */
export function summaryStop(piVersion: string): SummaryStop {
	const [major, minor] = piVersion.split(".").map((n) => Number.parseInt(n, 10));
	return major === 0 && minor !== undefined && minor < 86 ? "compact" : "abort";
}

/**
 * Catches the person's Escape in Pi's TUI until the returned stop(): the
 * first Escape key press calls onEscape, every Escape press is consumed
 * (so the editor does not count it towards a double Escape, which opens
 * /tree), key releases and other input pass. Without a UI, or where Pi
 * binds no terminal (RPC, print mode), nothing is caught.
 */
export function catchEscape(ctx: Pick<ExtensionContext, "hasUI" | "ui">, onEscape: () => void): () => void {
	if (!ctx.hasUI) return () => {};
	let pressed = false;
	const off = ctx.ui.onTerminalInput((data) => {
		if (isKeyRelease(data) || !matchesKey(data, "escape")) return undefined;
		if (!pressed) {
			pressed = true;
			onEscape();
		}
		return { consume: true };
	});
	return () => {
		try {
			off();
		} catch {
			// a ctx of a replaced session may refuse every use
		}
	};
}
