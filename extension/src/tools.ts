// Schemas of the model-facing tools. In Local and Tree the Codex history and
// notes namespaces are flat router tools, `history` and `notes`, whose
// `action` argument names the Codex operation; the other arguments keep the
// Codex names and meanings (docs/codex-contract.md "Tool surface", "Modes").
import { Type } from "typebox";

const nullableString = (description: string) => Type.Optional(Type.Union([Type.String(), Type.Null()], { description }));
const posInt = (description: string) => Type.Optional(Type.Integer({ minimum: 1, description }));

/** The Codex history operations, the `history` tool's actions. */
export const HISTORY_ACTIONS = ["list_windows", "list_items", "read_item", "search_contents"] as const;
/** The Codex notes operations, the `notes` tool's actions. */
export const NOTES_ACTIONS = ["list_files_by_prefix", "read_file", "search_contents", "append_to_file", "write_file"] as const;
/** The notes actions that write a note (contextd plans a codex-context-note entry for each). */
export const NOTE_WRITES = new Set<string>(["append_to_file", "write_file"]);

/** new_context's description, Codex's wording. */
export const NEW_CONTEXT_DESCRIPTION = "Start a new context window. Does not clear, reset, or otherwise affect environment state.";

/** new_context takes no arguments. */
export const newContextParameters = Type.Object({}, { additionalProperties: false });

/** get_context_remaining takes no arguments. */
export const contextRemainingParameters = Type.Object({}, { additionalProperties: false });

/** The `history` router tool's description. */
export const HISTORY_DESCRIPTION = [
	"Recover prior conversation after a context-window reset, using agent names and the opaque window and item IDs these actions return. Pass returned IDs unchanged.",
	"Actions: list_windows (window IDs with item counts), list_items (items of a window, or of all windows when window_id is null), read_item (a bounded character range of one item), search_contents (case-sensitive literal substring search).",
	"Items are ordered by persisted ordinal, then creation time; an unknown window gives no matches. The current agent is the default; absolute or relative agent names select another agent. History is read-only.",
].join("\n");

/** The `notes` router tool's description. */
export const NOTES_DESCRIPTION = [
	"Private notes that survive context-window transitions in this session. Paths are virtual: a relative path resolves under the current agent's <agent_name>/notes; an absolute path is <agent_name>/notes[/<path>].",
	"Actions: list_files_by_prefix, read_file (start_line/stop_line inclusive, 1-based, negative counts from the end), search_contents (case-sensitive literal, matched per line), append_to_file (appends text exactly as given), write_file (replaces the whole file).",
	"Empty, . and .. components are unsupported; ~ is literal. Each file must stay at most 1,000,000 UTF-8 bytes. Reads reflect writes immediately.",
].join("\n");

/** The `history` router tool's arguments: action plus the Codex arguments of the history operations. */
export const historyParameters = Type.Object({
	action: Type.String({ enum: [...HISTORY_ACTIONS], description: "The history operation: list_windows, list_items, read_item or search_contents." }),
	query: Type.Optional(Type.String({ description: "search_contents: case-sensitive literal substring to find." })),
	window_id: nullableString("Full window ID (read_item: required, the window containing the item; list_items/search_contents: null means all windows)."),
	item_id: Type.Optional(Type.String({ description: "read_item: the item ID, the suffix shown in the item's trailing [id: ...] marker." })),
	offset_chars: Type.Optional(Type.Integer({ minimum: 0, description: "read_item: zero-based start offset in characters." })),
	limit_chars: posInt("read_item: maximum characters returned."),
	limit: posInt("list_windows/list_items/search_contents: maximum windows or items returned."),
	recent_first: Type.Optional(Type.Boolean({ description: "Newest first." })),
	role: Type.Optional(
		Type.Union([Type.String({ enum: ["user", "assistant", "tool", "system", "developer"] }), Type.Null()], { description: "Only items of this role." }),
	),
	tool_name: nullableString("Only tool items of this tool; non-tool messages are excluded when set."),
	tool_namespace: nullableString("Only tool items of this namespace; non-tool messages are excluded when set."),
	agent_name: nullableString("Absolute agent name, or relative to the current agent; default the current agent."),
	max_chars_per_item: posInt("list_items: cap on each item's truncated_content."),
});

/** The `notes` router tool's arguments: action plus the Codex arguments of the notes operations. */
export const notesParameters = Type.Object({
	action: Type.String({ enum: [...NOTES_ACTIONS], description: "The notes operation: list_files_by_prefix, read_file, search_contents, append_to_file or write_file." }),
	path: Type.Optional(Type.String({ description: "read_file/append_to_file/write_file: the note file path." })),
	text: Type.Optional(Type.String({ description: "append_to_file: text appended exactly as given; write_file: the full new content." })),
	query: Type.Optional(Type.String({ description: "search_contents: case-sensitive literal, matched per line." })),
	prefix: nullableString("list_files_by_prefix: path prefix."),
	max_results: posInt("list_files_by_prefix: maximum files."),
	file_order_by: Type.Optional(Type.String({ enum: ["name", "created_at", "updated_at"], description: "list_files_by_prefix: sort key." })),
	file_order: Type.Optional(Type.String({ enum: ["ascending", "descending"], description: "list_files_by_prefix: sort order." })),
	start_line: Type.Optional(Type.Union([Type.Integer(), Type.Null()], { description: "read_file: first line, inclusive, 1-based; negative counts from the end." })),
	stop_line: Type.Optional(Type.Union([Type.Integer(), Type.Null()], { description: "read_file: last line, inclusive, 1-based; negative counts from the end." })),
	max_matches_per_file: posInt("search_contents: maximum matching lines per file."),
	max_files: posInt("search_contents: maximum files."),
	recent_file_first: Type.Optional(Type.Boolean({ description: "search_contents: newest files first." })),
	path_prefix: nullableString("search_contents: only files under this prefix."),
});

/** The Codex arguments of a router call: action and undefined fields removed. */
export function codexArguments(params: Record<string, unknown>): Record<string, unknown> {
	const out: Record<string, unknown> = {};
	for (const [k, v] of Object.entries(params)) {
		if (k !== "action" && v !== undefined) out[k] = v;
	}
	return out;
}
