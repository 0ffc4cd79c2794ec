// Unit tests of Escape during a Tree summary (escape.ts): which call stops
// the summary on each Pi, and which terminal input is caught.
import assert from "node:assert/strict";
import { test } from "node:test";
import { catchEscape, summaryStop } from "../src/escape.ts";
import { FakeCtx } from "./fakepi.ts";

test("summaryStop: ctx.compact() below Pi 0.86.0 (its TUI abort handler leaves the summary running), ctx.abort() from 0.86.0 on", () => {
	assert.equal(summaryStop("0.85.1"), "compact");
	assert.equal(summaryStop("0.85.0"), "compact");
	assert.equal(summaryStop("0.86.0"), "abort");
	assert.equal(summaryStop("0.87.0"), "abort");
	assert.equal(summaryStop("1.6.0"), "abort");
	assert.equal(summaryStop("unknown"), "abort");
});

test("catchEscape: the first Escape press calls onEscape once, every Escape press is consumed, a release and other keys pass; stop() unsubscribes", () => {
	const c = new FakeCtx();
	let calls = 0;
	const stop = catchEscape(c.ctx, () => calls++);
	assert.deepEqual(c.press("a"), [undefined]);
	assert.deepEqual(c.press("\x1b[27;1:3u"), [undefined], "a kitty key release passes");
	assert.equal(calls, 0);
	assert.deepEqual(c.press("\x1b"), [{ consume: true }]);
	assert.deepEqual(c.press("\x1b[27u"), [{ consume: true }], "kitty Escape press");
	assert.equal(calls, 1);
	stop();
	assert.equal(c.terminalInput.size, 0);
});

test("catchEscape without a UI catches nothing", () => {
	const c = new FakeCtx();
	const ctx = { ...c.ctx, hasUI: false };
	catchEscape(ctx, () => assert.fail("no UI, no Escape"))();
	assert.equal(c.terminalInput.size, 0);
});
