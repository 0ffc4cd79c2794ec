// One-line messages to the person running Pi, in every run mode.
//
// Pi's TUI and RPC modes show ctx.ui.notify; print and JSON modes bind no
// UI (ctx.hasUI is false and notify does nothing; docs/pi-facts.md "UI in
// every run mode"), so there the line goes to stderr, where print mode also
// reports extension errors, and never mixes into the model's answer on
// stdout.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";

/** The level of a notice, as Pi's ui.notify takes it. */
export type Level = "info" | "warning" | "error";

/** Shows msg in Pi's UI, or writes it as one stderr line when Pi has none. */
export function notify(ctx: Pick<ExtensionContext, "hasUI" | "ui">, msg: string, level: Level, stderr: { write(s: string): unknown } = process.stderr): void {
	if (ctx.hasUI) {
		ctx.ui.notify(msg, level);
		return;
	}
	stderr.write(`${msg}\n`);
}

/**
 * msg as one line that names contextd once: "contextd: " in front, unless
 * msg already starts with the word contextd (the client's errors do:
 * "contextd is not running …", "contextd 500: …").
 */
export function prefixed(msg: string): string {
	return /^contextd\b/.test(msg) ? msg : `contextd: ${msg}`;
}
