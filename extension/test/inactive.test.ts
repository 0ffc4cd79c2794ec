// The extension when it manages no context: settings that cannot be read
// (an unknown mode) still register /contextd, so "/contextd …" is never
// sent to the model as a prompt, and /contextd mode turns it on.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type TestContext, test } from "node:test";
import contextdExtension from "../src/index.ts";
import { FakeCtx, FakePi } from "./fakepi.ts";

/** Runs the test with CONTEXTD_MODE=mode and a fresh PI_CODING_AGENT_DIR, both put back (and the directory removed) after it. */
function inAgentDir(t: TestContext, mode: string): void {
	const agent = mkdtempSync(join(tmpdir(), "ctxd-inactive-"));
	const saved = { mode: process.env.CONTEXTD_MODE, dir: process.env.PI_CODING_AGENT_DIR };
	t.after(() => {
		for (const [k, v] of [["CONTEXTD_MODE", saved.mode], ["PI_CODING_AGENT_DIR", saved.dir]] as const) {
			if (v === undefined) delete process.env[k];
			else process.env[k] = v;
		}
		rmSync(agent, { recursive: true, force: true });
	});
	process.env.PI_CODING_AGENT_DIR = agent;
	process.env.CONTEXTD_MODE = mode;
}

test("an unknown mode: /contextd is still the extension's, says what is wrong and switches the mode", async (t) => {
	inAgentDir(t, "weird");
	const pi = new FakePi();
	contextdExtension(pi.api);
	assert.deepEqual([pi.events(), pi.tools.length, [...pi.commands.keys()]], [["session_start"], 0, ["contextd"]]);
	// The session's window and notice cards are still drawn as cards.
	assert.deepEqual(pi.renderers, ["codex-context-window", "codex-context-notice"]);
	const ctx = new FakeCtx();
	await pi.emit("session_start", { reason: "startup" }, ctx);
	await pi.commands.get("contextd")?.("", ctx.ctx);
	await pi.commands.get("contextd")?.("log", ctx.ctx);
	await pi.commands.get("contextd")?.("mode local", ctx.ctx);
	const error = 'contextd: unknown mode "weird"; use off, local, tree or remote';
	const turnOn = "/contextd mode local (or tree, remote) turns context management on in this Pi";
	assert.deepEqual(ctx.notices, [
		`error: ${error}; the extension is inactive`,
		`info: contextd mode: unknown (the settings could not be read)\n${error}; the extension is inactive; ${turnOn}`,
		`info: ${error}; the extension is inactive: /contextd log needs local or tree mode; ${turnOn}`,
		'info: contextd mode: local in this Pi process (CONTEXTD_MODE, or "contextd": {"mode": …} in settings.json, makes it lasting)',
	]);
	assert.equal(process.env.CONTEXTD_MODE, "local");
	assert.equal(ctx.reloads, 1);
});

test("off mode: no tools, no hooks, /contextd only, and the window and notice cards still drawn as cards", async (t) => {
	inAgentDir(t, "off");
	const pi = new FakePi();
	contextdExtension(pi.api);
	assert.deepEqual([pi.events(), pi.tools.length, [...pi.commands.keys()], pi.renderers], [[], 0, ["contextd"], ["codex-context-window", "codex-context-notice"]]);
});
