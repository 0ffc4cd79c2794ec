// Reads the result of every operation of contextd's OpenAPI document through
// the types openapi-typescript generates from it
// (extension/src/generated/contextd.ts). openapi/clients_test.go type-checks
// this file with tsc --strict: a route missing from `readers`, a result
// field renamed or retyped, or a nullable field read without a null check
// fails the check.
import type { components, operations } from "../../../extension/src/generated/contextd.ts";

type JSONOf<R> = R extends { content: { "application/json": infer B } } ? B : never;
/** The JSON body of an operation's success responses (200 and 201). */
type Result<K extends keyof operations> = JSONOf<operations[K]["responses"][keyof operations[K]["responses"] & (200 | 201)]>;
type Window = components["schemas"]["CoordinatorWindowIdentity"];

const windowLine = (w: Window | null): string => (w === null ? "no window" : `#${w.windowNumber} ${w.currentWindowId} (first ${w.firstWindowId})`);

/** One reader per operation; the mapped type makes every operation required. */
export const readers: { [K in keyof operations]: (r: Result<K>) => unknown } = {
	"list-sessions": (r) => r.sessions.map((s) => `${s.session_id} ${s.file} v${s.version} ${s.mode} ${s.entries} ${s.problems.map((p) => p.reason).join(",")}`),
	"get-session": (r) =>
		[r.session_id, r.header.cwd, windowLine(r.window), r.rollover?.state, r.incomplete_rollover?.missing.join(","), r.rollover_loop?.window_ids.length, r.registration?.agent_name].join(" "),
	"get-rollover-loop": (r) => `${r.windows} ${r.window_ids.join(",")} ${r.next_cursor ?? "last page"}`,
	"register-session": (r) => `${r.session_id} ${r.session_file} ${r.mode} ${r.updated_at}`,
	"get-branch": (r) => r.context.filter((e) => e.role === "toolResult" || e.role === "unknown").map((e) => e.entry_id).concat(r.entry_ids, r.rules),
	"session-context": (r) => [windowLine(r.window), r.projection.start_at?.role, r.projection.drop.length, r.hidden_summaries.map((h) => h.summary_sha256), r.orphaned_tool_results],
	"session-windows": (r) => r.append.map((b) => b.customType).concat(windowLine(r.window)),
	"session-compaction": (r) => `${r.summary.length} ${r.first_kept_entry_id} ${r.details.archivedWindowIds.join(",")}`,
	"rebuild-index": (r) => r.sessions + 1,
	"get-index": (r) => `${r.used_bytes}/${r.budget_bytes} ${r.disk_bytes} ${r.sessions} ${r.evictions} ${r.evicted_bytes}`,
	"rollover-create": (r) => `${r.rollover_id} ${r.state} ${r.tool_result} ${r.merged} ${windowLine(r.rollover.next_window)}`,
	"rollover-settle": (r) => (r.navigate_to === null ? "local" : `${r.navigate_to} ${r.summarize} ${r.summary_parent_id ?? "root"}`),
	"rollover-commit": (r) => [...r.append.map((e): string => e.type), windowLine(r.window)],
	"rollover-complete": (r) => `${r.state} ${r.finished_at ?? ""} ${windowLine(r.next_window)}`,
	"rollover-abort": (r) => `${r.state} ${r.reason ?? ""}`,
	"rollover-get": (r) => `${r.rollover_id} ${r.mode} ${r.boundary_entry_id}`,
	"rollover-log": (r) => r.rollovers.map((e) => `${e.rollover_id ?? ""} ${e.state} ${e.from.id}`),
	"window-cut": (r) => r.identifiers.map((i) => `${i.kind} ${i.value} ${i.item_ids.length}`).concat(r.next_window_id),
	// Codex routes: the local result, or in Remote mode the backend's object.
	"history-list_windows": (r) => ("encrypted_output" in r ? r.encrypted_output : r.windows.map((w) => `${w.window_id} ${w.item_count}`)),
	"history-list_items": (r) => ("encrypted_output" in r ? r.encrypted_output : r.items.map((i) => `${i.role} ${i.item_id} ${i.truncated_content}`)),
	"history-search_contents": (r) => ("encrypted_output" in r ? r.encrypted_output : r.items.map((i) => i.tool_name ?? i.role)),
	"history-read_item": (r) => ("encrypted_output" in r ? r.encrypted_output : r.item === null ? "no such item" : `${r.item.content} ${r.item.next_offset_chars ?? "end"}`),
	"notes-list_files_by_prefix": (r) => ("encrypted_output" in r ? r.encrypted_output : r.files.map((f) => `${f.path} ${f.bytes}`)),
	"notes-read_file": (r) => ("encrypted_output" in r ? r.encrypted_output : r.file === null ? "no such file" : `${r.file.content} ${r.file.total_lines}`),
	"notes-search_contents": (r) => ("encrypted_output" in r ? r.encrypted_output : r.files.flatMap((f) => f.matches.map((m) => `${f.path}:${m.line_number}: ${m.line}`))),
	"notes-write_file": (r) => ("encrypted_output" in r ? r.encrypted_output : `${r.file.path} ${r.append.length}`),
	"notes-append_to_file": (r) => ("encrypted_output" in r ? r.encrypted_output : `${r.file.path} ${r.append.map((e) => e.customType)}`),
	"notes-thread_hint": (r) => ("encrypted_output" in r ? r.encrypted_output : r.text),
};
