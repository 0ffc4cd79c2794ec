// Pi extension: Pi uses contextd for Codex-style context windows.
//
// Modes (setting "mode"; default local): off registers only /contextd; local and
// tree give the model new_context and the flat history/notes router tools
// over contextd's local index; remote forwards the Codex history/notes
// operations through contextd to the Codex backend with Pi's ChatGPT/Codex
// login. contextd never writes the session file: every write it plans is
// appended here with Pi's own API (pi.appendEntry, pi.sendMessage,
// navigateTree). This file only wires: it resolves the settings and hands
// Pi and contextd's client to the installer of the mode (modes/*.ts).
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { getAgentDir, VERSION } from "@earendil-works/pi-coding-agent";
import { connect, healthy } from "./client.ts";
import type { Host } from "./host.ts";
import { installLocal } from "./modes/local.ts";
import { installOff, registerInactive } from "./modes/off.ts";
import { installRemote } from "./modes/remote.ts";
import { installTree } from "./modes/tree.ts";
import { notify, prefixed } from "./notify.ts";
import type { Say } from "./session.ts";
import { type Mode, resolveSettings, type Settings } from "./settings.ts";

/** The installer of each mode. */
export const INSTALLERS: Readonly<Record<Mode, (host: Host, say: Say) => void>> = {
	off: installOff,
	local: installLocal,
	tree: installTree,
	remote: installRemote,
};

/** A "session replaced" line: Pi's notify (warning) when ctx still works, else stderr. */
export const sayWarning: Say = (ctx: ExtensionContext | undefined, message: string) => {
	try {
		if (ctx) {
			notify(ctx, message, "warning");
			return;
		}
	} catch {
		// a ctx of a replaced session may refuse every use (Pi 1.6 marks it stale)
	}
	process.stderr.write(`${message}\n`);
};

/** The extension's entry point: Pi calls it once per extension runtime. */
export default function contextdExtension(pi: ExtensionAPI): void {
	let settings: Settings;
	try {
		settings = resolveSettings({ agentDir: getAgentDir(), env: process.env, flags: {} });
	} catch (err) {
		const error = prefixed((err as Error).message);
		pi.on("session_start", async (_e, ctx) => notify(ctx, `${error}; the extension is inactive`, "error"));
		registerInactive(pi, notify, { error });
		return;
	}
	const host: Host = {
		pi,
		settings,
		piVersion: VERSION,
		connect,
		healthy: (url) => healthy(url),
		notify,
		setTimer: (fn, ms) => {
			setTimeout(fn, ms).unref?.();
		},
	};
	INSTALLERS[settings.mode](host, sayWarning);
}
