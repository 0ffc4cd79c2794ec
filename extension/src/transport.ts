// How the extension reaches its own contextd and nobody else's
// (docs/security.md "The extension talks only to its own contextd"):
//
//   - where: an explicit URL (http:// on a loopback host, or unix:/path),
//     else the discovery file <state-dir>/contextd.json, read only when it
//     and the state directory belong to this user and nobody else may
//     write them. The file's Unix socket is preferred to its URL. There is
//     no default address to fall back to.
//   - who: before a request carrying the token goes out on a connection,
//     contextd proves on that very connection that it holds the token of
//     the token file (GET /v1/proof: HMAC-SHA256(token, PROOF_CONTEXT +
//     challenge) of a fresh random challenge; api/proof.go). A listener
//     that cannot (another user's process on a port contextd left, an old
//     discovery file) gets nothing: not the token, not a session path, not
//     Codex credentials.
//   - how: node:http, over the socket (socketPath) or TCP, one kept-alive
//     connection at a time so the proven connection carries the requests.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { lstatSync, readFileSync, type Stats } from "node:fs";
import { Agent, type IncomingMessage, request as httpRequest, type RequestOptions } from "node:http";
import type { Socket } from "node:net";
import { isAbsolute, join } from "node:path";
import type { components } from "./generated/contextd.ts";

/** contextd's proof route; the rule is api/proof.go's ProofPath. */
export const PROOF_PATH = "/v1/proof";
/** Prefix of the challenge in the proof's HMAC; api/proof.go ProofContext. */
export const PROOF_CONTEXT = "contextd-proof-v1:";
/** The discovery file's name in the state directory; discovery/discovery.go FileName. */
export const DISCOVERY_FILE = "contextd.json";

/** The machine-readable kind of a contextd problem (the problem body's code member; its values are the OpenAPI enum). */
export type ProblemCode = components["schemas"]["ErrorModel"]["code"];

/**
 * A failed call to contextd; message is the text shown to the model or
 * user. status is the HTTP status (0: no answer), code the problem's code
 * (undefined: no answer, or not a contextd problem). Branch on code, never
 * on the message.
 */
export class ContextdError extends Error {
	readonly status: number;
	readonly code: ProblemCode | undefined;
	/** The field errors of a validation problem (its errors[]: location such as "body" or "body.limit", and message); empty otherwise. */
	readonly fields: readonly FieldError[];
	// No parameter properties in this file: Node's type stripping (the unit
	// tests) cannot load them.
	constructor(message: string, status = 0, code?: ProblemCode, fields: readonly FieldError[] = []) {
		super(message);
		this.status = status;
		this.code = code;
		this.fields = fields;
	}
}

/** One field error of a problem answer (ErrorModel.errors[]): where (location, such as "body.limit") and what is wrong. */
export interface FieldError {
	location: string;
	message: string;
}

/**
 * contextd is not there: no discovery file, or nothing listens at its
 * address. errno is the connection error's code ("ECONNREFUSED", "ENOENT",
 * …; "" for a missing discovery file). Starting contextd may help; a
 * request that got this error never reached a server.
 */
export class UnreachableError extends ContextdError {
	readonly errno: string;
	constructor(message: string, errno: string) {
		super(message);
		this.errno = errno;
	}
}

/** Where contextd listens: a Unix socket path, or a loopback host and port. */
export interface Endpoint {
	/** Absolute path of contextd's Unix domain socket, for socket endpoints. */
	socketPath?: string;
	host?: string;
	port?: number;
	/** How messages name it: unix:/path or http://host:port. */
	label: string;
}

/** Whether host (no brackets) is localhost, 127.0.0.0/8 or ::1. */
export function isLoopbackHost(host: string): boolean {
	const h = host.toLowerCase();
	return h === "localhost" || h.endsWith(".localhost") || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * Parses an address of contextd: unix:/absolute/path, or http://HOST:PORT
 * with a loopback HOST (no user info, path, query or fragment); an
 * address without a scheme (localhost:7467) is refused saying to add
 * http://. source
 * names where it came from, for the error. Errors: a ContextdError saying
 * what to write instead.
 */
export function parseEndpoint(raw: string, source: string): Endpoint {
	if (raw.startsWith("unix:")) {
		const path = raw.slice("unix:".length).replace(/^\/\/(?=\/)/, "");
		if (!isAbsolute(path)) throw new ContextdError(`${source} ${JSON.stringify(raw)}: a unix: address needs an absolute path, like unix:/home/me/.pi/agent/contextd/contextd.sock`);
		return { socketPath: path, label: `unix:${path}` };
	}
	if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) {
		// "localhost:7467" parses as a URL of scheme "localhost:", "127.0.0.1:7467" not at all.
		throw new ContextdError(`${source} ${JSON.stringify(raw)} has no http://; write it with one: http://${raw.replace(/^\/+/, "")}`);
	}
	let u: URL;
	try {
		u = new URL(raw);
	} catch {
		throw new ContextdError(`${source} ${JSON.stringify(raw)} is not a URL; use http://127.0.0.1:PORT or unix:/path/to/contextd.sock`);
	}
	if (u.protocol !== "http:") {
		throw new ContextdError(`${source} ${JSON.stringify(raw)}: contextd serves http:// on loopback or a unix: socket; ${u.protocol} is not used`);
	}
	const host = u.hostname.replace(/^\[|\]$/g, "");
	if (!isLoopbackHost(host)) {
		throw new ContextdError(`${source} ${JSON.stringify(raw)}: ${host} is not a loopback address; the extension sends its token only to 127.0.0.1, ::1 or localhost (publish a container's port on 127.0.0.1)`);
	}
	if (u.username || u.password || (u.pathname !== "/" && u.pathname !== "") || u.search || u.hash) {
		throw new ContextdError(`${source} ${JSON.stringify(raw)}: write only http://HOST:PORT, without user info, path, query or fragment`);
	}
	const port = u.port ? Number(u.port) : 80;
	return { host, port, label: `http://${u.host}` };
}

/** Why st, a file or directory of the user's, may not be trusted ("" when it may). */
function notPrivate(st: Stats, uid: number | undefined): string {
	if (uid !== undefined && st.uid !== uid) return `it belongs to uid ${st.uid}, not to you (uid ${uid})`;
	if ((st.mode & 0o022) !== 0) return `others may write it (mode ${(st.mode & 0o777).toString(8).padStart(4, "0")})`;
	return "";
}

const myUid = (): number | undefined => (typeof process.getuid === "function" ? process.getuid() : undefined);

/**
 * Reads the discovery file of stateDir and returns the endpoint it names:
 * its socket when it has one, else its URL. undefined when there is no
 * file. Errors (ContextdError): the state directory or the file belongs to
 * another user or others may write it, the file is not a regular file or
 * not a discovery object, or it names an address parseEndpoint refuses.
 */
export function readDiscovery(stateDir: string): Endpoint | undefined {
	const file = join(stateDir, DISCOVERY_FILE);
	const uid = myUid();
	let st: Stats;
	try {
		st = lstatSync(file);
	} catch (err) {
		if ((err as NodeJS.ErrnoException).code === "ENOENT" || (err as NodeJS.ErrnoException).code === "ENOTDIR") return undefined;
		throw new ContextdError(`cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? err})`);
	}
	const dirSt = lstatSync(stateDir);
	const dirWhy = dirSt.isDirectory() ? notPrivate(dirSt, uid) : "it is not a directory";
	if (dirWhy) {
		throw new ContextdError(`the contextd state directory ${stateDir} cannot be trusted: ${dirWhy}, so another user could redirect the extension. Use a directory of your own: \`chmod 700 ${stateDir}\` if it is yours, else set CONTEXTD_STATE_DIR (and contextd's --state-dir) to one`);
	}
	const why = st.isFile() ? notPrivate(st, uid) : "it is not a regular file";
	if (why) throw new ContextdError(`the discovery file ${file} cannot be trusted: ${why}. Stop contextd, delete the file and start contextd again`);
	let d: { url?: unknown; socket?: unknown };
	try {
		d = JSON.parse(readFileSync(file, "utf8")) as { url?: unknown; socket?: unknown };
	} catch {
		throw new ContextdError(`the discovery file ${file} is not contextd's JSON; delete it and start contextd again`);
	}
	if (typeof d.socket === "string" && d.socket !== "") {
		if (!isAbsolute(d.socket)) throw new ContextdError(`the discovery file ${file} names the socket ${JSON.stringify(d.socket)}, not an absolute path; delete it and start contextd again`);
		return { socketPath: d.socket, label: `unix:${d.socket}` };
	}
	if (typeof d.url !== "string") throw new ContextdError(`the discovery file ${file} names no url; delete it and start contextd again`);
	return parseEndpoint(d.url, `the discovery file ${file} names`);
}

/**
 * Reads the token in file: a regular file of this user that nobody else
 * may read or write (a token others could write would let them answer the
 * proof). Errors: one sentence naming the file and what to do.
 */
export function readToken(file: string): string {
	let st: Stats;
	try {
		st = lstatSync(file);
	} catch (err) {
		throw new ContextdError(`cannot read the contextd token file ${file} (${(err as NodeJS.ErrnoException).code ?? err}); start contextd once to create it, or set CONTEXTD_TOKEN_FILE`);
	}
	const uid = myUid();
	if (!st.isFile()) throw new ContextdError(`the contextd token file ${file} is not a regular file; delete it and restart contextd to make a new one`);
	if (uid !== undefined && st.uid !== uid) throw new ContextdError(`the contextd token file ${file} belongs to uid ${st.uid}, not to you (uid ${uid}); delete it and restart contextd to make one of your own`);
	if ((st.mode & 0o077) !== 0) throw new ContextdError(`the contextd token file ${file} may be read or written by others (mode ${(st.mode & 0o777).toString(8).padStart(4, "0")}); run \`chmod 600 ${file}\``);
	return readFileSync(file, "utf8").trim();
}

/** The proof contextd answers for challenge: hex(HMAC-SHA256(token, PROOF_CONTEXT + challenge)). */
export function proofOf(token: string, challenge: string): string {
	return createHmac("sha256", token).update(PROOF_CONTEXT + challenge).digest("hex");
}

/** One HTTP answer: status, body text and its Content-Type ("" when none). */
export interface Answer {
	status: number;
	text: string;
	contentType?: string;
}

/** A request to send: method, path (with query), headers, body text. */
export interface Outgoing {
	method: string;
	path: string;
	headers?: Record<string, string>;
	body?: string;
	timeoutMs: number;
	/** Largest body read, in bytes; a longer answer is an error. Default 64 MiB. */
	maxBytes?: number;
}

/**
 * A connection to contextd at one endpoint that sends the token only on
 * connections where contextd proved it holds it. At most one connection
 * is open (kept alive between requests); when contextd closes it, the next
 * request proves the new one first.
 */
export class Transport {
	readonly endpoint: Endpoint;
	private readonly token: string;
	private readonly tokenFile: string;
	private readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });
	private readonly proven = new WeakSet<Socket>();

	constructor(endpoint: Endpoint, token: string, tokenFile: string) {
		this.endpoint = endpoint;
		this.token = token;
		this.tokenFile = tokenFile;
	}

	/** Closes the kept-alive connection. */
	close(): void {
		this.agent.destroy();
	}

	/**
	 * Sends req with the token header on a proven connection and returns
	 * the answer. Errors: a ContextdError (status 0) when contextd cannot be
	 * reached or does not prove it holds the token; its message says so.
	 */
	async send(req: Outgoing): Promise<Answer> {
		for (let attempt = 0; attempt < 3; attempt++) {
			const a = await this.once({ ...req, headers: { ...req.headers, "X-Contextd-Token": this.token } }, true);
			if (a) return a;
			await this.prove(req.timeoutMs);
		}
		throw new ContextdError(`contextd at ${this.endpoint.label} keeps closing its connection before a request; retry`);
	}

	/**
	 * Asks the listener to prove it holds the token (a fresh 32-byte
	 * challenge) and marks the connection proven. Errors: ContextdError
	 * saying the listener is not the contextd of the token file.
	 */
	async prove(timeoutMs = 5000): Promise<void> {
		const challenge = randomBytes(32).toString("hex");
		let sock: Socket | undefined;
		const a = await this.once({ method: "GET", path: `${PROOF_PATH}?challenge=${challenge}`, timeoutMs, maxBytes: 4096 }, false, (s) => (sock = s));
		let proof: unknown;
		try {
			proof = (JSON.parse(a!.text) as { proof?: unknown }).proof;
		} catch {
			proof = undefined;
		}
		const want = Buffer.from(proofOf(this.token, challenge));
		const got = Buffer.from(typeof proof === "string" ? proof : "");
		if (a!.status !== 200 || got.length !== want.length || !timingSafeEqual(got, want)) {
			throw new ContextdError(
				`the server at ${this.endpoint.label} did not prove it holds the token of ${this.tokenFile} (HTTP ${a!.status}), so nothing was sent to it: ` +
					`it is another program, an older contextd, or a contextd with another state directory. Start contextd (\`contextd serve\`) for this state directory, or point CONTEXTD_STATE_DIR at the one it uses, then /reload`,
			);
		}
		if (sock) this.proven.add(sock);
	}

	/**
	 * One request. When onlyProven, it is written only if the connection
	 * it gets was proven; otherwise it is dropped unsent and the answer is
	 * undefined.
	 */
	private once(req: Outgoing, onlyProven: boolean, onSocket?: (s: Socket) => void): Promise<Answer | undefined> {
		const ep = this.endpoint;
		const body = req.body;
		const headers: Record<string, string> = { ...req.headers };
		if (body !== undefined) headers["Content-Length"] = String(Buffer.byteLength(body));
		const opts: RequestOptions = { method: req.method, path: req.path, headers, agent: this.agent, signal: AbortSignal.timeout(req.timeoutMs) };
		if (ep.socketPath) {
			opts.socketPath = ep.socketPath;
			opts.host = "localhost";
		} else {
			opts.host = ep.host;
			opts.port = ep.port;
		}
		const max = req.maxBytes ?? 64 << 20;
		return new Promise((resolve, reject) => {
			const fail = (err: unknown) => {
				const code = (err as NodeJS.ErrnoException).code ?? "";
				reject(new UnreachableError(`contextd is not reachable at ${ep.label} (${code || (err as Error).message}); start it with \`contextd serve\` and retry`, code));
			};
			const r = httpRequest(opts, (res: IncomingMessage) => {
				const chunks: Buffer[] = [];
				let n = 0;
				res.on("data", (c: Buffer) => {
					n += c.length;
					if (n > max) {
						r.destroy(new Error(`answer over ${max} bytes`));
						return;
					}
					chunks.push(c);
				});
				res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8"), contentType: String(res.headers["content-type"] ?? "") }));
				res.on("error", fail);
			});
			r.on("error", fail);
			r.on("socket", (s: Socket) => {
				onSocket?.(s);
				if (onlyProven && !this.proven.has(s)) {
					// Nothing is written before end(): drop the request and
					// its unproven connection unsent.
					r.removeAllListeners("error");
					r.on("error", () => {});
					r.destroy();
					s.destroy();
					resolve(undefined);
					return;
				}
				r.end(body);
			});
		});
	}
}

/**
 * Whether something answers GET /healthz at the address label (an
 * Endpoint's label) within timeoutMs. Nothing secret is sent.
 */
export async function healthy(label: string, timeoutMs = 1500): Promise<boolean> {
	let ep: Endpoint;
	try {
		ep = parseEndpoint(label, "address");
	} catch {
		return false;
	}
	const opts: RequestOptions = { method: "GET", path: "/healthz", agent: false, signal: AbortSignal.timeout(timeoutMs) };
	if (ep.socketPath) opts.socketPath = ep.socketPath;
	else Object.assign(opts, { host: ep.host, port: ep.port });
	return new Promise((resolve) => {
		const r = httpRequest(opts, (res) => {
			res.resume();
			resolve(res.statusCode === 200);
		});
		r.on("error", () => resolve(false));
		r.end();
	});
}
