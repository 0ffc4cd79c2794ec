// Unit tests of the commands refused during a Tree summary
// (summary_commands.ts): which editor texts are refused, and what the
// submit key does with them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { catchSummaryCommands, COMPACT_WAITS, summaryRefusal, TREE_WAITS } from "../src/summary_commands.ts";
import { FakeCtx } from "./fakepi.ts";

test("summaryRefusal: /tree and /compact (with or without instructions, trimmed as Pi trims) are refused; other commands and text pass", () => {
	assert.equal(summaryRefusal("/tree"), TREE_WAITS);
	assert.equal(summaryRefusal("  /tree \n"), TREE_WAITS);
	assert.equal(summaryRefusal("/compact"), COMPACT_WAITS);
	assert.equal(summaryRefusal("/compact keep the port"), COMPACT_WAITS);
	for (const t of ["/treehouse", "/compacted", "/new", "/fork", "/reload", "/contextd", "compact the tree", ""]) {
		assert.equal(summaryRefusal(t), undefined, t);
	}
});

test("catchSummaryCommands: Enter on /compact is consumed, the editor emptied and the sentence told; Enter on other text, other keys and releases pass; stop() unsubscribes", () => {
	const c = new FakeCtx();
	const told: string[] = [];
	const stop = catchSummaryCommands(c.ctx, (m) => told.push(m));
	c.editor = "/compact";
	assert.deepEqual(c.press("x"), [undefined]);
	assert.deepEqual(c.press("\x1b[13;1:3u"), [undefined], "a kitty Enter release passes");
	assert.deepEqual(told, []);
	assert.deepEqual(c.press("\r"), [{ consume: true }]);
	assert.equal(c.editor, "");
	assert.deepEqual(told, [COMPACT_WAITS]);
	c.editor = "/tree";
	assert.deepEqual(c.press("\x1b[13u"), [{ consume: true }], "kitty Enter press");
	assert.deepEqual(told, [COMPACT_WAITS, TREE_WAITS]);
	c.editor = "hello";
	assert.deepEqual(c.press("\r"), [undefined]);
	assert.equal(c.editor, "hello");
	stop();
	assert.equal(c.terminalInput.size, 0);
});

test("catchSummaryCommands without a UI catches nothing", () => {
	const c = new FakeCtx();
	catchSummaryCommands({ ...c.ctx, hasUI: false }, () => assert.fail("no UI, nothing told"))();
	assert.equal(c.terminalInput.size, 0);
});
