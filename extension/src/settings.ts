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
// socket, else its URL; transport.ts), with no default address. Path
// settings expand a leading ~ as Pi's own paths do (expandHome); a key of
// the "contextd" object that is not a setting is an error, like a value of
// the wrong type (docs/pi-extension.md, settings table).
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { MODES as GENERATED_MODES } from "./generated/rules.ts";
import { NOTES_GUARDS, type NotesGuard } from "./quality.ts";

/** The extension's mode (docs/design.md): off, local, tree or remote. */
export type Mode = (typeof GENERATED_MODES)[number];
/** Every mode, as the settings accept them: exactly, lowercase (contextd.Modes through src/generated/rules.ts). */
export const MODES: readonly Mode[] = GENERATED_MODES;

/**
 * What a refusal of the mode name raw says to do (contextd.ModeAdvice, the
 * one rule for every reader of a mode; test/rules.test.ts checks Go's
 * samples): "" when raw is a mode; "use tree (mode names are lowercase)"
 * when raw is a mode in another case; else "use off, local, tree or remote".
 */
export function modeAdvice(raw: string): string {
	if ((MODES as readonly string[]).includes(raw)) return "";
	const m = MODES.find((x) => x.toLowerCase() === raw.toLowerCase());
	return m ? `use ${m} (mode names are lowercase)` : "use off, local, tree or remote";
}

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

/** The JSON type each "contextd" setting of settings.json must have (FileSettings). */
const FILE_SETTING_TYPES: Readonly<Record<keyof FileSettings, string>> = {
	mode: "string",
	url: "string",
	stateDir: "string",
	tokenFile: "string",
	binary: "string",
	autoStart: "boolean",
	agentName: "string",
	notesGuard: "string",
	reminderThresholds: "string or array of numbers",
	codexSchemaFile: "string",
};

/** Edit distance of a and b (insertions, deletions, substitutions), for the suggestion of an unknown setting. */
function editDistance(a: string, b: string): number {
	let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
	for (let i = 1; i <= a.length; i++) {
		const cur = [i];
		for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
		prev = cur;
	}
	return prev[b.length];
}

/**
 * The error for a key of the "contextd" object that is not a setting (a
 * typo such as "mdoe" would otherwise be dropped without a word): it names
 * the key, the known setting it is closest to (same letters in another
 * case, or at most 2 edits), and every setting.
 */
function unknownSetting(file: string, key: string): Error {
	const known = Object.keys(FILE_SETTING_TYPES);
	const near = known.find((k) => k.toLowerCase() === key.toLowerCase()) ?? known.find((k) => editDistance(k.toLowerCase(), key.toLowerCase()) <= 2);
	const guess = near ? `did you mean "${near}"? ` : "";
	return new Error(`"contextd": {"${key}": …} in ${file} is not a setting; ${guess}use ${known.slice(0, -1).join(", ")} or ${known[known.length - 1]}`);
}

/**
 * A path setting as Pi reads its own paths: a leading "~" or "~/" is the
 * home directory (Pi's utils/paths.js normalizePath, expandTilde, 0.85.1
 * and 1.6.0); anything else is kept as written. undefined stays undefined.
 */
export function expandHome(p: string | undefined, home: string = homedir()): string | undefined {
	if (p === undefined) return undefined;
	if (p === "~") return home;
	return p.startsWith("~/") ? join(home, p.slice(2)) : p;
}

/**
 * The "contextd" object of <agentDir>/settings.json; {} when the file is
 * missing or not JSON (Pi reports that itself). Errors: a setting of the
 * wrong JSON type, named with the type it needs; a key that is not a
 * setting (unknownSetting).
 */
function readFileSettings(agentDir: string): FileSettings {
	const file = join(agentDir, "settings.json");
	let raw: { contextd?: unknown };
	try {
		raw = JSON.parse(readFileSync(file, "utf8")) as { contextd?: unknown };
	} catch {
		return {};
	}
	const c = raw && typeof raw === "object" ? raw.contextd : undefined;
	if (c === undefined || c === null) return {};
	if (typeof c !== "object" || Array.isArray(c)) throw new Error(`"contextd" in ${file} must be an object like {"mode": "tree"}; got ${JSON.stringify(c)}`);
	for (const [key, want] of Object.entries(FILE_SETTING_TYPES)) {
		const v = (c as Record<string, unknown>)[key];
		if (v === undefined) continue;
		const ok = key === "reminderThresholds" ? typeof v === "string" || (Array.isArray(v) && v.every((n) => typeof n === "number")) : typeof v === want;
		if (!ok) throw new Error(`"contextd": {"${key}": …} in ${file} must be a ${want}; got ${JSON.stringify(v)}`);
	}
	for (const key of Object.keys(c)) {
		if (!Object.hasOwn(FILE_SETTING_TYPES, key)) throw unknownSetting(file, key);
	}
	return c as FileSettings;
}

/**
 * CONTEXTD_AUTOSTART: "1"/"true" start contextd, "0"/"false" do not (any
 * case); unset or empty falls back to settings.json's boolean `autoStart`.
 * Any other value is an error naming it, so a typo such as "yes" is never
 * read silently as off (docs/pi-extension.md, settings table).
 */
export function parseAutoStart(raw: string | undefined, fromFile: boolean | undefined): boolean | undefined {
	if (raw === undefined) return fromFile;
	const v = raw.trim().toLowerCase();
	if (v === "1" || v === "true") return true;
	if (v === "0" || v === "false") return false;
	throw new Error(`CONTEXTD_AUTOSTART=${JSON.stringify(raw)} is not 1 or 0; set CONTEXTD_AUTOSTART=1 to start contextd when none answers, 0 to not`);
}

/**
 * Resolves the settings. An unknown mode is an error (the extension then
 * says so and does nothing); it never falls back to another mode.
 */
export function resolveSettings(src: SettingsSources): Settings {
	const file = readFileSettings(src.agentDir);
	const pick = (...vals: (string | undefined)[]) => vals.find((v) => v !== undefined && v !== "");
	// Read exactly, as every reader of a mode does (modeAdvice).
	const modeRaw = pick(src.flags.mode, src.env.CONTEXTD_MODE, file.mode) ?? "local";
	if (!MODES.includes(modeRaw as Mode)) {
		throw new Error(`unknown mode "${modeRaw}"; ${modeAdvice(modeRaw)}`);
	}
	const guardRaw = (pick(src.env.CONTEXTD_NOTES_GUARD, file.notesGuard) ?? "warn").toLowerCase();
	if (!NOTES_GUARDS.includes(guardRaw as NotesGuard)) {
		throw new Error(`unknown notes guard "${guardRaw}"; use warn, refuse or off`);
	}
	const thrRaw = src.env.CONTEXTD_REMINDER_THRESHOLDS ?? file.reminderThresholds;
	const stateDir = expandHome(pick(src.env.CONTEXTD_STATE_DIR, file.stateDir)) ?? join(src.agentDir, "contextd");
	const autoStart = parseAutoStart(pick(src.env.CONTEXTD_AUTOSTART), file.autoStart);
	return {
		mode: modeRaw as Mode,
		url: pick(src.flags.url, src.env.CONTEXTD_URL, file.url),
		stateDir,
		tokenFile: expandHome(pick(src.env.CONTEXTD_TOKEN_FILE, file.tokenFile)) ?? join(stateDir, "token"),
		binary: expandHome(pick(src.env.CONTEXTD_BIN, file.binary)),
		autoStart,
		agentName: pick(src.env.CONTEXTD_AGENT_NAME, file.agentName) ?? "/root",
		notesGuard: guardRaw as NotesGuard,
		reminderThresholds: thrRaw === undefined ? [...DEFAULT_REMINDER_THRESHOLDS] : parseThresholds(thrRaw),
		codexSchemaFile: expandHome(pick(src.env.CONTEXTD_CODEX_SCHEMA, file.codexSchemaFile)),
	};
}
