// notify: Pi's UI when there is one (TUI, RPC), else one stderr line
// (print and JSON modes bind no UI: ctx.hasUI is false, notify a no-op).
import assert from "node:assert/strict";
import { test } from "node:test";
import { notify, prefixed } from "../src/notify.ts";

test("with a UI the message goes to ctx.ui.notify with its level, not to stderr", () => {
	const shown: [string, string | undefined][] = [];
	const written: string[] = [];
	notify({ hasUI: true, ui: { notify: (m: string, l?: string) => shown.push([m, l]) } as never }, "contextd: down", "error", { write: (s: string) => written.push(s) });
	assert.deepEqual(shown, [["contextd: down", "error"]]);
	assert.deepEqual(written, []);
});

test("without a UI the message is one stderr line and ctx.ui is not used", () => {
	const written: string[] = [];
	const ui = new Proxy({}, { get: () => assert.fail("ctx.ui used without a UI") });
	notify({ hasUI: false, ui: ui as never }, "contextd: contextd is not reachable at http://127.0.0.1:1; run `contextd serve`", "error", { write: (s: string) => written.push(s) });
	assert.deepEqual(written, ["contextd: contextd is not reachable at http://127.0.0.1:1; run `contextd serve`\n"]);
});

test("prefixed: one contextd at the start of a line, never two", () => {
	assert.equal(prefixed("contextd is not running for the state directory /s; run `contextd serve`"), "contextd is not running for the state directory /s; run `contextd serve`");
	assert.equal(prefixed("contextd: boom"), "contextd: boom");
	assert.equal(prefixed("the session file is gone"), "contextd: the session file is gone");
	assert.equal(prefixed("contextdx is a word"), "contextd: contextdx is a word");
});
