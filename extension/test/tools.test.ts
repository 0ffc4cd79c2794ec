// tools.ts: the router tools keep Codex's operation and argument names
// (docs/codex-contract.md): every action is an operation of the namespace
// spec Remote sends and every argument one of its parameters; the arguments
// sent on are the Codex ones.
import assert from "node:assert/strict";
import { test } from "node:test";
import { HISTORY_SPEC, NOTES_SPEC } from "../src/remote.ts";
import { codexArguments, HISTORY_ACTIONS, historyParameters, NEW_CONTEXT_DESCRIPTION, NOTE_WRITES, NOTES_ACTIONS, newContextParameters, notesParameters } from "../src/tools.ts";

const params = (spec: typeof HISTORY_SPEC) => [...new Set(spec.tools.flatMap((t) => Object.keys((t.parameters as { properties: object }).properties)))].sort();

test("history: the actions are the namespace's operations, the arguments its parameters", () => {
	assert.deepEqual([...HISTORY_ACTIONS], HISTORY_SPEC.tools.map((t) => t.name));
	assert.deepEqual((historyParameters.properties.action as { enum?: unknown }).enum, [...HISTORY_ACTIONS]);
	assert.deepEqual(Object.keys(historyParameters.properties).filter((k) => k !== "action").sort(), params(HISTORY_SPEC));
	assert.deepEqual(historyParameters.required, ["action"]);
});

test("notes: the actions are the namespace's operations, the arguments its parameters; two of them write", () => {
	assert.deepEqual([...NOTES_ACTIONS].sort(), NOTES_SPEC.tools.map((t) => t.name).sort());
	assert.deepEqual((notesParameters.properties.action as { enum?: unknown }).enum, [...NOTES_ACTIONS]);
	assert.deepEqual(Object.keys(notesParameters.properties).filter((k) => k !== "action").sort(), params(NOTES_SPEC));
	assert.deepEqual([...NOTE_WRITES].sort(), ["append_to_file", "write_file"]);
});

test("new_context takes no arguments and says it does not touch the environment", () => {
	assert.deepEqual(Object.keys(newContextParameters.properties), []);
	assert.equal((newContextParameters as { additionalProperties?: unknown }).additionalProperties, false);
	assert.equal(NEW_CONTEXT_DESCRIPTION, "Start a new context window. Does not clear, reset, or otherwise affect environment state.");
});

test("codexArguments drops action and undefined fields, keeps null and falsy values", () => {
	assert.deepEqual(codexArguments({ action: "list_items", window_id: null, limit: 0, recent_first: false, role: undefined, query: "" }), {
		window_id: null,
		limit: 0,
		recent_first: false,
		query: "",
	});
});
