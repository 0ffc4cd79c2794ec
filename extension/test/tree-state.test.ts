// The Tree reducer (tree-state.ts) over the event orders of both Pis
// (docs/pi-facts.md "Settled phase and input"): Pi 0.85 fires input at once
// and may start the boundary's run before the settled handler returns;
// Pi 1.6 defers the user's prompt and the boundary's run until the settled
// handlers returned, in arrival order.
import assert from "node:assert/strict";
import { test } from "node:test";
import { HELD_NOTICE } from "../src/input_hold.ts";
import { HOLD_LIMIT_MS, initialTreeState, type TreeAction, type TreeEvent, type TreeState, treeStep } from "../src/tree-state.ts";

/** Runs events from s; returns the final state and every action, in order. */
function run(events: TreeEvent[], s: TreeState = initialTreeState()): { state: TreeState; actions: TreeAction[] } {
	const actions: TreeAction[] = [];
	for (const e of events) {
		const r = treeStep(s, e);
		s = r.state;
		actions.push(...r.actions);
	}
	return { state: s, actions };
}

const typed = { type: "input", source: "rpc", text: "typed during summary" } as const;
const planned = { type: "planned", rolloverId: "r1" } as const;

test("without a planned rollover agent_settled does nothing and input passes", () => {
	assert.deepEqual(run([{ type: "settled" }, typed, { type: "agent_start" }]).actions, [{ type: "input", action: "continue" }]);
});

test("Pi 0.85: input during the settled phase is held; the boundary's run starts before the phase returns; delivered when it returns", () => {
	const r = run([planned, { type: "settled" }, typed, { type: "agent_start" }, { type: "rolled", rolloverId: "r1", outcome: "completed" }]);
	assert.deepEqual(r.actions, [
		{ type: "settle", rolloverId: "r1" },
		{ type: "notify", message: HELD_NOTICE },
		{ type: "input", action: "handled" },
		{ type: "deliver", inputs: [{ text: "typed during summary", images: undefined }] },
	]);
	assert.equal(r.state.rolling, false);
	assert.equal(r.state.pending, undefined);
	assert.deepEqual(r.state.held, []);
});

test("Pi 1.6: the phase returns first (timer armed); the deferred prompt is held; delivered at the boundary's agent_start", () => {
	const r = run([planned, { type: "settled" }, { type: "rolled", rolloverId: "r1", outcome: "completed" }, typed, { type: "agent_start" }]);
	assert.deepEqual(r.actions, [
		{ type: "settle", rolloverId: "r1" },
		{ type: "timer", ms: HOLD_LIMIT_MS, generation: 1 },
		{ type: "notify", message: HELD_NOTICE },
		{ type: "input", action: "handled" },
		{ type: "deliver", inputs: [{ text: "typed during summary", images: undefined }] },
	]);
	assert.equal(HOLD_LIMIT_MS, 10_000);
	assert.equal(r.state.rolling, false);
});

test("Pi 1.6 with the boundary's run before the deferred prompt: nothing held, the prompt passes", () => {
	const r = run([planned, { type: "settled" }, { type: "rolled", rolloverId: "r1", outcome: "completed" }, { type: "agent_start" }, typed]);
	assert.deepEqual(r.actions, [
		{ type: "settle", rolloverId: "r1" },
		{ type: "timer", ms: HOLD_LIMIT_MS, generation: 1 },
		{ type: "input", action: "continue" },
	]);
});

test("the extension's own messages are never held", () => {
	const r = run([planned, { type: "settled" }, { type: "input", source: "extension", text: "/contextd --capture-command-context" }]);
	assert.deepEqual(r.actions.at(-1), { type: "input", action: "continue" });
	assert.deepEqual(r.state.held, []);
});

test("a failed rollover starts no run: held input (with images) is delivered at once", () => {
	const img = { type: "image", data: "AA==", mimeType: "image/png" };
	const r = run([planned, { type: "settled" }, { type: "input", source: "interactive", text: "a", images: [img] }, typed, { type: "rolled", rolloverId: "r1", outcome: "failed" }]);
	assert.deepEqual(r.actions.at(-1), {
		type: "deliver",
		inputs: [
			{ text: "a", images: [img] },
			{ text: "typed during summary", images: undefined },
		],
	});
	assert.equal(r.state.pending, undefined);
});

test("a deferred rollover stays pending and settles again at the next agent_settled", () => {
	const r = run([planned, { type: "settled" }, typed, { type: "rolled", rolloverId: "r1", outcome: "deferred" }]);
	assert.equal(r.state.pending, "r1");
	assert.equal(r.state.rolling, false);
	assert.deepEqual(r.actions.at(-1), { type: "deliver", inputs: [{ text: "typed during summary", images: undefined }] });
	assert.deepEqual(treeStep(r.state, { type: "settled" }).actions, [{ type: "settle", rolloverId: "r1" }]);
});

test("a deferred rollover does not replace one planned meanwhile", () => {
	const r = run([planned, { type: "settled" }, { type: "planned", rolloverId: "r2" }, { type: "rolled", rolloverId: "r1", outcome: "deferred" }]);
	assert.equal(r.state.pending, "r2");
});

test("the hold limit releases a completed rollover whose run never starts; a timer of an earlier phase releases nothing", () => {
	const first = run([planned, { type: "settled" }, { type: "rolled", rolloverId: "r1", outcome: "completed" }, { type: "agent_start" }]);
	const second = run([{ type: "planned", rolloverId: "r2" }, { type: "settled" }, { type: "rolled", rolloverId: "r2", outcome: "completed" }, typed], first.state);
	assert.equal(second.state.generation, 2);
	assert.deepEqual(treeStep(second.state, { type: "timeout", generation: 1 }).actions, []);
	const r = treeStep(second.state, { type: "timeout", generation: 2 });
	assert.deepEqual(r.actions, [{ type: "deliver", inputs: [{ text: "typed during summary", images: undefined }] }]);
	assert.equal(r.state.rolling, false);
});

test("agent_start outside a rollover changes nothing", () => {
	const s = initialTreeState();
	assert.deepEqual(treeStep(s, { type: "agent_start" }), { state: s, actions: [] });
});

test("input from the message that calls new_context on is held, another extension's steer too, and delivered after the boundary's run starts", () => {
	const steer = { type: "input", source: "extension", text: "STEER: rename the flag" } as const;
	const r = run([{ type: "called" }, steer, planned, { type: "turn_end" }, { type: "settled" }, { type: "rolled", rolloverId: "r1", outcome: "completed" }, { type: "agent_start" }]);
	assert.deepEqual(r.actions, [
		{ type: "notify", message: HELD_NOTICE },
		{ type: "input", action: "handled" },
		{ type: "settle", rolloverId: "r1" },
		{ type: "timer", ms: HOLD_LIMIT_MS, generation: 1 },
		{ type: "deliver", inputs: [{ text: "STEER: rename the flag", images: undefined }] },
	]);
	assert.equal(r.state.holding, false);
});

test("a batch that calls new_context without a rollover (refused) delivers what was held at its turn_end", () => {
	const r = run([{ type: "called" }, typed, { type: "turn_end" }, typed]);
	assert.deepEqual(r.actions, [
		{ type: "notify", message: HELD_NOTICE },
		{ type: "input", action: "handled" },
		{ type: "deliver", inputs: [{ text: "typed during summary", images: undefined }] },
		{ type: "input", action: "continue" },
	]);
});
