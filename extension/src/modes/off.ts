// Off mode, and an extension whose settings could not be read: no tools, no
// hooks, no context management; Pi runs as if contextd were not there but
// for the cards of the session's windows, still drawn as cards. Only
// /contextd stays, so the command is always the extension's (Pi would
// otherwise send "/contextd …" to the model as a prompt) and
// /contextd mode local|tree|remote turns context management on again in
// the same Pi process.
import type { ExtensionAPI, ExtensionCommandContext } from "@earendil-works/pi-coding-agent";
import { CAPTURE_ARGUMENT, completions, helpLines, parseCommand } from "../command.ts";
import type { Host } from "../host.ts";
import type { Say } from "../session.ts";
import { COMMAND_DESCRIPTION, switchMode } from "../status.ts";
import { registerCardRenderers } from "../view.ts";

/** Why the extension manages no context: Off mode, or the sentence of a settings error. */
export type Inactive = { mode: "off" } | { error: string };

/** The lines /contextd ARGS answers while the extension is inactive (why). */
export function inactiveLines(why: Inactive, args: string): string[] | "switch" {
	const cmd = parseCommand(args);
	if ("error" in cmd) return [cmd.error];
	const turnOn = "/contextd mode local (or tree, remote) turns context management on in this Pi";
	const reason = "mode" in why ? "contextd is off in this Pi: no context management" : `${why.error}; the extension is inactive`;
	switch (cmd.sub) {
		case "help":
			return helpLines();
		case "mode":
			return "switch";
		case "status":
			return ["mode" in why ? "contextd mode: off" : "contextd mode: unknown (the settings could not be read)", `${reason}; ${turnOn}`];
		case "new":
		case "finish":
		case "log":
			return [`${reason}: /contextd ${cmd.sub} needs local or tree mode; ${turnOn}`];
	}
}

/**
 * Registers /contextd for an inactive extension (inactiveLines); notify is
 * how it speaks (notify.ts). The cards of the session's windows are still
 * drawn as cards (registerCardRenderers).
 */
export function registerInactive(pi: ExtensionAPI, notify: Host["notify"], why: Inactive): void {
	registerCardRenderers(pi);
	pi.registerCommand("contextd", {
		description: COMMAND_DESCRIPTION,
		getArgumentCompletions: (prefix) => completions(prefix),
		handler: async (args: string, ctx: ExtensionCommandContext) => {
			if (args.trim() === CAPTURE_ARGUMENT) return; // a Tree session's capture, sent before /contextd mode off reloaded
			const out = inactiveLines(why, args);
			if (out === "switch") {
				const cmd = parseCommand(args);
				if ("mode" in cmd) await switchMode(notify, cmd.mode, ctx);
				return;
			}
			notify(ctx, out.join("\n"), "info");
		},
	});
}

/** Off mode: only /contextd (registerInactive). */
export function installOff(host: Host, _say: Say): void {
	registerInactive(host.pi, host.notify, { mode: "off" });
}
