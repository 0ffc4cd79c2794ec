// What the model and the person see when contextd refuses a history or
// notes call (src/toolerror.ts): one sentence in tool terms, no HTTP
// status; the field errors the model needs to correct its call, each once.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ContextdError } from "../src/client.ts";
import { toolError } from "../src/toolerror.ts";

test("a refused argument names the tool, the action and each field error once, without the HTTP status", () => {
	// contextd's 422 for history read_item without window_id (api/errors.go).
	const missing = new ContextdError("contextd: Invalid request: body: expected required property window_id to be present.", 422, "invalid", [
		{ location: "body", message: "expected required property window_id to be present" },
	]);
	assert.equal((toolError("history", "read_item", missing) as Error).message, "history read_item cannot use these arguments: expected required property window_id to be present; correct them and call history again");
	const two = new ContextdError("contextd: Invalid request: body.limit: expected number <= 25; body.x: unexpected property.", 422, "invalid", [
		{ location: "body.limit", message: "expected number <= 25" },
		{ location: "body.x", message: "unexpected property" },
	]);
	const e = toolError("history", "list_items", two);
	assert.equal((e as Error).message, "history list_items cannot use these arguments: limit: expected number <= 25; x: unexpected property; correct them and call history again");
	assert.ok(e instanceof ContextdError && e.status === 422 && e.code === "invalid");
});

test("another refusal keeps contextd's sentence, named by the tool and action; other errors pass unchanged", () => {
	const notFound = new ContextdError("contextd: item abc is not in this session", 404, "not_found");
	assert.equal((toolError("history", "read_item", notFound) as Error).message, "history read_item: item abc is not in this session");
	const down = new ContextdError("contextd is not reachable at unix:/s; run `contextd serve` in another terminal", 0);
	assert.equal(toolError("notes", "read", down), down);
	const plain = new Error("boom");
	assert.equal(toolError("notes", "read", plain), plain);
});
