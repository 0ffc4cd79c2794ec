// Starting contextd for Pi (docs/install.md "Starts by itself"): which
// binary, when to start it, the version handshake with a running one, and
// which Pi processes use it.
//
// Binary, first found: the configured path (CONTEXTD_BIN, settings.json
// "binary": a person's explicit choice), the binary of this platform
// bundled as the npm package pi-contextd-<platform>-<arch> (an optional
// dependency of pi-contextd), then `contextd` on PATH. Auto-start is on by
// default only with the bundled binary; CONTEXTD_AUTOSTART=0/1 decides
// otherwise.
//
// One contextd per state directory: contextd locks it (store.LockStateDir),
// so of two Pis starting one at once, the second contextd exits and both
// use the first, found through the discovery file <state-dir>/contextd.json
// ({url, pid, version}). A started contextd is detached from Pi, logs to
// <state-dir>/contextd.log, and is recorded in <state-dir>/autostart.json.
// Each Pi using contextd leaves <state-dir>/clients/<pid> while it runs.
//
// Version handshake: the discovery file's version against this extension's
// package.json version (release builds stamp the same version into both,
// release/build.sh). On a difference the Pi is told; a contextd that Pi
// started and no other live Pi uses is stopped and the bundled binary
// started instead. Builds from source (pseudo-versions, "(devel)") are not
// compared.
import { spawn } from "node:child_process";
import { accessSync, chmodSync, closeSync, constants, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { delimiter, dirname, join } from "node:path";

/** The discovery file's record ({url, pid, version}) as launcher.ts reads it, after transport.ts's ownership and mode checks; undefined when there is none. */
export interface Discovery {
	url: string;
	pid: number;
	version: string;
}

/** Where the binary came from. */
export type BinarySource = "configured" | "bundled" | "path";

/** The contextd binary the launcher starts: its path, where it came from and, when bundled, its version. */
export interface Binary {
	path: string;
	source: BinarySource;
	/** The bundled package's version (= the binary's release version); undefined for the others. */
	version?: string;
}

/** The npm package holding the contextd binary of a Node platform and arch, e.g. pi-contextd-linux-x64. */
export const PLATFORM_PACKAGES: Readonly<Record<string, string>> = {
	"linux-x64": "pi-contextd-linux-x64",
	"linux-arm64": "pi-contextd-linux-arm64",
	"darwin-x64": "pi-contextd-darwin-x64",
	"darwin-arm64": "pi-contextd-darwin-arm64",
};

/** What the launcher needs from its environment; tests replace parts of it. */
export interface Host {
	platform: string;
	arch: string;
	/** PATH, split on the platform's delimiter. */
	pathDirs: string[];
	/** The directory of an installed npm package, or undefined. */
	packageDir(name: string): string | undefined;
	/** This extension's package.json version. */
	extensionVersion: string;
	pid: number;
	/** The --addr of a contextd started without an explicit URL. */
	defaultAddr(): Promise<string>;
}

const requireHere = createRequire(import.meta.url);

/** The host this extension runs on. */
export function currentHost(): Host {
	return {
		platform: process.platform,
		arch: process.arch,
		pathDirs: (process.env.PATH ?? "").split(delimiter).filter((d) => d !== ""),
		packageDir(name) {
			try {
				return dirname(requireHere.resolve(`${name}/package.json`));
			} catch {
				return undefined;
			}
		},
		extensionVersion: (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version,
		pid: process.pid,
		defaultAddr,
	};
}

function executable(p: string): boolean {
	try {
		accessSync(p, constants.X_OK);
		return statSync(p).isFile();
	} catch {
		return false;
	}
}

/**
 * The contextd binary to start: configured (when set), else bundled for
 * host's platform, else `contextd` on PATH; undefined when there is none.
 * A bundled binary that lost its execute bit (some archive tools drop it)
 * gets it back.
 */
export function resolveBinary(configured: string | undefined, host: Host): Binary | undefined {
	if (configured) return { path: configured, source: "configured" };
	const pkg = PLATFORM_PACKAGES[`${host.platform}-${host.arch}`];
	const dir = pkg ? host.packageDir(pkg) : undefined;
	if (dir) {
		const path = join(dir, "bin", "contextd");
		try {
			if (!executable(path)) chmodSync(path, 0o755);
			const version = (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string }).version;
			return { path, source: "bundled", version };
		} catch {
			// a damaged package: fall through to PATH
		}
	}
	for (const d of host.pathDirs) {
		const path = join(d, "contextd");
		if (executable(path)) return { path, source: "path" };
	}
	return undefined;
}

/** Whether to start contextd when none answers: the explicit setting, else only with the bundled binary. */
export function autoStartOn(autoStart: boolean | undefined, bin: Binary | undefined): boolean {
	return autoStart ?? bin?.source === "bundled";
}

/** "v1.2.3" or "1.2.3" → "1.2.3"; a pseudo-version, "(devel)" or anything else → undefined (not compared). */
export function releaseVersion(v: string | undefined): string | undefined {
	const m = /^v?(\d+\.\d+\.\d+)$/.exec(v ?? "");
	return m ? m[1] : undefined;
}

/** -1, 0 or 1 as release version a is older than, equal to or newer than b. */
export function compareVersions(a: string, b: string): number {
	const pa = a.split(".").map(Number);
	const pb = b.split(".").map(Number);
	for (let i = 0; i < 3; i++) {
		if (pa[i] !== pb[i]) return pa[i] < pb[i] ? -1 : 1;
	}
	return 0;
}

/**
 * Whether process pid runs: signal 0 reaches it (EPERM: it exists under
 * another user) and, where /proc tells (Linux), it is not a zombie whose
 * parent has not reaped it (proc(5): the state after the command name in
 * /proc/PID/stat).
 */
export function alive(pid: number): boolean {
	try {
		process.kill(pid, 0);
	} catch (err) {
		return (err as NodeJS.ErrnoException).code === "EPERM";
	}
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
		return stat[stat.lastIndexOf(")") + 2] !== "Z";
	} catch {
		return true;
	}
}

function clientsDir(stateDir: string): string {
	return join(stateDir, "clients");
}

/** The client files of this process, removed when it exits (one exit handler for all). */
const ownClientFiles = new Set<string>();

/** Records that Pi process pid uses the contextd of stateDir, until it exits. */
export function registerClient(stateDir: string, pid: number): void {
	const dir = clientsDir(stateDir);
	mkdirSync(dir, { recursive: true, mode: 0o700 });
	const file = join(dir, String(pid));
	writeFileSync(file, "");
	if (pid !== process.pid || ownClientFiles.has(file)) return;
	if (ownClientFiles.size === 0) {
		process.once("exit", () => {
			for (const f of ownClientFiles) rmSync(f, { force: true });
		});
	}
	ownClientFiles.add(file);
}

/** The live Pi processes other than self that use the contextd of stateDir; files of dead ones are removed. */
export function otherClients(stateDir: string, self: number, isAlive: (pid: number) => boolean = alive): number[] {
	let names: string[];
	try {
		names = readdirSync(clientsDir(stateDir));
	} catch {
		return [];
	}
	const out: number[] = [];
	for (const n of names) {
		const pid = Number(n);
		if (!Number.isInteger(pid) || pid <= 0 || pid === self) continue;
		if (isAlive(pid)) out.push(pid);
		else rmSync(join(clientsDir(stateDir), n), { force: true });
	}
	return out.sort((a, b) => a - b);
}

/** The record of the contextd a Pi started in stateDir. */
export interface AutoStart {
	pid: number;
	binary: string;
	version?: string;
}

/** Reads <stateDir>/autostart.json; undefined when it is missing, not JSON or has no numeric pid. */
export function readAutoStart(stateDir: string): AutoStart | undefined {
	try {
		const a = JSON.parse(readFileSync(join(stateDir, "autostart.json"), "utf8")) as AutoStart;
		return typeof a.pid === "number" ? a : undefined;
	} catch {
		return undefined;
	}
}

/** What launch and adopt tell connect: the URL to use and sentences for the person running Pi. */
export interface Launched {
	url: string;
	notices: string[];
}

/** How launch and adopt reach contextd; tests replace them. */
export interface Probe {
	healthy(url: string, timeoutMs?: number): Promise<boolean>;
	readDiscovery(stateDir: string): Discovery | undefined;
}

/** The extension's contextd settings the launcher uses: URL, state directory, binary path and whether to start contextd itself. */
export interface LaunchSettings {
	/** Explicit URL; its host:port is passed as --addr. */
	url?: string;
	stateDir: string;
	binary?: string;
	autoStart?: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** 127.0.0.1:7467 when nothing listens there, else 127.0.0.1:0 (contextd picks a port and writes it to the discovery file). */
async function defaultAddr(): Promise<string> {
	return new Promise((resolve) => {
		const srv = createServer();
		srv.once("error", () => resolve("127.0.0.1:0"));
		srv.listen(7467, "127.0.0.1", () => srv.close(() => resolve("127.0.0.1:7467")));
	});
}

/**
 * Starts bin for s.stateDir, detached, with its output appended to
 * <state-dir>/contextd.log, and waits up to 15 s for the discovery file of
 * a healthy contextd (its own, or that of another Pi's contextd that won
 * the state directory's lock). Errors: one sentence naming the binary and
 * the log.
 */
export async function start(s: LaunchSettings, bin: Binary, probe: Probe, host: Host = currentHost()): Promise<string> {
	mkdirSync(s.stateDir, { recursive: true, mode: 0o700 });
	const log = join(s.stateDir, "contextd.log");
	const fd = openSync(log, "a", 0o600);
	const addr = s.url ? new URL(s.url).host : await host.defaultAddr();
	let failed: string | undefined;
	let exited = false;
	let child;
	try {
		child = spawn(bin.path, ["serve", "--state-dir", s.stateDir, "--addr", addr], { detached: true, stdio: ["ignore", fd, fd] });
	} finally {
		closeSync(fd);
	}
	child.on("error", (err: NodeJS.ErrnoException) => {
		failed = err.code ?? err.message;
	});
	child.on("exit", () => {
		exited = true;
	});
	child.unref();
	const deadline = Date.now() + 15_000;
	let exitedAt = 0;
	while (Date.now() < deadline) {
		if (failed) throw new Error(`cannot start ${bin.path} (${failed}); reinstall with \`pi install npm:pi-contextd\`, put contextd on PATH or set CONTEXTD_BIN`);
		const d = probe.readDiscovery(s.stateDir);
		const url = s.url ? s.url.replace(/\/+$/, "") : d?.url;
		if (url && (await probe.healthy(url, 500))) {
			if (child.pid !== undefined && d?.pid === child.pid) {
				const rec: AutoStart = { pid: child.pid, binary: bin.path, version: bin.version };
				writeFileSync(join(s.stateDir, "autostart.json"), JSON.stringify(rec) + "\n", { mode: 0o600 });
			}
			return url;
		}
		if (exited) {
			// Another Pi's contextd may hold the lock and be about to answer.
			exitedAt ||= Date.now();
			if (Date.now() - exitedAt > 3000) break;
		}
		await sleep(100);
	}
	throw new Error(`${exited ? "started" : "waited 15 s for"} ${bin.path} but it did not answer /healthz; see ${log}`);
}

/** Sends SIGTERM to pid and waits up to 15 s for it to exit. */
export async function stopProcess(pid: number, isAlive: (pid: number) => boolean = alive): Promise<boolean> {
	try {
		process.kill(pid, "SIGTERM");
	} catch {
		return !isAlive(pid);
	}
	for (const deadline = Date.now() + 15_000; Date.now() < deadline; await sleep(100)) {
		if (!isAlive(pid)) return true;
	}
	return false;
}

/**
 * Starts contextd when none answers: resolves the binary and, if
 * auto-start is on, starts it and records this Pi as its client.
 * Undefined when auto-start is off. Errors (Error): one sentence saying
 * what to do.
 */
export async function launch(s: LaunchSettings, probe: Probe, host: Host = currentHost()): Promise<Launched | undefined> {
	const bin = resolveBinary(s.binary, host);
	if (!autoStartOn(s.autoStart, bin)) return undefined;
	if (!bin) {
		throw new Error(
			`no contextd binary to start: \`pi install npm:pi-contextd\` brings one for Linux and macOS (x64, arm64); elsewhere build it (docs/install.md) and put it on PATH or set CONTEXTD_BIN`,
		);
	}
	const url = await start(s, bin, probe, host);
	registerClient(s.stateDir, host.pid);
	return { url, notices: [] };
}

/**
 * Uses the contextd answering at url (d: its discovery file, when it was
 * found through it) after the version handshake, and records this Pi as
 * its client. A release contextd of another version than this extension
 * is reported; when a Pi started it, no other live Pi uses it and the
 * bundled binary is of this extension's version, it is stopped and that
 * one started instead. Errors (Error) only from that restart.
 */
export async function adopt(s: LaunchSettings, url: string, d: Discovery | undefined, probe: Probe, host: Host = currentHost()): Promise<Launched> {
	const notices: string[] = [];
	const running = releaseVersion(d?.version);
	const want = releaseVersion(host.extensionVersion);
	if (d && running && want && running !== want) {
		const age = compareVersions(running, want) < 0 ? "older" : "newer";
		const head = `contextd ${running} is running, ${age} than this extension (${want})`;
		const bin = resolveBinary(s.binary, host);
		const started = readAutoStart(s.stateDir)?.pid === d.pid;
		const others = otherClients(s.stateDir, host.pid);
		if (started && others.length === 0 && bin?.source === "bundled" && bin.version === want && autoStartOn(s.autoStart, bin)) {
			if (await stopProcess(d.pid)) {
				const next = await start(s, bin, probe, host);
				registerClient(s.stateDir, host.pid);
				return { url: next, notices: [`${head}: restarted it with contextd ${want}`] };
			}
			notices.push(`${head}, and it did not stop within 15 s; run \`contextd stop\`, then /reload`);
		} else if (started && others.length > 0) {
			notices.push(`${head}; ${others.length} other Pi ${others.length === 1 ? "session uses" : "sessions use"} it (pid ${others.join(", ")}), so it is restarted with ${want} once they have ended`);
		} else if (!started) {
			notices.push(`${head}; it was not started by Pi (a service?): restart it with contextd ${want}`);
		} else {
			notices.push(`${head}; install contextd ${want} (\`pi install npm:pi-contextd\`), then /reload`);
		}
	}
	registerClient(s.stateDir, host.pid);
	return { url, notices };
}
