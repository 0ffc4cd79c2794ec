// Settings of the contextd extension and where they come from.
//
// Precedence, highest first: Pi CLI flags (--contextd-mode, --contextd-url),
// environment (CONTEXTD_MODE, CONTEXTD_URL, CONTEXTD_TOKEN_FILE,
// CONTEXTD_STATE_DIR, CONTEXTD_BIN, CONTEXTD_AUTOSTART, CONTEXTD_AGENT_NAME,
// CONTEXTD_NOTES_GUARD, CONTEXTD_REMINDER_THRESHOLDS, CONTEXTD_CODEX_SCHEMA),
// the "contextd" object of Pi's settings.json in the agent directory, then
// the defaults, which match contextd's own: state directory
// $PI_CODING_AGENT_DIR/contextd (else ~/.pi/agent/contextd), token file
// <state-dir>/token, address from <state-dir>/contextd.json (its Unix
// socket, else its URL; transport.ts), with no default address.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { NOTES_GUARDS, type NotesGuard } from "./quality.ts";

/** The extension's mode (docs/design.md): off, local, tree or remote. */
export type Mode = "off" | "local" | "tree" | "remote";
/** Every mode, as the settings accept them. */
export const MODES: readonly Mode[] = ["off", "local", "tree", "remote"];

/** The resolved settings (resolveSettings). */
export interface Settings {
	mode: Mode;
	/** Explicit address (flag, env or settings.json): http://LOOPBACK:PORT or unix:/path; undefined: the discovery file's. */
	url?: string;
	stateDir: string;
	tokenFile: string;
	/** contextd binary to start (CONTEXTD_BIN); undefined: the bundled one, else contextd on PATH (launcher.ts). */
	binary?: string;
	/** Start contextd when it is not reachable at session start (CONTEXTD_AUTOSTART); undefined: only with the bundled binary. */
	autoStart?: boolean;
	/** Codex agent path of this agent; "/root" for the main agent. */
	agentName: string;
	/** new_context when the window wrote no note: warn (default), refuse or off (Local and Tree). */
	notesGuard: NotesGuard;
	/** Context-usage percentages at which a reminder is sent, once per window, ascending; default [70, 85]; [] disables. */
	reminderThresholds: number[];
	/**
	 * Remote mode: a serialized-schema protocol file whose namespace specs are
	 * sent byte for byte instead of the built-in ones (remote.ts
	 * specsFromProtocol; docs/codex-contract.md "Tool surface"). Undefined:
	 * the built-in specs.
	 */
	codexSchemaFile?: string;
}

/** Context-usage percentages at which reminders are sent by default. */
export const DEFAULT_REMINDER_THRESHOLDS = [70, 85];

/** Where settings come from: Pi's agent directory (settings.json), the environment and command-line flags. */
export interface SettingsSources {
	agentDir: string;
	env: Record<string, string | undefined>;
	flags: { mode?: string; url?: string };
}

interface FileSettings {
	mode?: string;
	url?: string;
	stateDir?: string;
	tokenFile?: string;
	binary?: string;
	autoStart?: boolean;
	agentName?: string;
	notesGuard?: string;
	reminderThresholds?: number[] | string;
	codexSchemaFile?: string;
}

/** "70,85" or [70, 85] → [70, 85]; "off", "" or [] → []. Each must be a number in (0, 100]. */
export function parseThresholds(raw: number[] | string): number[] {
	const parts = Array.isArray(raw) ? raw : raw.trim() === "" || raw.trim().toLowerCase() === "off" ? [] : raw.split(",").map((p) => Number(p.trim()));
	for (const p of parts) {
		if (typeof p !== "number" || !Number.isFinite(p) || p <= 0 || p > 100) {
			throw new Error(`reminder thresholds must be percentages in (0, 100], like "70,85" or "off"; got ${JSON.stringify(raw)}`);
		}
	}
	return [...parts].sort((a, b) => a - b);
}

function readFileSettings(agentDir: string): FileSettings {
	try {
		const raw = JSON.parse(readFileSync(join(agentDir, "settings.json"), "utf8")) as { contextd?: FileSettings };
		return raw && typeof raw.contextd === "object" && raw.contextd !== null ? raw.contextd : {};
	} catch {
		return {};
	}
}

/**
 * Resolves the settings. An unknown mode is an error (the extension then
 * says so and does nothing); it never falls back to another mode.
 */
export function resolveSettings(src: SettingsSources): Settings {
	const file = readFileSettings(src.agentDir);
	const pick = (...vals: (string | undefined)[]) => vals.find((v) => v !== undefined && v !== "");
	const modeRaw = (pick(src.flags.mode, src.env.CONTEXTD_MODE, file.mode) ?? "local").toLowerCase();
	if (!MODES.includes(modeRaw as Mode)) {
		throw new Error(`unknown contextd mode "${modeRaw}"; use off, local, tree or remote`);
	}
	const guardRaw = (pick(src.env.CONTEXTD_NOTES_GUARD, file.notesGuard) ?? "warn").toLowerCase();
	if (!NOTES_GUARDS.includes(guardRaw as NotesGuard)) {
		throw new Error(`unknown contextd notes guard "${guardRaw}"; use warn, refuse or off`);
	}
	const thrRaw = src.env.CONTEXTD_REMINDER_THRESHOLDS ?? file.reminderThresholds;
	const stateDir = pick(src.env.CONTEXTD_STATE_DIR, file.stateDir) ?? join(src.agentDir, "contextd");
	const autoRaw = pick(src.env.CONTEXTD_AUTOSTART);
	return {
		mode: modeRaw as Mode,
		url: pick(src.flags.url, src.env.CONTEXTD_URL, file.url),
		stateDir,
		tokenFile: pick(src.env.CONTEXTD_TOKEN_FILE, file.tokenFile) ?? join(stateDir, "token"),
		binary: pick(src.env.CONTEXTD_BIN, file.binary),
		autoStart: autoRaw !== undefined ? autoRaw === "1" || autoRaw === "true" : file.autoStart,
		agentName: pick(src.env.CONTEXTD_AGENT_NAME, file.agentName) ?? "/root",
		notesGuard: guardRaw as NotesGuard,
		reminderThresholds: thrRaw === undefined ? [...DEFAULT_REMINDER_THRESHOLDS] : parseThresholds(thrRaw),
		codexSchemaFile: pick(src.env.CONTEXTD_CODEX_SCHEMA, file.codexSchemaFile),
	};
}
