// Commands the person types while a Tree rollover's branch summary is
// written that Pi would run beside it and that break it, refused before
// Pi sees them (docs/design.md §5.3.1 rows "/tree navigation by the
// person" and "Auto-compaction (threshold), manual /compact"):
//   - /tree: Pi 0.85's AgentSession.navigateTree replaces the session's one
//     branch-summary abort controller with the person's navigation's own
//     before session_before_tree, and clears it when the extension refuses
//     the pick, so the rollover's summary can no longer be stopped (Escape
//     then stops nothing); Pi 1.6 refuses the pick itself. Refused here on
//     both, in one sentence, before the selector opens.
//   - /compact: AgentSession.compact() aborts the summary (abort()), waits
//     for it and only then compacts; with a /new or /fork typed meanwhile
//     the compaction runs while Pi replaces the session, and Pi 0.85's TUI,
//     which shows "Compacting context..." at the compaction's start, never
//     gets its end from the session it left: the spinner stays. Refused
//     here on both Pis: it can run once the new window has started.
// Interactive Pi (0.85.1 and 1.6.0) runs its built-in commands from the
// editor's submit, without an input event, so the extension catches the
// submit key itself with ctx.ui.onTerminalInput (a no-op outside the TUI).
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { isKeyRelease, matchesKey } from "@earendil-works/pi-tui";

/** What the person is told when their /tree comes while a rollover's summary runs. */
export const TREE_WAITS = "contextd: wait for the new context window to start before navigating the session tree (its summary is running)";

/** What the person is told when they type /compact while a rollover's summary runs. */
export const COMPACT_WAITS = "contextd: wait for the new context window to start before /compact (its summary is running); press Escape to stop the summary instead";

/**
 * The sentence refusing the editor text text (trimmed as Pi trims it)
 * during a summary: TREE_WAITS for "/tree", COMPACT_WAITS for "/compact"
 * with or without instructions; undefined for anything else, which Pi
 * takes as usual (input typed during the summary is held, tree-state.ts).
 */
export function summaryRefusal(text: string): string | undefined {
	const t = text.trim();
	if (t === "/tree") return TREE_WAITS;
	if (t === "/compact" || t.startsWith("/compact ")) return COMPACT_WAITS;
	return undefined;
}

/**
 * Refuses the commands of summaryRefusal in Pi's TUI until the returned
 * stop(): an Enter press whose editor text is one of them is consumed,
 * the editor emptied and tell called with the sentence. Other input, key
 * releases, and Enter with any other text pass. Without a UI, or where Pi
 * binds no terminal (RPC, print mode), nothing is caught.
 */
export function catchSummaryCommands(ctx: Pick<ExtensionContext, "hasUI" | "ui">, tell: (sentence: string) => void): () => void {
	if (!ctx.hasUI) return () => {};
	const off = ctx.ui.onTerminalInput((data) => {
		if (isKeyRelease(data) || !matchesKey(data, "enter")) return undefined;
		const sentence = summaryRefusal(ctx.ui.getEditorText());
		if (sentence === undefined) return undefined;
		ctx.ui.setEditorText("");
		tell(sentence);
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
