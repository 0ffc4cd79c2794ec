// Remote mode on the Codex transport: the wire shape of Codex's reserved
// `history` and `notes` namespaces (docs/codex-contract.md "Tool surface",
// "Results and encryption", "Remote wire shaping").
//
// Pi registers tools by flat name and looks a model's tool call up by name
// only, while Codex declares each namespace as one `namespace` tool whose
// children share names across namespaces (`search_contents` is in both).
// So Pi keeps the flat `history` and `notes` router tools (an `action`
// argument selects the operation) and this module translates at the two
// edges of a model call:
//   - outgoing (before_provider_request): the router tool specs become the
//     namespace specs, replayed router calls become namespaced
//     `function_call` items, and outputs the backend returned encrypted are
//     replayed as `encrypted_content` items (docs/codex-contract.md "Results and encryption", "Remote wire shaping");
//   - incoming (message_end): a namespaced call from the model becomes a
//     router call before Pi looks its tool up.
// Nothing here decrypts: ciphertext goes from the backend's answer into the
// tool result's details and from there into the next request.

/** The pi-ai API of the openai-codex provider (the Codex Responses transport). */
export const CODEX_API = "openai-codex-responses";

/** The Codex namespace of the history operations. */
export const HISTORY_NAMESPACE = "history";
/** The Codex namespace of the notes operations. */
export const NOTES_NAMESPACE = "notes";

/** Is this model on the Codex transport? Remote mode works only there (docs/codex-contract.md "Modes", "Remote wire shaping": no fallback). */
export function isCodexTransport(model: { api?: string; provider?: string } | undefined): boolean {
	return model?.api === CODEX_API;
}

// ---- namespace tool specs (docs/codex-contract.md "Tool surface") ----------------------------------------
//
// Serialized form of codex-rs 0.154.0-alpha.3 as docs/codex-contract.md describes it:
// nullables are anyOf [{type: X}, {type: null}], no minimum/maximum, no
// additionalProperties, `encrypted: true` on the four encrypted fields,
// properties and `required` in the serialized order. The descriptions are
// paraphrases; the backend validates reserved schemas
// byte-for-byte, so byte-exact text has to come from the pinned protocol
// file cited in docs/codex-contract.md "Tool surface": the `codexSchemaFile` setting (CONTEXTD_CODEX_SCHEMA)
// names such a file and specsFromProtocol reads it.

type Schema = Record<string, unknown>;
const str = (description: string): Schema => ({ type: "string", description });
const int = (description: string): Schema => ({ type: "integer", description });
const bool = (description: string): Schema => ({ type: "boolean", description });
const nullable = (type: string, description: string, extra: Schema = {}): Schema => ({ anyOf: [{ type, ...extra }, { type: "null" }], description });
const encrypted = (description: string): Schema => ({ type: "string", encrypted: true, description });
const object = (properties: Record<string, Schema>, required?: string[]): Schema => ({
	type: "object",
	properties,
	...(required ? { required } : {}),
});

const agentName = nullable("string", "Agent whose history to read: omit for the current agent, else an absolute name or one relative to the current agent.");
const role = nullable("string", "Only items of this role; null or omitted includes every role.", { enum: ["user", "assistant", "tool", "system", "developer"] });
const toolNamespace = nullable("string", "Only tool items of this namespace; when set, non-tool messages are excluded.");
const toolName = nullable("string", "Only tool items of this tool; when set, non-tool messages are excluded.");
const windowFilter = nullable("string", "Full window ID; null or omitted includes every window.");

/** One child of a namespace spec. */
export interface NamespaceFunction {
	type: "function";
	name: string;
	description: string;
	strict: false;
	parameters: Schema;
}

/** A Responses `namespace` tool (docs/codex-contract.md "Tool surface"). */
export interface NamespaceSpec {
	type: "namespace";
	name: string;
	description: string;
	tools: NamespaceFunction[];
}

const fn = (name: string, description: string, parameters: Schema): NamespaceFunction => ({ type: "function", name, description, strict: false, parameters });

/** docs/codex-contract.md "Tool surface". */
export const HISTORY_SPEC: NamespaceSpec = {
	type: "namespace",
	name: HISTORY_NAMESPACE,
	description:
		"Recover prior conversation after a context-window reset, using agent names and the opaque window and item IDs these tools return. Pass returned IDs unchanged. Items are ordered by persisted ordinal, then creation time; an unknown window gives no matches. The current agent is the default; absolute or relative agent names select another agent. History is read-only and eventually consistent (a few seconds). This is private model-only state: use it silently and never disclose the tool, its use or its contents to the user.",
	tools: [
		fn(
			"list_windows",
			"List an agent's context windows as window ID and item-count pairs. Private, model-only.",
			object({ limit: int("Maximum windows returned."), agent_name: agentName, recent_first: bool("Newest windows first.") }),
		),
		fn(
			"list_items",
			"List history items, optionally filtered by window, role and tool. Private, model-only.",
			object({
				limit: int("Maximum items returned."),
				recent_first: bool("Newest items first."),
				tool_namespace: toolNamespace,
				role,
				agent_name: agentName,
				tool_name: toolName,
				window_id: windowFilter,
				max_chars_per_item: int("Cap on each item's truncated_content, in characters."),
			}),
		),
		fn(
			"read_item",
			"Read a bounded character range of one history item. Private, model-only.",
			object(
				{
					agent_name: agentName,
					item_id: str("The item ID: the suffix shown in the item's trailing [id: ...] marker."),
					offset_chars: int("Zero-based character offset where reading starts."),
					limit_chars: int("Maximum characters returned."),
					window_id: str("Full ID of the window that contains the item."),
				},
				["item_id", "window_id"],
			),
		),
		fn(
			"search_contents",
			"Search history by case-sensitive literal substring. Private, model-only.",
			object(
				{
					limit: int("Maximum matching items returned."),
					query: encrypted("Case-sensitive literal substring to find."),
					recent_first: bool("Newest matches first."),
					tool_namespace: toolNamespace,
					role,
					agent_name: agentName,
					tool_name: toolName,
					window_id: windowFilter,
				},
				["query"],
			),
		),
	],
};

/** docs/codex-contract.md "Tool surface". */
export const NOTES_SPEC: NamespaceSpec = {
	type: "namespace",
	name: NOTES_NAMESPACE,
	description:
		"Private notes that survive context-window transitions within this rollout. Paths are virtual: a relative file path resolves under the current agent's <agent_name>/notes; cross-agent paths must be absolute, <agent_name>/notes[/<path>]. Reads, listings, searches and writes may access other agents' notes. File operations require path; prefix arguments may be omitted. Empty, . and .. components are unsupported and ~ is literal. Reads reflect successful writes immediately; listings and searches are eventually consistent. Each file must stay at or below 1,000,000 UTF-8 bytes. This is private model-only state: use it silently and never disclose the tool, its use or its contents to the user.",
	tools: [
		fn(
			"list_files_by_prefix",
			"List note files by path prefix. Private, model-only.",
			object({
				prefix: nullable("string", "Note path prefix."),
				max_results: int("Maximum files returned."),
				file_order_by: { type: "string", enum: ["name", "created_at", "updated_at"], description: "Sort key." },
				file_order: { type: "string", enum: ["ascending", "descending"], description: "Sort direction." },
			}),
		),
		fn(
			"read_file",
			"Read a note file, whole or a line range. Private, model-only.",
			object(
				{
					path: str("Note file path."),
					start_line: nullable("integer", "First line, inclusive, 1-based; negative counts from the end."),
					stop_line: nullable("integer", "Last line, inclusive, 1-based; negative counts from the end."),
				},
				["path"],
			),
		),
		fn(
			"search_contents",
			"Search note lines by case-sensitive literal substring. Private, model-only.",
			object(
				{
					max_matches_per_file: int("Maximum matching lines per file."),
					query: encrypted("Case-sensitive literal, matched per line."),
					recent_file_first: bool("Order files by creation time, newest first."),
					max_files: int("Maximum files returned."),
					path_prefix: nullable("string", "Only files under this prefix."),
				},
				["query"],
			),
		),
		fn("append_to_file", "Append text to a note file exactly as given. Private, model-only.", object({ text: encrypted("Text appended exactly as given."), path: str("Note file path.") }, ["text", "path"])),
		fn("write_file", "Replace a note file's whole content. Private, model-only.", object({ text: encrypted("The full new content."), path: str("Note file path.") }, ["text", "path"])),
	],
};

/** The built-in namespace specs, by namespace name. */
export const NAMESPACE_SPECS: Record<string, NamespaceSpec> = { [HISTORY_NAMESPACE]: HISTORY_SPEC, [NOTES_NAMESPACE]: NOTES_SPEC };

/** The namespace specs a request is shaped with: the built-in ones, or those of a protocol file. */
export type NamespaceSpecs = Readonly<Record<string, NamespaceSpec>>;

/**
 * The namespace specs of a serialized-schema protocol file, the form the
 * docs/codex-contract.md "Tool surface" cites for byte-exact schemas (codex-rs 0.154.0-alpha.3
 * serialized in oh-my-pi PR #11043,
 * https://github.com/can1357/oh-my-pi/blob/a31b571d/packages/coding-agent/src/tools/codex-history-notes.protocol.json): one JSON
 * object keyed by endpoint ("alpha/history/v2/list_windows", …), each value
 * {namespace, namespaceDescription, name, description, parameters}. The
 * file's own text is used unchanged (descriptions, property order, anyOf
 * nullables, `encrypted` flags); children keep the file's order. The file
 * must describe exactly the nine operations of docs/codex-contract.md "Tool surface", each under its own
 * endpoint, with one description per namespace; anything else is an error
 * that says what is wrong (Remote mode then refuses rather than sending
 * other schemas: docs/codex-contract.md "Remote wire shaping", no fallback).
 */
export function specsFromProtocol(protocol: unknown): NamespaceSpecs {
	if (!protocol || typeof protocol !== "object" || Array.isArray(protocol)) {
		throw new Error("the Codex schema file must be a JSON object keyed by endpoint (alpha/<namespace>/v2/<operation>)");
	}
	const out: Record<string, NamespaceSpec> = {};
	for (const [endpoint, raw] of Object.entries(protocol as Record<string, unknown>)) {
		const v = raw as { namespace?: unknown; namespaceDescription?: unknown; name?: unknown; description?: unknown; parameters?: unknown };
		const ns = typeof v?.namespace === "string" ? v.namespace : "";
		if (!(ns in NAMESPACE_SPECS)) throw new Error(`${endpoint}: namespace must be "history" or "notes", got ${JSON.stringify(v?.namespace)}`);
		if (typeof v.name !== "string" || !operationsOf(ns).includes(v.name)) throw new Error(`${endpoint}: "${String(v.name)}" is not an operation of namespace ${ns}`);
		if (endpoint !== `alpha/${ns}/v2/${v.name}`) throw new Error(`${endpoint}: the key must be alpha/${ns}/v2/${v.name}`);
		if (typeof v.namespaceDescription !== "string" || typeof v.description !== "string") throw new Error(`${endpoint}: namespaceDescription and description must be strings`);
		if (!v.parameters || typeof v.parameters !== "object" || Array.isArray(v.parameters)) throw new Error(`${endpoint}: parameters must be a JSON schema object`);
		const spec = (out[ns] ??= { type: "namespace", name: ns, description: v.namespaceDescription, tools: [] });
		if (spec.description !== v.namespaceDescription) throw new Error(`${endpoint}: namespaceDescription differs from the other ${ns} operations`);
		if (spec.tools.some((t) => t.name === v.name)) throw new Error(`${endpoint}: operation listed twice`);
		spec.tools.push(fn(v.name, v.description, v.parameters as Schema));
	}
	for (const ns of Object.keys(NAMESPACE_SPECS)) {
		const have = new Set(out[ns]?.tools.map((t) => t.name) ?? []);
		const missing = operationsOf(ns).filter((op) => !have.has(op));
		if (missing.length > 0) throw new Error(`the Codex schema file lacks ${missing.map((op) => `alpha/${ns}/v2/${op}`).join(", ")}`);
	}
	return out;
}

const operationsOf = (ns: string): string[] => NAMESPACE_SPECS[ns]?.tools.map((t) => t.name) ?? [];

// ---- incoming: namespaced call → router call ------------------------------

interface ToolCallBlock {
	type: "toolCall";
	name: string;
	arguments: Record<string, unknown>;
	namespace?: string;
	[k: string]: unknown;
}

/**
 * The router form of a namespaced call (docs/codex-contract.md "Tool surface"): a
 * toolCall {namespace: "history", name: "search_contents", arguments}
 * becomes {name: "history", arguments: {action: "search_contents",
 * ...arguments}}, namespace kept. Undefined for any other block.
 */
export function routerCall(block: unknown): ToolCallBlock | undefined {
	const b = block as ToolCallBlock;
	if (!b || b.type !== "toolCall" || typeof b.namespace !== "string" || !(b.namespace in NAMESPACE_SPECS)) return undefined;
	if (b.name === b.namespace) return undefined; // already a router call
	if (!operationsOf(b.namespace).includes(b.name)) return undefined;
	return { ...b, name: b.namespace, arguments: { action: b.name, ...(b.arguments ?? {}) } };
}

/**
 * The assistant message with its namespaced history/notes calls in router
 * form, or undefined when it has none (message_end handler result).
 */
export function routerMessage<M extends { role: string; content?: unknown }>(message: M): M | undefined {
	if (message.role !== "assistant" || !Array.isArray(message.content)) return undefined;
	let changed = false;
	const content = message.content.map((b: unknown) => {
		const r = routerCall(b);
		if (r) changed = true;
		return r ?? b;
	});
	return changed ? { ...message, content } : undefined;
}

// ---- backend call headers ----------------------------------------------------

/** The output truncation header of Codex's backend calls (docs/codex-contract.md "Backend transport"). */
export const TRUNCATION_HEADER = "x-openai-tool-output-truncation-policy";

/**
 * The truncation policy JSON a backend call sends (docs/codex-contract.md "Backend transport", "Remote wire shaping"; serde
 * tag "mode", content "limit"): {"mode":"bytes","limit":4000} for
 * thread_hint (the hint's 4,000-byte cap), {"mode":"tokens","limit":10000}
 * for every tool operation (the seed's value and the older Codex cap).
 */
export function truncationPolicy(operation: string): string {
	return operation === "thread_hint" ? '{"mode":"bytes","limit":4000}' : '{"mode":"tokens","limit":10000}';
}

// ---- results ----------------------------------------------------------------

/** What a Remote tool returns: the model-visible text and the details Pi stores. */
export interface RemoteResult {
	text: string;
	details: { namespace: string; action: string; encrypted_output?: string };
}

/**
 * The tool result of a backend answer (docs/codex-contract.md "Results and encryption", "Remote wire shaping"). With `encrypted_output`
 * the text is the seed's fixed `<ns> operation completed` and the
 * ciphertext stays in details (never shown as local text; the next request
 * replays it as `encrypted_content`); otherwise the JSON text of the answer.
 */
export function remoteResult(namespace: string, action: string, answer: Record<string, unknown>): RemoteResult {
	if (typeof answer.encrypted_output === "string") {
		return { text: `${namespace} operation completed`, details: { namespace, action, encrypted_output: answer.encrypted_output } };
	}
	return { text: JSON.stringify(answer), details: { namespace, action } };
}

/**
 * call_id → ciphertext of every Remote tool result on the branch whose
 * details hold `encrypted_output`. The key is the Responses call_id, the
 * part of Pi's toolCallId before "|" (pi-ai joins call_id|item_id).
 */
export function encryptedOutputs(entries: readonly unknown[]): Map<string, string> {
	const out = new Map<string, string>();
	for (const e of entries as { type?: string; message?: { role?: string; toolName?: string; toolCallId?: string; details?: { encrypted_output?: unknown } } }[]) {
		const m = e?.type === "message" ? e.message : undefined;
		if (!m || m.role !== "toolResult" || !m.toolName || !(m.toolName in NAMESPACE_SPECS)) continue;
		const c = m.details?.encrypted_output;
		if (typeof c === "string" && typeof m.toolCallId === "string") out.set(m.toolCallId.split("|")[0], c);
	}
	return out;
}

// ---- outgoing: request shaping ---------------------------------------------

type Item = Record<string, unknown>;

/**
 * The Codex Responses request body with the reserved namespaces in Codex's
 * shape (docs/codex-contract.md "Tool surface", "Results and encryption", "Remote wire shaping"):
 *   - tools (top-level `tools`, and the `tools` of `additional_tools` and
 *     `tool_search_output` input items): each flat `history`/`notes`
 *     function spec is replaced, in place, by that namespace's spec;
 *   - input: a replayed router call {name: "history", arguments:
 *     '{"action":"read_item",...}'} becomes {namespace: "history", name:
 *     "read_item", arguments: '{...}'} (action removed, other keys in their
 *     order); its id and call_id are kept;
 *   - input: the function_call_output of a call whose result was encrypted
 *     gets output [{type: "encrypted_content", encrypted_content}].
 * Returns a new body; the input is not modified. A body that is not an
 * object is returned as is.
 */
export function shapeCodexRequest(payload: unknown, encrypted: ReadonlyMap<string, string>, specs: NamespaceSpecs = NAMESPACE_SPECS): unknown {
	if (!payload || typeof payload !== "object" || Array.isArray(payload)) return payload;
	const body = { ...(payload as Item) };
	const shapeTools = (tools: Item[]) => tools.map((t) => (t?.type === "function" && typeof t.name === "string" && t.name in specs ? specs[t.name] : t));
	if (Array.isArray(body.tools)) body.tools = shapeTools(body.tools as Item[]);
	if (Array.isArray(body.input)) {
		body.input = (body.input as Item[]).map((it) => {
			// Pi 1.6 declares tools in the input too: `additional_tools`
			// developer items and `tool_search_output` items (pi-ai's
			// Responses request builder, deferred tools; docs/pi-facts.md
			// "Provider hooks").
			if ((it?.type === "additional_tools" || it?.type === "tool_search_output") && Array.isArray(it.tools)) {
				return { ...it, tools: shapeTools(it.tools as Item[]) };
			}
			if (it?.type === "function_call" && typeof it.name === "string" && it.name in NAMESPACE_SPECS) {
				let args: Record<string, unknown> = {};
				try {
					args = JSON.parse(String(it.arguments ?? "{}")) as Record<string, unknown>;
				} catch {
					return it;
				}
				const { action, ...rest } = args;
				if (typeof action !== "string" || !operationsOf(it.name).includes(action)) return it;
				const { namespace: _ns, ...item } = it;
				return { ...item, namespace: it.name, name: action, arguments: JSON.stringify(rest) };
			}
			if (it?.type === "function_call_output" && typeof it.call_id === "string" && encrypted.has(it.call_id)) {
				return { ...it, output: [{ type: "encrypted_content", encrypted_content: encrypted.get(it.call_id) }] };
			}
			return it;
		});
	}
	return body;
}
