// HTTP client of contextd: discovery (<state-dir>/contextd.json), the token
// file, optional auto-start, and calls that turn every failure into one
// sentence a model or a person can act on.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { components, operations, paths } from "./generated/contextd.ts";
import { DEFAULT_URL, type Settings } from "./settings.ts";

/**
 * contextd's API types, generated from openapi/openapi.yaml by
 * openapi-typescript into ./generated/contextd.ts (committed; the Go test
 * openapi/clients_test.go fails when it is stale).
 */
export type Schemas = components["schemas"];
/** An operation id of the OpenAPI document ("session-context", "history-read_item", …). */
export type OperationId = keyof operations;
type JSONOf<R> = R extends { content: { "application/json": infer B } } ? B : never;
/** The JSON answer of operation K: its 200 (or 201) body. */
export type Result<K extends OperationId> = JSONOf<operations[K]["responses"][keyof operations[K]["responses"] & (200 | 201)]>;
/** The JSON request body of operation K (undefined for operations without one). */
export type RequestBody<K extends OperationId> = operations[K] extends { requestBody: { content: { "application/json": infer B } } } ? B : undefined;
/** The path parameters of operation K. */
export type PathParams<K extends OperationId> = operations[K]["parameters"] extends { path: infer P } ? P : never;
/** The query parameters of operation K. */
export type QueryParams<K extends OperationId> = operations[K]["parameters"] extends { query?: infer Q } ? Q : never;
/** What a Codex route answers in Remote mode: the backend's object, unchanged. */
export type RemoteResult = Schemas["RemoteResult"];

// The answers the extension reads, by their schema names.
/** POST /v1/sessions/{id}/context's answer: the projection and the current window. */
export type ContextAnswer = Schemas["CoordinatorContextAnswer"];
/** POST /v1/sessions/{id}/windows's answer: the boundary to append. */
export type WindowsAnswer = Schemas["CoordinatorWindowsAnswer"];
/** GET /v1/sessions/{id}'s answer. */
export type SessionState = Schemas["CoordinatorSessionState"];
/** POST /v1/sessions/{id}/rollovers's answer (Tree tool phase). */
export type RolloverCreated = Schemas["CoordinatorRolloverCreated"];
/** POST …/rollovers/{rid}/settle's answer: where to navigate. */
export type SettleAnswer = Schemas["CoordinatorSettleAnswer"];
/** POST …/rollovers/{rid}/commit's answer: the entries to append. */
export type CommitAnswer = Schemas["CoordinatorCommitAnswer"];
/** One rollover's state. */
export type RolloverInfo = Schemas["CoordinatorRolloverInfo"];
/** GET /v1/sessions/{id}/rollovers's answer: the reset log. */
export type RolloverLog = Schemas["CoordinatorRolloverLog"];
/** POST /v1/sessions/{id}/compaction's answer (Tree /compact). */
export type CompactionAnswer = Schemas["CoordinatorCompactionAnswer"];
/** notes thread_hint's answer. */
export type ThreadHintResult = Schemas["CoordinatorThreadHintResult"];
/** PUT /v1/sessions/{id}'s body. */
export type RegisterRequest = Schemas["CoordinatorRegisterRequest"];

type Method = "get" | "put" | "post";
/** The [METHOD, path template] pairs whose generated operation is K. */
type RouteOf<K extends OperationId> = {
	[P in keyof paths]: {
		[M in Method]: paths[P][M] extends operations[K] ? (operations[K] extends paths[P][M] ? readonly [Uppercase<M>, P] : never) : never;
	}[Method];
}[keyof paths];

/**
 * Method and path of every operation. The type makes it complete and
 * correct: an operation missing here, or a path or method that is not the
 * operation's in the generated document, fails the type check.
 */
export const ROUTES: { readonly [K in OperationId]: RouteOf<K> } = {
	"list-sessions": ["GET", "/v1/sessions"],
	"get-session": ["GET", "/v1/sessions/{session_id}"],
	"register-session": ["PUT", "/v1/sessions/{session_id}"],
	"get-branch": ["GET", "/v1/sessions/{session_id}/branch"],
	"session-context": ["POST", "/v1/sessions/{session_id}/context"],
	"session-windows": ["POST", "/v1/sessions/{session_id}/windows"],
	"session-compaction": ["POST", "/v1/sessions/{session_id}/compaction"],
	"rebuild-index": ["POST", "/v1/index/rebuild"],
	"rollover-create": ["POST", "/v1/sessions/{session_id}/rollovers"],
	"rollover-log": ["GET", "/v1/sessions/{session_id}/rollovers"],
	"rollover-get": ["GET", "/v1/sessions/{session_id}/rollovers/{rollover_id}"],
	"rollover-settle": ["POST", "/v1/sessions/{session_id}/rollovers/{rollover_id}/settle"],
	"rollover-commit": ["POST", "/v1/sessions/{session_id}/rollovers/{rollover_id}/commit"],
	"rollover-complete": ["POST", "/v1/sessions/{session_id}/rollovers/{rollover_id}/complete"],
	"rollover-abort": ["POST", "/v1/sessions/{session_id}/rollovers/{rollover_id}/abort"],
	"window-cut": ["GET", "/v1/sessions/{session_id}/windows/{window_id}/cut"],
	"history-list_windows": ["POST", "/alpha/history/v2/list_windows"],
	"history-list_items": ["POST", "/alpha/history/v2/list_items"],
	"history-read_item": ["POST", "/alpha/history/v2/read_item"],
	"history-search_contents": ["POST", "/alpha/history/v2/search_contents"],
	"notes-list_files_by_prefix": ["POST", "/alpha/notes/v2/list_files_by_prefix"],
	"notes-read_file": ["POST", "/alpha/notes/v2/read_file"],
	"notes-search_contents": ["POST", "/alpha/notes/v2/search_contents"],
	"notes-write_file": ["POST", "/alpha/notes/v2/write_file"],
	"notes-append_to_file": ["POST", "/alpha/notes/v2/append_to_file"],
	"notes-thread_hint": ["POST", "/alpha/notes/v2/thread_hint"],
};

/** The arguments of request(K): path and query parameters, body and extra headers. */
export type RequestArgs<K extends OperationId> = ([PathParams<K>] extends [never] ? { path?: undefined } : { path: PathParams<K> }) &
	([QueryParams<K>] extends [never] ? { query?: undefined } : { query?: QueryParams<K> }) &
	(RequestBody<K> extends undefined ? { body?: undefined } : { body: RequestBody<K> }) & { headers?: Record<string, string> };

/** Fills a path template's {name} parameters, URL-encoded. */
export function fillPath(template: string, params: Record<string, string> = {}): string {
	return template.replace(/\{([a-z_]+)\}/g, (_, name: string) => {
		const v = params[name];
		if (v === undefined) throw new ContextdError(`internal: no value for {${name}} in ${template}`);
		return encodeURIComponent(v);
	});
}

/** The machine-readable kind of a contextd problem (the problem body's code member; its values are the OpenAPI enum). */
export type ProblemCode = Schemas["ErrorModel"]["code"];

/**
 * A failed call to contextd; message is the text shown to the model or
 * user. status is the HTTP status (0: no answer), code the problem's code
 * (undefined: no answer, or not a contextd problem). Branch on code, never
 * on the message.
 */
export class ContextdError extends Error {
	readonly status: number;
	readonly code: ProblemCode | undefined;
	// No parameter properties in this file: Node's type stripping (the unit
	// tests) cannot load them.
	constructor(message: string, status = 0, code?: ProblemCode) {
		super(message);
		this.status = status;
		this.code = code;
	}
}

/** contextd's discovery file, <state-dir>/contextd.json: where it listens, its pid and version. */
export interface Discovery {
	url: string;
	pid: number;
	version: string;
}

/** The discovery file of stateDir, or undefined when it is missing or unreadable. */
export function readDiscovery(stateDir: string): Discovery | undefined {
	try {
		const d = JSON.parse(readFileSync(join(stateDir, "contextd.json"), "utf8")) as Discovery;
		return typeof d.url === "string" ? d : undefined;
	} catch {
		return undefined;
	}
}

/** Whether contextd at url answers GET /healthz within timeoutMs milliseconds. */
export async function healthy(url: string, timeoutMs = 1500): Promise<boolean> {
	try {
		const r = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(timeoutMs) });
		return r.ok;
	} catch {
		return false;
	}
}

/** A connection to contextd: its base URL and the service token every call sends (X-Contextd-Token). */
export class Contextd {
	readonly url: string;
	private readonly token: string;
	constructor(url: string, token: string) {
		this.url = url;
		this.token = token;
	}

	/**
	 * Calls operation op with the generated types: the body and parameters
	 * are checked against the OpenAPI document and the answer is typed as
	 * its success body. Errors as call().
	 */
	async request<K extends OperationId>(op: K, args: RequestArgs<K>): Promise<Result<K>> {
		const [method, template] = ROUTES[op];
		let path = fillPath(template, args.path as Record<string, string> | undefined);
		const query = Object.entries((args.query ?? {}) as Record<string, string | number | undefined>).filter(([, v]) => v !== undefined);
		if (query.length > 0) path += "?" + new URLSearchParams(query.map(([k, v]) => [k, String(v)])).toString();
		return this.call<Result<K>>(method, path, args.body, args.headers);
	}

	/**
	 * Calls contextd and returns the decoded JSON answer. Errors: a
	 * ContextdError whose message is contextd's problem detail (4xx/5xx) or
	 * says contextd is unreachable.
	 */
	async call<T = unknown>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
		let res: Response;
		try {
			res = await fetch(this.url + path, {
				method,
				headers: { "X-Contextd-Token": this.token, ...(body !== undefined ? { "Content-Type": "application/json" } : {}), ...headers },
				body: body !== undefined ? JSON.stringify(body) : undefined,
				signal: AbortSignal.timeout(60_000),
			});
		} catch (err) {
			const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
			throw new ContextdError(`contextd is not reachable at ${this.url} (${cause}); start it with \`contextd serve\` and retry`);
		}
		const text = await res.text();
		if (!res.ok) {
			let detail = text;
			let code: ProblemCode | undefined;
			try {
				const p = JSON.parse(text) as Partial<Schemas["ErrorModel"]>;
				code = p.code;
				detail = p.detail ?? p.title ?? text;
				if (p.errors?.length) {
					detail += ` (${p.errors.map((e) => `${e.location ?? ""}: ${e.message ?? ""}`).join("; ")})`;
				}
			} catch {
				// not problem+json: keep the body text
			}
			throw new ContextdError(`contextd ${res.status}: ${detail}`, res.status, code);
		}
		return (text ? JSON.parse(text) : undefined) as T;
	}
}

function readToken(file: string): string {
	try {
		return readFileSync(file, "utf8").trim();
	} catch (err) {
		throw new ContextdError(`cannot read the contextd token file ${file} (${(err as NodeJS.ErrnoException).code ?? err}); start contextd once to create it, or set CONTEXTD_TOKEN_FILE`);
	}
}

/**
 * Finds a healthy contextd: the explicit URL, else the discovery file, else
 * the default URL; starts the binary when autoStart is set and none
 * answers. Errors: one sentence saying what to do.
 */
export async function connect(s: Settings): Promise<Contextd> {
	const candidates: string[] = [];
	if (s.url) {
		candidates.push(s.url.replace(/\/+$/, ""));
	} else {
		const d = readDiscovery(s.stateDir);
		if (d) candidates.push(d.url);
		candidates.push(DEFAULT_URL);
	}
	for (const url of candidates) {
		if (await healthy(url)) return new Contextd(url, readToken(s.tokenFile));
	}
	if (s.autoStart) {
		const url = await start(s);
		return new Contextd(url, readToken(s.tokenFile));
	}
	throw new ContextdError(
		`contextd is not reachable at ${candidates.join(" or ")}; run \`contextd serve\` (or set CONTEXTD_AUTOSTART=1), then /reload`,
	);
}

async function start(s: Settings): Promise<string> {
	const args = ["serve", "--state-dir", s.stateDir];
	if (s.url) args.push("--addr", new URL(s.url).host);
	let spawnError: Error | undefined;
	const child = spawn(s.binary, args, { detached: true, stdio: "ignore" });
	child.on("error", (err) => {
		spawnError = err;
	});
	child.unref();
	const deadline = Date.now() + 15_000;
	while (Date.now() < deadline) {
		if (spawnError) {
			throw new ContextdError(`cannot start ${s.binary} (${(spawnError as NodeJS.ErrnoException).code ?? spawnError.message}); install contextd on PATH or set CONTEXTD_BIN`);
		}
		const url = s.url ? s.url.replace(/\/+$/, "") : readDiscovery(s.stateDir)?.url;
		if (url && (await healthy(url, 500))) return url;
		await new Promise((r) => setTimeout(r, 100));
	}
	throw new ContextdError(`started ${s.binary} but it did not answer /healthz within 15 s; run \`${s.binary} serve\` by hand to see why`);
}
