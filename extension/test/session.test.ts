// Per-session state (session.ts): one state per session_start, dropped at
// shutdown or replacement; a handler of a replaced session is told so.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ContextdError } from "../src/client.ts";
import { NOT_CONNECTED, SessionSlot } from "../src/session.ts";
import { FakeCtx } from "./fakepi.ts";

test("start creates the state of ctx's session; a second start replaces and ends the first", () => {
	const said: string[] = [];
	const slot = new SessionSlot((_c, m) => said.push(m));
	const a = slot.start(new FakeCtx("a", "/f/a.jsonl").ctx);
	assert.equal(a.id, "a");
	assert.equal(a.file, "/f/a.jsonl");
	assert.deepEqual(a.params, { session_id: "a" });
	assert.equal(slot.live(a, undefined, "x"), true);
	const b = slot.start(new FakeCtx("b/c", null).ctx);
	assert.deepEqual(b.params, { session_id: "b/c" });
	assert.equal(a.ended, true);
	assert.equal(slot.current, b);
	assert.equal(slot.live(a, undefined, "the rollover"), false);
	assert.deepEqual(said, ["contextd: the rollover skipped: session a ended or was replaced meanwhile"]);
});

test("end drops the state; require then throws the not-connected sentence", () => {
	const slot = new SessionSlot(() => {});
	assert.throws(() => slot.require(), (e: unknown) => e instanceof ContextdError && e.message === NOT_CONNECTED);
	const s = slot.start(new FakeCtx().ctx);
	assert.equal(slot.require(), s);
	slot.end();
	assert.equal(slot.current, undefined);
	assert.equal(s.ended, true);
	assert.throws(() => slot.require(), ContextdError);
});

test("need throws why there is no client", () => {
	const s = new SessionSlot(() => {}).start(new FakeCtx().ctx);
	assert.throws(() => s.need(), { message: "contextd is not connected yet" });
	s.unavailable = "contextd is not reachable at http://x; run `contextd serve`";
	assert.throws(() => s.need(), { message: "contextd is not reachable at http://x; run `contextd serve`" });
});
