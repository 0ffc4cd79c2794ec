// settings.ts: which source wins (flag, environment, settings.json,
// default), the defaults that match contextd's own, and the errors that
// leave the extension inactive instead of falling back to another mode.
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { expandHome, MODES, parseThresholds, resolveSettings } from "../src/settings.ts";
import { serveCommand } from "../src/client.ts";

function agentDir(contextd?: unknown): string {
	const dir = mkdtempSync(join(tmpdir(), "contextd-settings-"));
	if (contextd !== undefined) writeFileSync(join(dir, "settings.json"), JSON.stringify({ theme: "dark", contextd }));
	return dir;
}

test("defaults: local mode, state under the agent directory, token in it, no explicit URL, /root, warn, [70, 85]", () => {
	const dir = agentDir();
	assert.deepEqual(resolveSettings({ agentDir: dir, env: {}, flags: {} }), {
		mode: "local",
		url: undefined,
		stateDir: join(dir, "contextd"),
		tokenFile: join(dir, "contextd", "token"),
		// Unset: launcher.ts decides (the bundled binary, then contextd on PATH; auto-start with the bundled one).
		binary: undefined,
		autoStart: undefined,
		agentName: "/root",
		notesGuard: "warn",
		reminderThresholds: [70, 85],
		codexSchemaFile: undefined,
	});
	assert.deepEqual(MODES, ["off", "local", "tree", "remote"]);
});

test("flag beats environment beats settings.json; empty values do not count", () => {
	const dir = agentDir({ mode: "remote", url: "http://file:1", stateDir: "/file-state", binary: "/bin/f", agentName: "/file", autoStart: true });
	const fromFile = resolveSettings({ agentDir: dir, env: {}, flags: {} });
	assert.deepEqual([fromFile.mode, fromFile.url, fromFile.stateDir, fromFile.tokenFile, fromFile.binary, fromFile.agentName, fromFile.autoStart], [
		"remote",
		"http://file:1",
		"/file-state",
		"/file-state/token",
		"/bin/f",
		"/file",
		true,
	]);
	const env = { CONTEXTD_MODE: "tree", CONTEXTD_URL: "http://env:2", CONTEXTD_STATE_DIR: "/env-state", CONTEXTD_AUTOSTART: "0", CONTEXTD_AGENT_NAME: "" };
	const fromEnv = resolveSettings({ agentDir: dir, env, flags: {} });
	assert.deepEqual([fromEnv.mode, fromEnv.url, fromEnv.stateDir, fromEnv.autoStart, fromEnv.agentName], ["tree", "http://env:2", "/env-state", false, "/file"]);
	const fromFlag = resolveSettings({ agentDir: dir, env, flags: { mode: "off", url: "http://flag:3" } });
	assert.deepEqual([fromFlag.mode, fromFlag.url], ["off", "http://flag:3"]);
	assert.equal(resolveSettings({ agentDir: dir, env: { CONTEXTD_AUTOSTART: "true" }, flags: {} }).autoStart, true);
	assert.equal(resolveSettings({ agentDir: dir, env: { CONTEXTD_TOKEN_FILE: "/t" }, flags: {} }).tokenFile, "/t");
});

test("an unreadable or malformed settings.json is ignored (Pi reports it itself)", () => {
	const dir = mkdtempSync(join(tmpdir(), "contextd-settings-"));
	writeFileSync(join(dir, "settings.json"), "{not json");
	assert.equal(resolveSettings({ agentDir: dir, env: {}, flags: {} }).mode, "local");
});

test("unknown mode or notes guard: an error naming the value and the choices, never another mode", () => {
	assert.throws(() => resolveSettings({ agentDir: agentDir({ mode: "cloud" }), env: {}, flags: {} }), {
		message: 'unknown mode "cloud"; use off, local, tree or remote',
	});
	assert.throws(() => resolveSettings({ agentDir: agentDir(), env: { CONTEXTD_NOTES_GUARD: "block" }, flags: {} }), {
		message: 'unknown notes guard "block"; use warn, refuse or off',
	});
});

test("a mode in another case is refused wherever it is read, with the lowercase mode to use (contextd.ModeAdvice)", () => {
	const message = 'unknown mode "TREE"; use tree (mode names are lowercase)';
	assert.throws(() => resolveSettings({ agentDir: agentDir(), env: { CONTEXTD_MODE: "TREE" }, flags: {} }), { message });
	assert.throws(() => resolveSettings({ agentDir: agentDir({ mode: "TREE" }), env: {}, flags: {} }), { message });
	assert.throws(() => resolveSettings({ agentDir: agentDir(), env: {}, flags: { mode: "TREE" } }), { message });
	assert.equal(resolveSettings({ agentDir: agentDir(), env: { CONTEXTD_MODE: "tree" }, flags: {} }).mode, "tree");
});

test("reminder thresholds: a list or comma string, sorted; off and empty disable; out of (0, 100] is an error", () => {
	assert.deepEqual(parseThresholds("85, 70"), [70, 85]);
	assert.deepEqual(parseThresholds([90]), [90]);
	assert.deepEqual(parseThresholds("OFF"), []);
	assert.deepEqual(parseThresholds(""), []);
	assert.deepEqual(parseThresholds("100"), [100]);
	assert.throws(() => parseThresholds("0"), /percentages in \(0, 100\]/);
	assert.throws(() => parseThresholds("101"), /got "101"/);
	assert.throws(() => parseThresholds("70,x"), /got "70,x"/);
	assert.deepEqual(resolveSettings({ agentDir: agentDir({ reminderThresholds: [95, 50] }), env: {}, flags: {} }).reminderThresholds, [50, 95]);
	assert.deepEqual(resolveSettings({ agentDir: agentDir({ reminderThresholds: [95] }), env: { CONTEXTD_REMINDER_THRESHOLDS: "60" }, flags: {} }).reminderThresholds, [60]);
});

test("CONTEXTD_AUTOSTART: 1/true/0/false in any case; anything else is an error naming the value, never a silent off", () => {
	const dir = agentDir({ autoStart: true });
	assert.equal(resolveSettings({ agentDir: dir, env: { CONTEXTD_AUTOSTART: "TRUE" }, flags: {} }).autoStart, true);
	assert.equal(resolveSettings({ agentDir: dir, env: { CONTEXTD_AUTOSTART: "False" }, flags: {} }).autoStart, false);
	assert.equal(resolveSettings({ agentDir: dir, env: { CONTEXTD_AUTOSTART: "" }, flags: {} }).autoStart, true);
	assert.throws(() => resolveSettings({ agentDir: dir, env: { CONTEXTD_AUTOSTART: "yes" }, flags: {} }), {
		message: 'CONTEXTD_AUTOSTART="yes" is not 1 or 0; set CONTEXTD_AUTOSTART=1 to start contextd when none answers, 0 to not',
	});
});

test("codexSchemaFile: environment beats settings.json", () => {
	const dir = agentDir({ codexSchemaFile: "/file/protocol.json" });
	assert.equal(resolveSettings({ agentDir: dir, env: {}, flags: {} }).codexSchemaFile, "/file/protocol.json");
	assert.equal(resolveSettings({ agentDir: dir, env: { CONTEXTD_CODEX_SCHEMA: "/env/p.json" }, flags: {} }).codexSchemaFile, "/env/p.json");
});

test("a setting of the wrong JSON type in settings.json is named with the type it needs, never a TypeError", () => {
	assert.throws(() => resolveSettings({ agentDir: agentDir({ url: 123 }), env: {}, flags: {} }), (e: unknown) => e instanceof Error && /"contextd": \{"url": …\} in .*settings\.json must be a string; got 123$/.test(e.message));
	assert.throws(() => resolveSettings({ agentDir: agentDir({ mode: ["tree"] }), env: {}, flags: {} }), /"contextd": \{"mode": …\} in .*settings\.json must be a string; got \["tree"\]$/);
	assert.throws(() => resolveSettings({ agentDir: agentDir({ autoStart: "yes" }), env: {}, flags: {} }), /\{"autoStart": …\} .* must be a boolean; got "yes"$/);
	assert.throws(() => resolveSettings({ agentDir: agentDir("tree"), env: {}, flags: {} }), /"contextd" in .*settings\.json must be an object like \{"mode": "tree"\}; got "tree"$/);
	assert.deepEqual(resolveSettings({ agentDir: agentDir({ reminderThresholds: [60] }), env: {}, flags: {} }).reminderThresholds, [60]);
});

test("a key of the contextd object that is not a setting is an error naming it and the setting it is closest to, never dropped", () => {
	const dir = agentDir({ mdoe: "tree" });
	const file = join(dir, "settings.json");
	const all = "use mode, url, stateDir, tokenFile, binary, autoStart, agentName, notesGuard, reminderThresholds or codexSchemaFile";
	assert.throws(() => resolveSettings({ agentDir: dir, env: {}, flags: {} }), { message: `"contextd": {"mdoe": …} in ${file} is not a setting; did you mean "mode"? ${all}` });
	const cased = agentDir({ statedir: "/s" });
	assert.throws(() => resolveSettings({ agentDir: cased, env: {}, flags: {} }), { message: `"contextd": {"statedir": …} in ${join(cased, "settings.json")} is not a setting; did you mean "stateDir"? ${all}` });
	const far = agentDir({ colour: "red" });
	assert.throws(() => resolveSettings({ agentDir: far, env: {}, flags: {} }), { message: `"contextd": {"colour": …} in ${join(far, "settings.json")} is not a setting; ${all}` });
});

test("path settings: a leading ~ or ~/ is the home directory, as Pi reads its own paths; other paths are kept", () => {
	assert.equal(expandHome("~", "/h"), "/h");
	assert.equal(expandHome("~/cd/state", "/h"), "/h/cd/state");
	assert.equal(expandHome("~other/x", "/h"), "~other/x");
	assert.equal(expandHome("/abs/~/x", "/h"), "/abs/~/x");
	assert.equal(expandHome(undefined, "/h"), undefined);
	const dir = agentDir({ stateDir: "~/cdstate", binary: "~/bin/contextd", codexSchemaFile: "~/schema.json" });
	const s = resolveSettings({ agentDir: dir, env: { CONTEXTD_TOKEN_FILE: "~/tok" }, flags: {} });
	assert.deepEqual([s.stateDir, s.tokenFile, s.binary, s.codexSchemaFile], [join(homedir(), "cdstate"), join(homedir(), "tok"), join(homedir(), "bin/contextd"), join(homedir(), "schema.json")]);
	const env = resolveSettings({ agentDir: dir, env: { CONTEXTD_STATE_DIR: "~/envstate" }, flags: {} });
	assert.deepEqual([env.stateDir, env.tokenFile], [join(homedir(), "envstate"), join(homedir(), "envstate", "token")]);
});

test("the command that starts contextd names --state-dir unless the state directory is contextd's default", () => {
	assert.equal(serveCommand("/h/.pi/agent/contextd", "/h"), "contextd serve");
	assert.equal(serveCommand("/srv/cd", "/h"), "contextd serve --state-dir /srv/cd");
	assert.equal(serveCommand("/my dir/it's", "/h"), "contextd serve --state-dir '/my dir/it'\\''s'");
	// An explicit URL's address: contextd listens on 127.0.0.1:7467 unless told.
	assert.equal(serveCommand("/h/.pi/agent/contextd", "/h", "127.0.0.1:7988"), "contextd serve --addr 127.0.0.1:7988");
	assert.equal(serveCommand("/srv/cd", "/h", "[::1]:7470"), "contextd serve --addr [::1]:7470 --state-dir /srv/cd");
});
