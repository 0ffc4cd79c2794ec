// Pi's side of what a person sees (render.ts, statusline.ts): the window
// card's message renderer, the tools' renderCall/renderResult, the footer
// status line, and the progress widget of a Tree rollover. Pi's TUI calls
// (ctx.ui.setStatus, setWidget, registerMessageRenderer, Text) exist on Pi
// 0.85.1 and 1.6.0 alike (dist/core/extensions/types.d.ts of each); in
// print and JSON mode ctx.hasUI is false and nothing is drawn.
import type { ExtensionAPI, ExtensionContext, Theme } from "@earendil-works/pi-coding-agent";
import { Text } from "@earendil-works/pi-tui";
import { newContextLines, NOTICE_TYPE, noticeCard, rolloverProgress, type Style, toolCallLine, toolResultLines, windowCard, type WindowNumbers, windowStartedNotice } from "./render.ts";
import { STATUS_KEY, statusLine } from "./statusline.ts";
import { WINDOW_TYPE } from "./generated/rules.ts";
import { identityOf } from "./windows.ts";

/** The widget key of the rollover progress line. */
export const PROGRESS_KEY = "contextd-rollover";

function styleOf(theme: Theme): Style {
	return {
		dim: (s) => theme.fg("dim", s),
		accent: (s) => theme.fg("accent", s),
		error: (s) => theme.fg("error", s),
		match: (s) => theme.bold(theme.fg("warning", s)),
	};
}

/** Window numbers of every boundary in the session (archived windows too: Tree keeps them on side branches). */
export function sessionWindowNumbers(entries: readonly { type: string; customType?: string; details?: unknown }[]): Map<string, number> {
	const m = new Map<string, number>();
	for (const e of entries) {
		if (e.type !== "custom_message") continue;
		const id = identityOf(e);
		if (id) m.set(id.currentWindowId, id.windowNumber);
	}
	return m;
}

/** What view needs to know about the live session at a moment (the installers answer from its SessionState). */
export interface ViewFacts {
	mode: string;
	/** contextd is registered with and its last /context call succeeded. */
	reachable(): boolean;
	/** The session connected at session_start (statusline.ts StatusFacts.connected); absent: true. */
	connected?(): boolean;
	/** contextd refused the session as too large (statusline.ts StatusFacts.tooLarge); absent: false. */
	tooLarge?(): boolean;
	/** A Tree rollover new_context planned and the settled phase has not taken yet. */
	pending(): boolean;
}

/** The extension's UI surface: tool renderers, the footer status line and Tree-summary progress. */
export interface View {
	/** renderCall/renderResult for one of contextd's tools. */
	renderers(tool: "new_context" | "history" | "notes"): Pick<Parameters<ExtensionAPI["registerTool"]>[0], "renderCall" | "renderResult">;
	/** Redraws the footer status line from the branch, Pi's context usage and contextd's reachability. */
	refresh(ctx: ExtensionContext): void;
	/** Shows the progress of a Tree summary until the returned stop() (which clears it). */
	progress(ctx: ExtensionContext, windowNumber: number | undefined): () => void;
	/** Replaces Pi's "Navigated to selected point" with the new window's line; adopted: the archived window 0 had adopted an earlier conversation (render.ts windowStartedNotice). */
	windowStarted(ctx: ExtensionContext, windowNumber: number | undefined, elapsedMs: number, adopted?: boolean): void;
	/**
	 * The info line that tells the person their input is held (notice):
	 * while the new window's line is still the last one on the screen, that
	 * line with heldInNewWindow after it, since Pi's next info line takes
	 * the place of the one before it (interactive-mode showStatus, 0.85.1
	 * and 1.6.0); else notice as it is.
	 */
	heldNotice(notice: string): string;
	/**
	 * A Tree rollover's navigateTree with the person's view around it: the
	 * status line and progress widget while the summary is written. The new
	 * window's notice waits for started(), which the rollover calls once the
	 * window is known to be open (its boundary sent): a navigation that ends
	 * without a branch summary, or a commit contextd refuses, says only its
	 * error.
	 */
	navigating(ctx: ExtensionContext, navigate: TreeNavigate): { navigate: TreeNavigate; started(): void };
	/** Something was drawn after the new window's line (a message, another session): heldNotice no longer joins them. */
	drawn(): void;
}

/** What heldNotice adds to the new window's line when input is held after it. */
export const HELD_IN_NEW_WINDOW = "your message is held and sent to the model in the new window";

/** Pi's navigateTree of a captured command context: the target entry id, whether to summarize, the summary's label. */
export type TreeNavigate = (id: string, o: { summarize: boolean; label?: string }) => Promise<{ cancelled: boolean }>;

/**
 * Runs draw, a use of a captured ctx's UI, and says whether it ran. Pi
 * marks a ctx stale when it replaces the session (/new, /resume, /fork) or
 * reloads the extension, and every later use throws
 * (ExtensionRunner.assertActive, Pi 0.85.1 and 1.6.0); the replaced
 * session's screen is gone, so there is nothing left to draw on.
 */
function onLiveUI(draw: () => void): boolean {
	try {
		draw();
		return true;
	} catch {
		return false;
	}
}

/**
 * Registers the renderers of contextd's custom messages in the
 * transcript: the window card (a boundary or reminder) and the notice
 * card. Every mode registers them, Off and an inactive extension too: the
 * session's earlier windows stay cards, not their raw text, after
 * /contextd mode off.
 */
export function registerCardRenderers(pi: ExtensionAPI): void {
	pi.registerMessageRenderer(WINDOW_TYPE, (message, options, theme) => {
		const content = typeof message.content === "string" ? message.content : message.content.map((c) => (c.type === "text" ? c.text : "")).join("");
		return new Text(windowCard(content, message.details, options.expanded, styleOf(theme)).join("\n"), 1, 0);
	});
	pi.registerMessageRenderer(NOTICE_TYPE, (message, options, theme) => {
		const content = typeof message.content === "string" ? message.content : message.content.map((c) => (c.type === "text" ? c.text : "")).join("");
		return new Text(noticeCard(content, options.expanded, styleOf(theme)).join("\n"), 1, 0);
	});
}

/** Registers the window card's renderer and returns the rest for index.ts to wire. */
export function installView(pi: ExtensionAPI, facts: ViewFacts): View {
	let numbers = new Map<string, number>();
	let summarizing = false;
	// The new window's line while it is the last thing on the screen: from
	// windowStarted until the next message Pi draws (Tree's message_start)
	// or session (installViewHooks).
	let startedLine: string | undefined;
	const lookup: WindowNumbers = (id) => numbers.get(id);
	registerCardRenderers(pi);
	const text = (content: readonly { type: string; text?: string }[]) => content.map((c) => (c.type === "text" ? (c.text ?? "") : "")).join("");
	return {
		renderers(tool) {
			return {
				renderCall(args, theme) {
					return new Text(toolCallLine(tool, (args ?? {}) as Record<string, unknown>, lookup, styleOf(theme)), 0, 0);
				},
				renderResult(result, options, theme, context) {
					const style = styleOf(theme);
					if (options.isPartial) return new Text(style.dim("…"), 0, 0);
					const body = text(result.content as { type: string; text?: string }[]);
					const lines =
						tool === "new_context"
							? newContextLines(facts.mode, body, result.details, context.isError, style)
							: toolResultLines(tool, (context.args ?? {}) as Record<string, unknown>, body, { isError: context.isError, expanded: options.expanded, numbers: lookup, style });
					return new Text(lines.join("\n"), 0, 0);
				},
			};
		},
		refresh(ctx) {
			if (!ctx.hasUI) return;
			numbers = sessionWindowNumbers(ctx.sessionManager.getEntries());
			let win: number | undefined;
			for (const e of ctx.sessionManager.getBranch()) {
				if (e.type === "custom_message") win = identityOf(e)?.windowNumber ?? win;
			}
			const usage = ctx.getContextUsage();
			const rollover = summarizing ? "summarizing" : facts.pending() ? "pending" : undefined;
			ctx.ui.setStatus(STATUS_KEY, statusLine({ mode: facts.mode, reachable: facts.reachable(), connected: facts.connected?.() ?? true, tooLarge: facts.tooLarge?.() ?? false, window: win, percent: usage?.percent ?? null, rollover }));
		},
		progress(ctx, windowNumber) {
			if (!ctx.hasUI) return () => {};
			const started = Date.now();
			const draw = () => ctx.ui.setWidget(PROGRESS_KEY, [rolloverProgress(windowNumber, Date.now() - started)]);
			draw();
			// The redraw runs from a timer, where a throw is uncaught and
			// ends Pi: once the session is replaced under the summary
			// (/new, /resume, /fork), ctx is stale and the timer stops.
			const timer = setInterval(() => {
				if (!onLiveUI(() => draw())) clearInterval(timer);
			}, 1000);
			timer.unref?.();
			return () => {
				clearInterval(timer);
				onLiveUI(() => ctx.ui.setWidget(PROGRESS_KEY, undefined));
			};
		},
		windowStarted(ctx, windowNumber, elapsedMs, adopted = false) {
			// Pi's navigateTree ends with showStatus("Navigated to selected
			// point"); an info notify right after it replaces that line in
			// place (interactive-mode.js showStatus, 0.85.1 and 1.6.0).
			if (!ctx.hasUI) return;
			startedLine = windowStartedNotice(windowNumber, elapsedMs, adopted);
			ctx.ui.notify(startedLine, "info");
		},
		heldNotice(notice) {
			return startedLine === undefined ? notice : `${startedLine}; ${HELD_IN_NEW_WINDOW}`;
		},
		drawn() {
			startedLine = undefined;
		},
		navigating(ctx, navigate) {
			let from: number | undefined;
			let adopted = false; // the closing window adopted an earlier conversation
			let started: number | undefined;
			return {
				navigate: async (id, o) => {
					from = undefined;
					adopted = false;
					for (const e of ctx.sessionManager.getBranch()) {
						const w = e.type === "custom_message" ? identityOf(e) : undefined;
						if (w) [from, adopted] = [w.windowNumber, !!w.startEntryId];
					}
					started = Date.now();
					summarizing = true;
					this.refresh(ctx);
					const stop = this.progress(ctx, from);
					try {
						return await navigate(id, o);
					} finally {
						stop();
						summarizing = false;
						onLiveUI(() => this.refresh(ctx));
					}
				},
				started: () => {
					if (started === undefined) return;
					this.windowStarted(ctx, from === undefined ? undefined : from + 1, Date.now() - started, adopted);
					started = undefined;
				},
			};
		},
	};
}

/**
 * Redraws the status line after the session is registered, at each turn's
 * end and after a /tree navigation (session_tree: the leaf may now be in
 * another window, and no turn follows to redraw it).
 */
export function installViewHooks(pi: ExtensionAPI, view: View): void {
	pi.on("session_start", async (_e, ctx) => {
		view.drawn();
		view.refresh(ctx);
	});
	pi.on("turn_end", async (_e, ctx) => view.refresh(ctx));
	// A replaced session's session_tree comes after its navigation ended
	// (a Tree summary Pi wrote after /new, /resume, /fork): its ctx is
	// stale and its screen gone, so there is nothing to redraw.
	pi.on("session_tree", async (_e, ctx) => {
		onLiveUI(() => view.refresh(ctx));
	});
}
