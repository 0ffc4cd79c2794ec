// HTTP client of contextd: the typed operations, optional auto-start, and
// calls that turn every failure into one sentence a model or a person can
// act on. Finding contextd and checking that it is the user's own is
// transport.ts's.
import { recordAnswer } from "./answerlog.ts";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { components, operations, paths } from "./generated/contextd.ts";
import type { Settings } from "./settings.ts";
import { ContextdError, DISCOVERY_FILE, type Endpoint, healthy, parseEndpoint, readDiscovery, readToken, Transport, UnreachableError } from "./transport.ts";

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
export type ContextAnswer = Schemas["CoordinatorContextAnswer"];
export type WindowsAnswer = Schemas["CoordinatorWindowsAnswer"];
export type SessionState = Schemas["CoordinatorSessionState"];
export type RolloverCreated = Schemas["CoordinatorRolloverCreated"];
export type SettleAnswer = Schemas["CoordinatorSettleAnswer"];
export type CommitAnswer = Schemas["CoordinatorCommitAnswer"];
export type RolloverInfo = Schemas["CoordinatorRolloverInfo"];
export type RolloverLog = Schemas["CoordinatorRolloverLog"];
export type CompactionAnswer = Schemas["CoordinatorCompactionAnswer"];
export type ThreadHintResult = Schemas["CoordinatorThreadHintResult"];
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

export { ContextdError, healthy } from "./transport.ts";

/**
 * The endpoint of the contextd that serves this user (transport.ts): the
 * explicit URL, else the discovery file of the state directory; there is
 * no default address. Errors: a ContextdError saying what to do.
 */
export function locate(s: Settings): Endpoint {
	if (s.url) return parseEndpoint(s.url.replace(/\/+$/, ""), "the contextd URL (--contextd-url, CONTEXTD_URL or settings.json)");
	const ep = readDiscovery(s.stateDir);
	if (!ep) {
		throw new UnreachableError(
			`contextd is not running for the state directory ${s.stateDir} (no ${join(s.stateDir, DISCOVERY_FILE)}); run \`contextd serve\` (or set CONTEXTD_AUTOSTART=1), then /reload`,
			"",
		);
	}
	return ep;
}

/** Locates contextd, reads the token and has contextd prove it holds it. */
async function open(s: Settings): Promise<Transport> {
	const ep = locate(s);
	let token: string;
	try {
		token = readToken(s.tokenFile);
	} catch (err) {
		// No token file yet and nothing at the address: contextd never ran.
		if (!existsSync(s.tokenFile) && !(await healthy(ep.label))) throw new UnreachableError(`contextd is not reachable at ${ep.label}`, "ECONNREFUSED");
		throw err;
	}
	const t = new Transport(ep, token, s.tokenFile);
	try {
		await t.prove();
	} catch (err) {
		t.close();
		throw err;
	}
	return t;
}

/** Whether err says nothing listens at the address, so the request never reached a server and may be sent again elsewhere. */
const notReached = (err: unknown): boolean => err instanceof UnreachableError && (err.code === "ECONNREFUSED" || err.code === "ENOENT");

export class Contextd {
	/** Where contextd answers: unix:/path or http://host:port. */
	url: string;
	private transport: Transport;
	private readonly settings?: Settings;
	/**
	 * A client of the contextd at endpoint (or an address string, see
	 * parseEndpoint) with token. With settings, a call refused with 401, or
	 * whose address no longer answers, re-reads the discovery file and the
	 * token once and retries (a contextd restarted with a new token, port
	 * or state directory).
	 */
	constructor(endpoint: Endpoint | string | Transport, token = "", settings?: Settings) {
		if (endpoint instanceof Transport) this.transport = endpoint;
		else this.transport = new Transport(typeof endpoint === "string" ? parseEndpoint(endpoint, "address") : endpoint, token, settings?.tokenFile ?? "the token file");
		this.url = this.transport.endpoint.label;
		this.settings = settings;
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
	 * ContextdError whose message is contextd's problem detail (4xx/5xx),
	 * says contextd is unreachable or did not prove it holds the token, or,
	 * for a 401 after the retry, names the token file read and the one
	 * contextd reads.
	 */
	async call<T = unknown>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
		const out = {
			method,
			path,
			headers: { ...(body !== undefined ? { "Content-Type": "application/json" } : {}), ...headers },
			body: body !== undefined ? JSON.stringify(body) : undefined,
			timeoutMs: 60_000,
		};
		let res: { status: number; text: string };
		try {
			res = await this.transport.send(out);
		} catch (err) {
			if (!this.settings || !notReached(err)) throw err;
			await this.reopen();
			res = await this.transport.send(out);
		}
		if (res.status === 401 && this.settings) {
			await this.reopen();
			res = await this.transport.send(out);
			if (res.status === 401) {
				throw new ContextdError(
					`contextd at ${this.url} refuses the token the extension read from ${this.settings.tokenFile} (state directory ${this.settings.stateDir}); contextd says: ${problemDetail(res.text)} ` +
						`Point CONTEXTD_STATE_DIR (or CONTEXTD_TOKEN_FILE) at the state directory contextd uses, or restart contextd with --state-dir ${this.settings.stateDir}`,
					401,
				);
			}
		}
		recordAnswer(method, path, res);
		if (res.status < 200 || res.status >= 300) {
			throw new ContextdError(`contextd ${res.status}: ${problemDetail(res.text)}`, res.status);
		}
		return (res.text ? JSON.parse(res.text) : undefined) as T;
	}

	/** Re-reads the discovery file and the token, and has the contextd found prove itself. */
	private async reopen(): Promise<void> {
		const t = await open(this.settings!);
		this.transport.close();
		this.transport = t;
		this.url = t.endpoint.label;
	}
}

/** A problem+json answer's detail (and field errors), else the body text. */
function problemDetail(text: string): string {
	try {
		const p = JSON.parse(text) as { detail?: string; title?: string; errors?: { message?: string; location?: string }[] };
		let detail = p.detail ?? p.title ?? text;
		if (p.errors?.length) {
			detail += ` (${p.errors.map((e) => `${e.location ?? ""}: ${e.message ?? ""}`).join("; ")})`;
		}
		return detail;
	} catch {
		return text; // not problem+json: keep the body text
	}
}

/**
 * Connects to this user's contextd: the explicit URL, else the address in
 * the discovery file of the state directory (transport.ts), after contextd
 * proved it holds the token; starts the binary when autoStart is set and
 * none is running. Errors: one sentence saying what to do.
 */
export async function connect(s: Settings): Promise<Contextd> {
	let first: unknown;
	try {
		return new Contextd(await open(s), "", s);
	} catch (err) {
		first = err;
	}
	if (s.autoStart && first instanceof UnreachableError) {
		return new Contextd(await start(s), "", s);
	}
	if (first instanceof UnreachableError && first.code !== "") {
		// Nothing listens at the address: say what to run, in Pi's terms.
		throw new UnreachableError(`contextd is not reachable at ${locate(s).label}; run \`contextd serve\` (or set CONTEXTD_AUTOSTART=1), then /reload`, first.code);
	}
	throw first;
}

async function start(s: Settings): Promise<Transport> {
	const args = ["serve", "--state-dir", s.stateDir];
	if (s.url) {
		const ep = parseEndpoint(s.url.replace(/\/+$/, ""), "the contextd URL");
		if (ep.socketPath) args.push("--socket", ep.socketPath);
		else args.push("--addr", new URL(s.url).host);
	}
	let spawnError: Error | undefined;
	const child = spawn(s.binary, args, { detached: true, stdio: "ignore" });
	child.on("error", (err) => {
		spawnError = err;
	});
	child.unref();
	const deadline = Date.now() + 15_000;
	let last: unknown;
	while (Date.now() < deadline) {
		if (spawnError) {
			throw new ContextdError(`cannot start ${s.binary} (${(spawnError as NodeJS.ErrnoException).code ?? spawnError.message}); install contextd on PATH or set CONTEXTD_BIN`);
		}
		try {
			return await open(s);
		} catch (err) {
			last = err;
		}
		await new Promise((r) => setTimeout(r, 100));
	}
	throw new ContextdError(`started ${s.binary} but it did not answer within 15 s (${(last as Error | undefined)?.message ?? "no answer"}); run \`${s.binary} serve\` by hand to see why`);
}
