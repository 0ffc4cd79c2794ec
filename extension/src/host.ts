// The ports every mode installer gets: Pi's ExtensionAPI, the resolved
// settings, Pi's version and how to reach contextd. index.ts fills them from
// Pi; the unit tests fill them with fakes (test/fakepi.ts), so each mode's
// wiring runs without Pi.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { Level } from "./notify.ts";
import type { ContextdPort } from "./session.ts";
import type { Settings } from "./settings.ts";

/** What a mode installer needs from its surroundings. */
export interface Host {
	/** Pi's extension API: handlers, tools, commands and session writes are registered and made through it. */
	pi: ExtensionAPI;
	/** The resolved settings (settings.ts resolveSettings). */
	settings: Settings;
	/** Pi's version string (pi-coding-agent VERSION), e.g. "0.85.1" or "1.6.0"; sent at registration and used by leafBody. */
	piVersion: string;
	/** Finds or starts contextd (client.ts connect); rejects with one sentence saying what to do. */
	connect(settings: Settings): Promise<ContextdPort>;
	/** Whether contextd at url answers /healthz (client.ts healthy). */
	healthy(url: string): Promise<boolean>;
	/** One line to the person running Pi (notify.ts notify). */
	notify(ctx: ExtensionContext, message: string, level: Level): void;
	/** Schedules fn after ms milliseconds without keeping Pi alive (setTimeout + unref). */
	setTimer(fn: () => void, ms: number): void;
}

/** A tool result's text content. */
export type Text = { type: "text"; text: string };

/** One text block: the content of a tool result. */
export const text = (t: string): Text[] => [{ type: "text", text: t }];
