// HTTP client of contextd: discovery (<state-dir>/contextd.json), the token
// file, optional auto-start, and calls that turn every failure into one
// sentence a model or a person can act on.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_URL, type Settings } from "./settings.ts";

/** A failed call to contextd; message is the text shown to the model or user. */
export class ContextdError extends Error {
	constructor(
		message: string,
		readonly status = 0,
	) {
		super(message);
	}
}

export interface Discovery {
	url: string;
	pid: number;
	version: string;
}

export function readDiscovery(stateDir: string): Discovery | undefined {
	try {
		const d = JSON.parse(readFileSync(join(stateDir, "contextd.json"), "utf8")) as Discovery;
		return typeof d.url === "string" ? d : undefined;
	} catch {
		return undefined;
	}
}

export async function healthy(url: string, timeoutMs = 1500): Promise<boolean> {
	try {
		const r = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(timeoutMs) });
		return r.ok;
	} catch {
		return false;
	}
}

export class Contextd {
	constructor(
		readonly url: string,
		private readonly token: string,
	) {}

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
			try {
				const p = JSON.parse(text) as { detail?: string; title?: string; errors?: { message?: string; location?: string }[] };
				detail = p.detail ?? p.title ?? text;
				if (p.errors?.length) {
					detail += ` (${p.errors.map((e) => `${e.location ?? ""}: ${e.message ?? ""}`).join("; ")})`;
				}
			} catch {
				// not problem+json: keep the body text
			}
			throw new ContextdError(`contextd ${res.status}: ${detail}`, res.status);
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
