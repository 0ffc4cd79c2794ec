// Unit tests of launcher.ts: which binary, when auto-start is on, the
// version handshake, the clients of a state directory, and starting a
// (fake) contextd detached with its log in the state directory.
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { discoveryRecord as readDiscovery, healthy } from "../src/client.ts";
import {
	adopt,
	alive,
	autoStartOn,
	compareVersions,
	type Host,
	launch,
	otherClients,
	readAutoStart,
	registerClient,
	releaseVersion,
	resolveBinary,
} from "../src/launcher.ts";

const probe = { healthy, readDiscovery };

// A stand-in for contextd serve: listens on --addr, writes the discovery
// file with the version of the package.json beside its bin/ (or
// FAKE_VERSION), logs one line, and on SIGTERM removes the file and exits.
// It is detached, as contextd is; it also exits once the test process that
// started it is gone (its parent changes), so a test run that fails or is
// killed leaves no fake contextd behind.
const FAKE = `#!${process.execPath}
const http = require("node:http"), fs = require("node:fs"), path = require("node:path");
const arg = (f) => process.argv[process.argv.indexOf(f) + 1];
const state = arg("--state-dir"), [host, port] = arg("--addr").split(":");
let version = process.env.FAKE_VERSION;
try { version ??= "v" + JSON.parse(fs.readFileSync(path.join(__dirname, "..", "package.json"), "utf8")).version; } catch { version = "(devel)"; }
const disc = path.join(state, "contextd.json");
const srv = http.createServer((req, res) => res.end('{"status":"ok"}'));
srv.listen(Number(port), host, () => {
	fs.writeFileSync(disc, JSON.stringify({ url: "http://" + host + ":" + srv.address().port, pid: process.pid, version }));
	console.log("fake contextd " + version + " listening");
});
const stop = () => { try { fs.rmSync(disc); } catch {} process.exit(0); };
process.on("SIGTERM", stop);
const parent = process.ppid;
setInterval(() => { if (process.ppid !== parent) stop(); }, 200);
`;

/** Every directory tmp made: removed, with any fake still running in them, when the file's tests end. */
const made: string[] = [];

function tmp(): string {
	const d = mkdtempSync(join(tmpdir(), "ctxd-launch-"));
	made.push(d);
	return d;
}

/** The pids a state directory names (discovery file, autostart.json), searched below dir. */
function fakePids(dir: string): number[] {
	const pids: number[] = [];
	for (const f of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
		if (!f.endsWith("contextd.json") && !f.endsWith("autostart.json")) continue;
		try {
			const pid = (JSON.parse(readFileSync(join(dir, f), "utf8")) as { pid?: unknown }).pid;
			if (typeof pid === "number" && pid !== process.pid) pids.push(pid);
		} catch {
			// half-written or removed meanwhile
		}
	}
	return pids;
}

// Whatever a test left (an assertion failed before its own t.after was
// registered): every fake still running is stopped and every directory removed.
after(() => {
	for (const d of made) {
		for (const pid of fakePids(d)) {
			try {
				process.kill(pid, "SIGKILL");
			} catch {
				// already gone
			}
		}
		rmSync(d, { recursive: true, force: true });
	}
});

/** A platform package dir pi-contextd-linux-x64 of version holding the fake (mode: its file mode). */
function bundledPackage(version: string, mode = 0o755): string {
	const dir = join(tmp(), "pi-contextd-linux-x64");
	mkdirSync(join(dir, "bin"), { recursive: true });
	writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "pi-contextd-linux-x64", version }));
	writeFileSync(join(dir, "bin", "contextd"), FAKE);
	chmodSync(join(dir, "bin", "contextd"), mode);
	return dir;
}

function host(over: Partial<Host> = {}): Host {
	return {
		platform: "linux",
		arch: "x64",
		pathDirs: [],
		packageDir: () => undefined,
		extensionVersion: "0.1.0",
		pid: process.pid,
		defaultAddr: async () => "127.0.0.1:0",
		...over,
	};
}

test("resolveBinary: configured, else bundled for the platform, else contextd on PATH", () => {
	const pkg = bundledPackage("0.1.0", 0o644);
	const pathDir = tmp();
	writeFileSync(join(pathDir, "contextd"), "#!/bin/sh\n");
	chmodSync(join(pathDir, "contextd"), 0o755);
	const h = host({ pathDirs: ["/nonexistent", pathDir], packageDir: (n) => (n === "pi-contextd-linux-x64" ? pkg : undefined) });

	assert.deepEqual(resolveBinary("/opt/contextd", h), { path: "/opt/contextd", source: "configured" });
	assert.deepEqual(resolveBinary(undefined, h), { path: join(pkg, "bin", "contextd"), source: "bundled", version: "0.1.0" });
	// npm left the file without its execute bit: it is given back.
	assert.equal(statSync(join(pkg, "bin", "contextd")).mode & 0o777, 0o755);
	// Another platform has no package here: PATH.
	assert.deepEqual(resolveBinary(undefined, { ...h, platform: "win32" }), { path: join(pathDir, "contextd"), source: "path" });
	assert.equal(resolveBinary(undefined, { ...h, platform: "win32", pathDirs: [] }), undefined);
});

test("autoStartOn: the setting wins; unset means on only with the bundled binary", () => {
	const bundled = { path: "/b", source: "bundled" as const };
	const onPath = { path: "/p", source: "path" as const };
	assert.equal(autoStartOn(undefined, bundled), true);
	assert.equal(autoStartOn(undefined, onPath), false);
	assert.equal(autoStartOn(undefined, undefined), false);
	assert.equal(autoStartOn(false, bundled), false);
	assert.equal(autoStartOn(true, onPath), true);
});

test("releaseVersion and compareVersions: release versions compared by number, source builds not at all", () => {
	assert.equal(releaseVersion("v0.1.0"), "0.1.0");
	assert.equal(releaseVersion("0.10.2"), "0.10.2");
	assert.equal(releaseVersion("v0.0.0-20261130230402-c9920143f899"), undefined);
	assert.equal(releaseVersion("(devel)"), undefined);
	assert.equal(releaseVersion(undefined), undefined);
	assert.equal(compareVersions("0.9.0", "0.10.0"), -1);
	assert.equal(compareVersions("1.0.0", "0.10.0"), 1);
	assert.equal(compareVersions("0.1.0", "0.1.0"), 0);
});

test("otherClients: live pids but self; files of dead ones removed", () => {
	const state = tmp();
	for (const pid of [111, 222, 333, process.pid]) registerClient(state, pid);
	const live = new Set([111, 333, process.pid]);
	assert.deepEqual(otherClients(state, process.pid, (p) => live.has(p)), [111, 333]);
	assert.equal(existsSync(join(state, "clients", "222")), false);
	assert.equal(existsSync(join(state, "clients", String(process.pid))), true);
	assert.deepEqual(otherClients(tmp(), process.pid), []);
	// Every session start registers again: one exit handler removes all of this process's files.
	const listeners = process.listenerCount("exit");
	for (let i = 0; i < 20; i++) registerClient(state, process.pid);
	registerClient(tmp(), process.pid);
	assert.equal(process.listenerCount("exit"), listeners);
});

test("launch: off without a bundled binary unless asked; no binary is one sentence", async () => {
	const state = tmp();
	assert.equal(await launch({ stateDir: state }, probe, host()), undefined);
	assert.equal(await launch({ stateDir: state, autoStart: false }, probe, host({ packageDir: () => bundledPackage("0.1.0") })), undefined);
	await assert.rejects(launch({ stateDir: state, autoStart: true }, probe, host()), {
		message:
			"no contextd binary to start: `pi install npm:pi-contextd` brings one for Linux and macOS (x64, arm64); elsewhere build it (docs/install.md) and put it on PATH or set CONTEXTD_BIN",
	});
});

test("launch: starts the bundled binary detached, logs to the state dir, records it; adopt keeps a same-version contextd", async (t) => {
	const state = join(tmp(), "agent", "contextd"); // created by launch
	const pkg = bundledPackage("0.1.0");
	const h = host({ packageDir: () => pkg });
	const l = await launch({ stateDir: state }, probe, h);
	assert.ok(l);
	const d = readDiscovery(state);
	assert.ok(d);
	t.after(() => {
		if (alive(d.pid)) process.kill(d.pid, "SIGTERM");
	});
	assert.equal(l.url, d.url);
	assert.deepEqual(l.notices, []);
	assert.equal(d.version, "v0.1.0");
	assert.deepEqual(readAutoStart(state), { pid: d.pid, binary: join(pkg, "bin", "contextd"), version: "0.1.0" });
	assert.equal(existsSync(join(state, "clients", String(process.pid))), true);
	assert.equal(await healthy(l.url), true);
	// Its output went to the log file in the state dir.
	for (let i = 0; i < 50 && !readFileSync(join(state, "contextd.log"), "utf8").includes("listening"); i++) await new Promise((r) => setTimeout(r, 20));
	assert.equal(readFileSync(join(state, "contextd.log"), "utf8"), "fake contextd v0.1.0 listening\n");

	const a = await adopt({ stateDir: state }, d.url, d, probe, h);
	assert.deepEqual(a, { url: d.url, notices: [] });
});

test("adopt: an older contextd Pi started and no other Pi uses is restarted with the bundled binary", async (t) => {
	const state = tmp();
	const old = await launch({ stateDir: state }, probe, host({ packageDir: () => bundledPackage("0.0.9") }));
	assert.ok(old);
	const d = readDiscovery(state);
	assert.ok(d);
	assert.equal(d.version, "v0.0.9");
	const h = host({ packageDir: () => bundledPackage("0.1.0") });
	const a = await adopt({ stateDir: state }, d.url, d, probe, h);
	const now = readDiscovery(state);
	assert.ok(now);
	t.after(() => {
		if (alive(now.pid)) process.kill(now.pid, "SIGTERM");
	});
	assert.deepEqual(a.notices, ["contextd 0.0.9 is running, older than this extension (0.1.0): restarted it with contextd 0.1.0"]);
	assert.equal(alive(d.pid), false);
	assert.notEqual(now.pid, d.pid);
	assert.equal(now.version, "v0.1.0");
	assert.equal(a.url, now.url);
	assert.equal(readAutoStart(state)?.pid, now.pid);
});

test("adopt: another version used by another Pi, or not started by Pi, is only reported", async (t) => {
	const state = tmp();
	const h = host({ packageDir: () => bundledPackage("0.1.0") });
	await launch({ stateDir: state }, probe, host({ packageDir: () => bundledPackage("0.2.0") }));
	const d = readDiscovery(state);
	assert.ok(d);
	t.after(() => {
		if (alive(d.pid)) process.kill(d.pid, "SIGTERM");
	});
	// The test runner's parent stands for another live Pi.
	registerClient(state, process.ppid);
	const a = await adopt({ stateDir: state }, d.url, d, probe, h);
	assert.deepEqual(a, {
		url: d.url,
		notices: [`contextd 0.2.0 is running, newer than this extension (0.1.0); 1 other Pi session uses it (pid ${process.ppid}), so it is restarted with 0.1.0 once they have ended`],
	});
	assert.equal(alive(d.pid), true);

	const service = { ...d, pid: d.pid + 100000 }; // not the pid autostart.json names
	const b = await adopt({ stateDir: state }, d.url, service, probe, h);
	assert.deepEqual(b.notices, ["contextd 0.2.0 is running, newer than this extension (0.1.0); it was not started by Pi (a service?): restart it with contextd 0.1.0"]);
	// A source build is not compared.
	const c = await adopt({ stateDir: state }, d.url, { ...d, version: "v0.0.0-20261130230402-c9920143f899" }, probe, h);
	assert.deepEqual(c.notices, []);
});
