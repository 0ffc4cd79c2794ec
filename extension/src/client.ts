// HTTP client of contextd: the typed operations, starting contextd when
// none runs (launcher.ts: the bundled binary, the version handshake), and
// calls that turn every failure into one sentence a model or a person can
// act on. Finding contextd and checking that it is the user's own is
// transport.ts's.
import { recordAnswer } from "./answerlog.ts";
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { components, operations, paths } from "./generated/contextd.ts";
import { adopt, type Discovery, launch, type Probe } from "./launcher.ts";
import type { Settings } from "./settings.ts";
import { ContextdError, DISCOVERY_FILE, type Endpoint, type FieldError, healthy, type ProblemCode, parseEndpoint, readDiscovery, readToken, Transport, UnreachableError } from "./transport.ts";

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
	"get-rollover-loop": ["GET", "/v1/sessions/{session_id}/rollover_loop"],
	"register-session": ["PUT", "/v1/sessions/{session_id}"],
	"get-branch": ["GET", "/v1/sessions/{session_id}/branch"],
	"session-context": ["POST", "/v1/sessions/{session_id}/context"],
	"session-windows": ["POST", "/v1/sessions/{session_id}/windows"],
	"session-compaction": ["POST", "/v1/sessions/{session_id}/compaction"],
	"get-index": ["GET", "/v1/index"],
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

export { ContextdError, type FieldError, healthy, type ProblemCode } from "./transport.ts";
/** The discovery file's record ({url, pid, version}), as launcher.ts reads it. */
export type { Discovery } from "./launcher.ts";

/**
 * The endpoint of the contextd that serves this user (transport.ts): the
 * explicit URL, else the discovery file of the state directory; there is
 * no default address. Errors: a ContextdError saying what to do.
 */
export function locate(s: Settings): Endpoint {
	if (s.url) return parseEndpoint(s.url.replace(/\/+$/, ""), "the contextd URL (CONTEXTD_URL, or \"url\" under \"contextd\" in Pi's settings.json)");
	const ep = readDiscovery(s.stateDir);
	if (!ep) {
		throw new UnreachableError(
			`contextd is not running for the state directory ${s.stateDir} (no ${join(s.stateDir, DISCOVERY_FILE)}); run \`${serveCommand(s.stateDir)}\` in another terminal (or set \"autoStart\": true under \"contextd\" in Pi's settings.json)`,
			"",
		);
	}
	return ep;
}

/**
 * The command that starts contextd for stateDir from any terminal:
 * `contextd serve`, with `--state-dir DIR` unless DIR is contextd's own
 * default, ~/.pi/agent/contextd (cmd/contextd defaultStateDir without
 * CONTEXTD_STATE_DIR or PI_CODING_AGENT_DIR, which another terminal may
 * lack). A DIR with characters a shell treats specially is single-quoted.
 * With addr (host:port of an explicit contextd URL), `--addr addr` too:
 * contextd listens on 127.0.0.1:7467 unless told.
 */
export function serveCommand(stateDir: string, home: string = homedir(), addr = ""): string {
	let cmd = "contextd serve";
	if (addr) cmd += ` --addr ${addr}`;
	if (stateDir === join(home, ".pi", "agent", "contextd")) return cmd;
	const arg = /^[\w@%+=:,./-]+$/.test(stateDir) ? stateDir : `'${stateDir.replace(/'/g, "'\\''")}'`;
	return `${cmd} --state-dir ${arg}`;
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
const notReached = (err: unknown): boolean => err instanceof UnreachableError && (err.errno === "ECONNREFUSED" || err.errno === "ENOENT");

/** A connection to contextd: its base URL and the service token every call sends (X-Contextd-Token). */
export class Contextd {
	/** Where contextd answers: unix:/path or http://host:port. */
	url: string;
	/** Sentences for the person running Pi from connecting (launcher.ts: a version difference, a restart). */
	readonly notices: string[] = [];
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
			// The person and the model read this: contextd's sentence, not the HTTP status (kept in .status).
			throw new ContextdError(`contextd: ${problemDetail(res.text)}`, res.status, problemCode(res.text), problemFields(res.text));
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

/** A problem+json answer's code member (ErrorModel.code), else undefined. */
function problemCode(text: string): ProblemCode | undefined {
	try {
		return (JSON.parse(text) as Partial<Schemas["ErrorModel"]>).code;
	} catch {
		return undefined;
	}
}

/** A problem+json answer's field errors (ErrorModel.errors[]), each with a message; [] when there are none or the answer is not problem+json. */
export function problemFields(text: string): FieldError[] {
	try {
		const p = JSON.parse(text) as { errors?: { message?: string; location?: string }[] | null };
		return (Array.isArray(p?.errors) ? p.errors : []).filter((e) => typeof e?.message === "string" && e.message !== "").map((e) => ({ location: e.location ?? "", message: e.message! }));
	} catch {
		return [];
	}
}

/** A problem+json answer's detail, with the field errors it does not already name, else the body text. */
export function problemDetail(text: string): string {
	try {
		const p = JSON.parse(text) as { detail?: string; title?: string; errors?: { message?: string; location?: string }[] };
		const detail = p.detail ?? p.title ?? text;
		// contextd's detail already names its first field errors
		// (api/errors.go installErrorDetails); only the others are added.
		const more = (p.errors ?? []).map((e) => (e.location ? `${e.location}: ${e.message ?? ""}` : (e.message ?? ""))).filter((e) => e !== "" && !detail.includes(e));
		return more.length ? `${detail} (${more.join("; ")})` : detail;
	} catch {
		return text; // not problem+json: keep the body text
	}
}

/**
 * Connects to this user's contextd: the explicit URL, else the address in
 * the discovery file of the state directory (transport.ts), after contextd
 * proved it holds the token, with the launcher's version handshake; when
 * none answers, starts one (launcher.ts: the bundled binary by default, or
 * CONTEXTD_AUTOSTART=1). Errors: one sentence saying what to do.
 */
export async function connect(s: Settings): Promise<Contextd> {
	const probe: Probe = { healthy, readDiscovery: discoveryRecord };
	let first: unknown;
	try {
		const t = await open(s);
		const d = s.url ? undefined : discoveryRecord(s.stateDir);
		const found = await adopt(s, d?.url ?? t.endpoint.label, d, probe);
		if (d && discoveryRecord(s.stateDir)?.pid !== d.pid) {
			// The handshake restarted contextd: prove the new one.
			t.close();
			const c = new Contextd(await open(s), "", s);
			c.notices.push(...found.notices);
			return c;
		}
		const c = new Contextd(t, "", s);
		c.notices.push(...found.notices);
		return c;
	} catch (err) {
		first = err;
	}
	if (first instanceof UnreachableError) {
		let launched;
		try {
			launched = await launch(s, probe);
		} catch (err) {
			throw new ContextdError((err as Error).message);
		}
		if (launched) {
			const c = new Contextd(await open(s), "", s);
			c.notices.push(...launched.notices);
			return c;
		}
	}
	if (first instanceof UnreachableError && first.errno !== "") {
		// Nothing listens at the address: say what to run, in Pi's terms.
		// An explicit URL is the address contextd must listen on; the
		// state directory holds the token either way.
		const serve = s.url ? serveCommand(s.stateDir, homedir(), new URL(locate(s).label).host) : serveCommand(s.stateDir);
		throw new UnreachableError(`contextd is not reachable at ${locate(s).label}; run \`${serve}\` in another terminal (or set \"autoStart\": true under \"contextd\" in Pi's settings.json)`, first.errno);
	}
	throw first;
}


/** Reads <stateDir>/contextd.json (the discovery file) into a Discovery; undefined when transport.ts's checks refuse it or it names no url (pid 0 and version "" when those are missing). */
export function discoveryRecord(stateDir: string): Discovery | undefined {
	if (!readDiscovery(stateDir)) return undefined;
	const d = JSON.parse(readFileSync(join(stateDir, DISCOVERY_FILE), "utf8")) as Partial<Discovery>;
	if (typeof d.url !== "string") return undefined;
	return { url: d.url, pid: typeof d.pid === "number" ? d.pid : 0, version: typeof d.version === "string" ? d.version : "" };
}
