// Unit tests of the input hold during a rollover (input_hold.ts; docs/design.md
// docs/design.md §5.3.1 "Input waits for the new window").
import assert from "node:assert/strict";
import { test } from "node:test";
import { callsNewContext, emptyHold, HELD_NOTICE, onInput, releaseHold, startHold } from "../src/input_hold.ts";

test("callsNewContext: only an assistant message with a new_context toolCall", () => {
	assert.equal(callsNewContext({ role: "assistant", content: [{ type: "toolCall", name: "notes" }, { type: "toolCall", name: "new_context" }] }), true);
	assert.equal(callsNewContext({ role: "assistant", content: [{ type: "toolCall", name: "notes" }] }), false);
	assert.equal(callsNewContext({ role: "assistant", content: [{ type: "text", text: "new_context" }] }), false);
	assert.equal(callsNewContext({ role: "user", content: "new_context" }), false);
	assert.equal(callsNewContext({ role: "toolResult", content: [{ type: "toolCall", name: "new_context" }] }), false);
});

test("input passes while nothing is held", () => {
	const d = onInput(emptyHold, { text: "hi", source: "interactive" });
	assert.equal(d.action, "continue");
	assert.equal(d.notice, undefined);
	assert.deepEqual(d.hold, emptyHold);
});

test("while holding: input is held in order, the person is told once, release keeps each delivery", () => {
	let h = startHold(emptyHold);
	const a = onInput(h, { text: "steer me", source: "rpc", streamingBehavior: "steer" });
	assert.equal(a.action, "handled");
	assert.equal(a.notice, HELD_NOTICE);
	h = a.hold;
	const b = onInput(h, { text: "after that", source: "interactive", streamingBehavior: "followUp", images: [{ type: "image" }] });
	assert.equal(b.action, "handled");
	assert.equal(b.notice, undefined);
	h = b.hold;
	const c = onInput(h, { text: "a prompt while the summary runs", source: "interactive" });
	h = c.hold;
	const r = releaseHold(h);
	assert.deepEqual(r.send, [
		{ text: "steer me", deliverAs: "steer" },
		{ text: "after that", deliverAs: "followUp", images: [{ type: "image" }] },
		{ text: "a prompt while the summary runs", deliverAs: "followUp" },
	]);
	assert.equal(r.hold.holding, false);
	assert.deepEqual(r.hold.held, []);
	// The re-queued texts pass once each (they come back as extension input).
	let d = onInput(startHold(r.hold), { text: "steer me", source: "extension" });
	assert.equal(d.action, "continue");
	d = onInput(d.hold, { text: "steer me", source: "extension" });
	assert.equal(d.action, "handled", "a second identical extension input is someone else's");
});

test("release with a delivery overrides each one (Tree: follow-ups after the boundary's run started)", () => {
	let h = startHold(emptyHold);
	h = onInput(h, { text: "x", source: "rpc", streamingBehavior: "steer" }).hold;
	assert.deepEqual(releaseHold(h, "followUp").send, [{ text: "x", deliverAs: "followUp" }]);
});

test("startHold keeps an ongoing hold and its held input", () => {
	let h = startHold(emptyHold);
	h = onInput(h, { text: "x", source: "rpc", streamingBehavior: "steer" }).hold;
	assert.equal(startHold(h), h);
});
