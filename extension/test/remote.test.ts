// Remote-mode wire shaping on the Codex transport, against the reserved
// namespace contract of docs/codex-contract.md "Tool surface" (spec shape,
// nullables, encrypted fields, required order), "Results and encryption"
// and "Remote wire shaping" (`<ns> operation completed`).
import assert from "node:assert/strict";
import { test } from "node:test";
import { encryptedOutputs, HISTORY_SPEC, NOTES_SPEC, remoteResult, routerMessage, shapeCodexRequest, specsFromProtocol, truncationPolicy } from "../src/remote.ts";

test("namespace specs: shape, operations, required order, encrypted fields, no bounds", () => {
	assert.equal(HISTORY_SPEC.type, "namespace");
	assert.deepEqual(HISTORY_SPEC.tools.map((t) => t.name), ["list_windows", "list_items", "read_item", "search_contents"]);
	assert.deepEqual(NOTES_SPEC.tools.map((t) => t.name), ["list_files_by_prefix", "read_file", "search_contents", "append_to_file", "write_file"]);
	for (const t of [...HISTORY_SPEC.tools, ...NOTES_SPEC.tools]) {
		assert.equal(t.type, "function");
		assert.equal(t.strict, false);
		const s = JSON.stringify(t.parameters);
		assert.ok(!s.includes("minimum") && !s.includes("maximum") && !s.includes("additionalProperties"), `${t.name}: ${s}`);
		assert.ok(!s.includes('"type":["'), `${t.name}: nullable must be anyOf`);
	}
	const p = (ns: typeof HISTORY_SPEC, op: string) => ns.tools.find((t) => t.name === op)!.parameters as { properties: Record<string, Record<string, unknown>>; required?: string[] };
	assert.deepEqual(p(HISTORY_SPEC, "read_item").required, ["item_id", "window_id"]);
	assert.deepEqual(p(HISTORY_SPEC, "search_contents").required, ["query"]);
	assert.deepEqual(p(NOTES_SPEC, "write_file").required, ["text", "path"]);
	assert.deepEqual(p(NOTES_SPEC, "append_to_file").required, ["text", "path"]);
	assert.deepEqual(p(NOTES_SPEC, "read_file").required, ["path"]);
	assert.deepEqual(p(NOTES_SPEC, "search_contents").required, ["query"]);
	assert.equal(p(HISTORY_SPEC, "list_windows").required, undefined);
	const enc: string[] = [];
	for (const ns of [HISTORY_SPEC, NOTES_SPEC]) {
		for (const t of ns.tools) {
			for (const [k, v] of Object.entries((t.parameters as { properties: Record<string, { encrypted?: boolean }> }).properties)) if (v.encrypted) enc.push(`${ns.name}.${t.name}.${k}`);
		}
	}
	assert.deepEqual(enc, ["history.search_contents.query", "notes.search_contents.query", "notes.append_to_file.text", "notes.write_file.text"]);
	assert.deepEqual(p(HISTORY_SPEC, "list_windows").properties.agent_name.anyOf, [{ type: "string" }, { type: "null" }]);
	assert.deepEqual(Object.keys(p(HISTORY_SPEC, "list_items").properties), ["limit", "recent_first", "tool_namespace", "role", "agent_name", "tool_name", "window_id", "max_chars_per_item"]);
});

test("a namespaced call becomes a router call; other blocks and messages are left alone", () => {
	const msg = {
		role: "assistant",
		content: [
			{ type: "text", text: "looking" },
			{ type: "toolCall", id: "call_1|fc_1", name: "search_contents", namespace: "notes", arguments: { query: "enc:q", max_files: 2 } },
			{ type: "toolCall", id: "call_2|fc_2", name: "new_context", arguments: {} },
			{ type: "toolCall", id: "call_3|fc_3", name: "bogus", namespace: "history", arguments: {} },
		],
	};
	const out = routerMessage(msg)!;
	assert.deepEqual(out.content, [
		{ type: "text", text: "looking" },
		{ type: "toolCall", id: "call_1|fc_1", name: "notes", namespace: "notes", arguments: { action: "search_contents", query: "enc:q", max_files: 2 } },
		{ type: "toolCall", id: "call_2|fc_2", name: "new_context", arguments: {} },
		{ type: "toolCall", id: "call_3|fc_3", name: "bogus", namespace: "history", arguments: {} },
	]);
	assert.equal(routerMessage(out), undefined, "router calls are not rewritten twice");
	assert.equal(routerMessage({ role: "user", content: [] }), undefined);
});

test("encrypted answers: fixed text, ciphertext only in details", () => {
	assert.deepEqual(remoteResult("notes", "write_file", { encrypted_output: "CIPHER" }), {
		text: "notes operation completed",
		details: { namespace: "notes", action: "write_file", encrypted_output: "CIPHER" },
	});
	assert.deepEqual(remoteResult("history", "list_windows", { windows: [] }), { text: '{"windows":[]}', details: { namespace: "history", action: "list_windows" } });
});

test("request shaping: namespace specs in place, namespaced replay, encrypted_content replay", () => {
	const payload = {
		model: "gpt-x",
		tools: [
			{ type: "function", name: "new_context", description: "d", parameters: {}, strict: false },
			{ type: "function", name: "history", description: "router", parameters: {}, strict: false },
			{ type: "function", name: "notes", description: "router", parameters: {}, strict: false },
		],
		input: [
			{ role: "user", content: [{ type: "input_text", text: "hi" }] },
			{ type: "function_call", id: "fc_1", call_id: "call_1", name: "notes", arguments: '{"action":"write_file","text":"enc:t","path":"plan.md"}' },
			{ type: "function_call_output", call_id: "call_1", output: "notes operation completed" },
			{ type: "function_call", id: "fc_2", call_id: "call_2", name: "history", arguments: '{"action":"list_windows"}', namespace: "history" },
			{ type: "function_call_output", call_id: "call_2", output: '{"windows":[]}' },
			{ type: "additional_tools", role: "developer", tools: [{ type: "function", name: "history", description: "router", parameters: {} }] },
		],
	};
	const before = JSON.stringify(payload);
	const out = shapeCodexRequest(payload, encryptedOutputs([
		{ type: "message", message: { role: "toolResult", toolName: "notes", toolCallId: "call_1|fc_1", details: { encrypted_output: "CIPHER-1" } } },
		{ type: "message", message: { role: "toolResult", toolName: "bash", toolCallId: "call_9|fc_9", details: { encrypted_output: "not ours" } } },
	])) as { tools: unknown[]; input: unknown[] };
	assert.equal(JSON.stringify(payload), before, "the input payload is not modified");
	assert.deepEqual(out.tools, [payload.tools[0], HISTORY_SPEC, NOTES_SPEC]);
	assert.deepEqual(out.input, [
		payload.input[0],
		{ type: "function_call", id: "fc_1", call_id: "call_1", name: "write_file", arguments: '{"text":"enc:t","path":"plan.md"}', namespace: "notes" },
		{ type: "function_call_output", call_id: "call_1", output: [{ type: "encrypted_content", encrypted_content: "CIPHER-1" }] },
		{ type: "function_call", id: "fc_2", call_id: "call_2", name: "list_windows", arguments: "{}", namespace: "history" },
		payload.input[4],
		{ type: "additional_tools", role: "developer", tools: [HISTORY_SPEC] },
	]);
});

test("truncation policy: bytes 4000 for thread_hint, tokens 10000 for operations", () => {
	assert.equal(truncationPolicy("thread_hint"), '{"mode":"bytes","limit":4000}');
	assert.equal(truncationPolicy("search_contents"), '{"mode":"tokens","limit":10000}');
});

// A protocol file in the serialized-schema form of docs/codex-contract.md "Tool surface" (keys are endpoints,
// each value names its namespace and operation). The texts below are ours,
// written for this test; a real file carries Codex's own texts, which are sent
// unchanged.
function protocolFile(): Record<string, Record<string, unknown>> {
	const ops: [string, string[]][] = [
		["history", ["list_windows", "list_items", "read_item", "search_contents"]],
		["notes", ["list_files_by_prefix", "read_file", "search_contents", "append_to_file", "write_file"]],
	];
	const out: Record<string, Record<string, unknown>> = {};
	for (const [ns, names] of ops) {
		for (const name of names) {
			out[`alpha/${ns}/v2/${name}`] = {
				namespace: ns,
				namespaceDescription: `NS-${ns} text from the file`,
				name,
				description: `OP-${ns}.${name} text from the file`,
				parameters: { type: "object", properties: { q: { anyOf: [{ type: "string" }, { type: "null" }], description: `P-${name}` } } },
			};
		}
	}
	return out;
}

test("a protocol file's specs are sent unchanged, in the file's order", () => {
	const specs = specsFromProtocol(protocolFile());
	assert.equal(specs.history.description, "NS-history text from the file");
	assert.deepEqual(specs.notes.tools.map((t) => t.name), ["list_files_by_prefix", "read_file", "search_contents", "append_to_file", "write_file"]);
	assert.deepEqual(specs.history.tools[3], {
		type: "function",
		name: "search_contents",
		description: "OP-history.search_contents text from the file",
		strict: false,
		parameters: { type: "object", properties: { q: { anyOf: [{ type: "string" }, { type: "null" }], description: "P-search_contents" } } },
	});
	const body = shapeCodexRequest({ tools: [{ type: "function", name: "history" }, { type: "function", name: "notes" }, { type: "function", name: "read" }] }, new Map(), specs) as { tools: unknown[] };
	assert.deepEqual(body.tools, [specs.history, specs.notes, { type: "function", name: "read" }]);
});

test("a protocol file that is not the nine operations is refused, saying what is wrong", () => {
	const missing = protocolFile();
	delete missing["alpha/notes/v2/write_file"];
	assert.throws(() => specsFromProtocol(missing), { message: "the Codex schema file lacks alpha/notes/v2/write_file" });
	const wrongKey = protocolFile();
	wrongKey["alpha/history/v2/list_windows"].name = "list_items";
	assert.throws(() => specsFromProtocol(wrongKey), { message: "alpha/history/v2/list_windows: the key must be alpha/history/v2/list_items" });
	const unknownNs = protocolFile();
	unknownNs["alpha/history/v2/read_item"].namespace = "memories";
	assert.throws(() => specsFromProtocol(unknownNs), { message: 'alpha/history/v2/read_item: namespace must be "history" or "notes", got "memories"' });
	const twoTexts = protocolFile();
	twoTexts["alpha/notes/v2/read_file"].namespaceDescription = "other";
	assert.throws(() => specsFromProtocol(twoTexts), { message: "alpha/notes/v2/read_file: namespaceDescription differs from the other notes operations" });
	assert.throws(() => specsFromProtocol([]), /JSON object keyed by endpoint/);
});
