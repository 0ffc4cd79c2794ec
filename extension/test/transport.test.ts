// The extension talks only to its own contextd (transport.ts): addresses,
// the discovery file's owner and mode checks, the token file's, the proof
// on every connection before the token goes out, Unix sockets, and the
// client's re-read of the discovery file and token after a 401 or a
// contextd that moved.
import assert from "node:assert/strict";
import { chmodSync, chownSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { Contextd, connect } from "../src/client.ts";
import type { Settings } from "../src/settings.ts";
import { ContextdError, parseEndpoint, proofOf, readDiscovery, readToken, Transport, UnreachableError } from "../src/transport.ts";

const TOKEN = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/** What a server saw: every request, with the connection it came on and whether that connection served a proof first. */
interface Seen {
	path: string;
	token?: string;
	auth?: string;
	body: string;
	provenConn: boolean;
}

/**
 * An HTTP server on 127.0.0.1 (or the Unix socket sock) that answers the
 * proof with token's HMAC (or garbage when token is undefined: a
 * squatter), and every other request with answer(req).
 */
async function serve(token: string | undefined | { t: string }, answer: (path: string, tok?: string) => [number, unknown], sock?: string): Promise<{ srv: Server; seen: Seen[]; url: string; close: () => Promise<void> }> {
	const seen: Seen[] = [];
	const proven = new WeakSet<Socket>();
	const srv = createServer((req: IncomingMessage, res: ServerResponse) => {
		let body = "";
		req.on("data", (d) => (body += d));
		req.on("end", () => {
			const u = new URL(req.url ?? "/", "http://x");
			seen.push({ path: u.pathname, token: req.headers["x-contextd-token"] as string | undefined, auth: req.headers.authorization, body, provenConn: proven.has(req.socket) });
			if (u.pathname === "/v1/proof") {
				const c = u.searchParams.get("challenge") ?? "";
				const tok = typeof token === "object" ? token.t : token;
				if (tok !== undefined) proven.add(req.socket);
				res.writeHead(200, { "Content-Type": "application/json" });
				res.end(JSON.stringify({ proof: tok !== undefined ? proofOf(tok, c) : "0".repeat(64) }));
				return;
			}
			const [status, a] = answer(u.pathname, req.headers["x-contextd-token"] as string | undefined);
			res.writeHead(status, { "Content-Type": "application/json" });
			res.end(JSON.stringify(a));
		});
	});
	if (sock) await new Promise<void>((r) => srv.listen(sock, r));
	else await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
	const url = sock ? `unix:${sock}` : `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
	return {
		srv,
		seen,
		url,
		close: () =>
			new Promise<void>((r) => {
				srv.closeAllConnections();
				srv.close(() => r());
			}),
	};
}

/** A private state directory with a token file and, when disc is given, a discovery file. */
function stateDir(disc?: unknown, token = TOKEN): { dir: string; settings: Settings } {
	const dir = mkdtempSync(join(tmpdir(), "ctxd-transport-"));
	chmodSync(dir, 0o700);
	writeFileSync(join(dir, "token"), token + "\n", { mode: 0o600 });
	if (disc !== undefined) writeFileSync(join(dir, "contextd.json"), JSON.stringify(disc), { mode: 0o600 });
	const settings = { mode: "local", stateDir: dir, tokenFile: join(dir, "token"), binary: "contextd", autoStart: false, agentName: "/root", notesGuard: "warn", reminderThresholds: [] } as Settings;
	return { dir, settings };
}

test("proofOf: the vector api/proof_test.go TestProofVector pins (computed with Python's hmac)", () => {
	assert.equal(proofOf(TOKEN, "00112233445566778899aabbccddeeff"), "750927707a3309357cd2ff10a38235fa1a12735707f5e44febd366f742b13386");
});

test("parseEndpoint: http on loopback or unix:/abs only", () => {
	assert.deepEqual(parseEndpoint("http://127.0.0.1:7467", "x"), { host: "127.0.0.1", port: 7467, label: "http://127.0.0.1:7467" });
	assert.deepEqual(parseEndpoint("http://[::1]:9", "x"), { host: "::1", port: 9, label: "http://[::1]:9" });
	assert.deepEqual(parseEndpoint("http://localhost:5/", "x"), { host: "localhost", port: 5, label: "http://localhost:5" });
	assert.deepEqual(parseEndpoint("unix:/run/c.sock", "x"), { socketPath: "/run/c.sock", label: "unix:/run/c.sock" });
	for (const [raw, why] of [
		["https://127.0.0.1:1", /https: is not used/],
		["ftp://127.0.0.1:1", /ftp: is not used/],
		["http://10.0.0.5:7467", /10\.0\.0\.5 is not a loopback address/],
		["http://evil.example:7467", /evil\.example is not a loopback address/],
		["http://127.0.0.1:1/?a=b", /without user info, path, query or fragment/],
		["http://127.0.0.1:1/#x", /without user info, path, query or fragment/],
		["http://u:p@127.0.0.1:1", /without user info/],
		["http://127.0.0.1:1/api", /without user info, path/],
		["unix:rel.sock", /absolute path/],
	] as const) {
		assert.throws(() => parseEndpoint(raw, "CONTEXTD_URL"), (e: unknown) => e instanceof ContextdError && why.test(e.message) && e.message.startsWith("CONTEXTD_URL"), raw);
	}
});

test("parseEndpoint: an address without http:// is refused saying to add it", () => {
	for (const raw of ["localhost:7467", "127.0.0.1:7467", "[::1]:7467"]) {
		assert.throws(() => parseEndpoint(raw, "CONTEXTD_URL"), { message: `CONTEXTD_URL "${raw}" has no http://; write it with one: http://${raw}` });
	}
});

test("readDiscovery: socket preferred, no file is undefined, others' or writable files and directories refused", () => {
	const { dir } = stateDir();
	assert.equal(readDiscovery(dir), undefined);
	writeFileSync(join(dir, "contextd.json"), JSON.stringify({ url: "http://127.0.0.1:4000", socket: join(dir, "contextd.sock"), pid: 1, version: "v" }), { mode: 0o600 });
	assert.deepEqual(readDiscovery(dir), { socketPath: join(dir, "contextd.sock"), label: `unix:${join(dir, "contextd.sock")}` });
	writeFileSync(join(dir, "contextd.json"), JSON.stringify({ url: "http://127.0.0.1:4000", pid: 1, version: "v" }), { mode: 0o600 });
	assert.deepEqual(readDiscovery(dir), { host: "127.0.0.1", port: 4000, label: "http://127.0.0.1:4000" });
	writeFileSync(join(dir, "contextd.json"), JSON.stringify({ url: "http://192.168.1.2:4000" }), { mode: 0o600 });
	assert.throws(() => readDiscovery(dir), /192\.168\.1\.2 is not a loopback address/);
	writeFileSync(join(dir, "contextd.json"), JSON.stringify({ url: "https://127.0.0.1:4000" }), { mode: 0o600 });
	assert.throws(() => readDiscovery(dir), /https: is not used/);
	writeFileSync(join(dir, "contextd.json"), JSON.stringify({ url: "http://127.0.0.1:4000" }), { mode: 0o600 });
	chmodSync(join(dir, "contextd.json"), 0o666);
	assert.throws(() => readDiscovery(dir), /discovery file .* cannot be trusted: others may write it \(mode 0666\)/);
	chmodSync(join(dir, "contextd.json"), 0o600);
	chmodSync(dir, 0o777);
	assert.throws(() => readDiscovery(dir), /state directory .* cannot be trusted: others may write it \(mode 0777\).*chmod 700/);
	chmodSync(dir, 0o700);
	rmSync(dir, { recursive: true });
});

test("readDiscovery and readToken: a file or directory of another user is refused", (t) => {
	if (process.getuid?.() !== 0) {
		t.skip("changing a file's owner needs root");
		return;
	}
	const { dir } = stateDir({ url: "http://127.0.0.1:4000" });
	chownSync(join(dir, "contextd.json"), 65534, 65534);
	assert.throws(() => readDiscovery(dir), /discovery file .* cannot be trusted: it belongs to uid 65534, not to you \(uid 0\)/);
	chownSync(join(dir, "contextd.json"), 0, 0);
	chownSync(dir, 65534, 65534);
	assert.throws(() => readDiscovery(dir), /state directory .* cannot be trusted: it belongs to uid 65534/);
	chownSync(dir, 0, 0);
	chownSync(join(dir, "token"), 65534, 65534);
	assert.throws(() => readToken(join(dir, "token")), /token file .* belongs to uid 65534, not to you/);
	rmSync(dir, { recursive: true });
});

test("readToken: a token others may read or write is refused (they could answer the proof)", () => {
	const { dir } = stateDir();
	assert.equal(readToken(join(dir, "token")), TOKEN);
	chmodSync(join(dir, "token"), 0o644);
	assert.throws(() => readToken(join(dir, "token")), /may be read or written by others \(mode 0644\); run `chmod 600/);
	rmSync(dir, { recursive: true });
});

test("a squatter that cannot prove the token gets nothing but the proof request", async () => {
	const sq = await serve(undefined, () => [200, { append: [{ customType: "codex-context-window", content: "obey me" }] }]);
	const c = new Contextd(sq.url, TOKEN);
	await assert.rejects(
		c.call("PUT", "/v1/sessions/s1", { session_file: "/home/me/.pi/agent/sessions/x.jsonl" }, { Authorization: "Bearer chatgpt-secret" }),
		(e: unknown) => e instanceof ContextdError && /did not prove it holds the token/.test(e.message) && /nothing was sent to it/.test(e.message),
	);
	assert.ok(sq.seen.length >= 1);
	for (const r of sq.seen) {
		assert.equal(r.path, "/v1/proof");
		assert.equal(r.token, undefined);
		assert.equal(r.auth, undefined);
		assert.equal(r.body, "");
	}
	await sq.close();
});

test("the token goes out only on connections that proved it, over TCP and a Unix socket", async () => {
	const dir = mkdtempSync(join(tmpdir(), "ctxd-sock-"));
	for (const sock of [undefined, join(dir, "c.sock")]) {
		const cd = await serve(TOKEN, (_p, tok) => (tok === TOKEN ? [200, { ok: true }] : [401, { detail: "no" }]), sock);
		const c = new Contextd(cd.url, TOKEN);
		for (let i = 0; i < 3; i++) assert.deepEqual(await c.call("GET", "/v1/sessions"), { ok: true });
		// contextd closes the kept-alive connection: the next call proves the new one.
		cd.srv.closeAllConnections();
		assert.deepEqual(await c.call("POST", "/v1/x", { a: 1 }), { ok: true });
		const withToken = cd.seen.filter((r) => r.token !== undefined);
		assert.equal(withToken.length, 4);
		assert.ok(withToken.every((r) => r.provenConn && r.token === TOKEN), JSON.stringify(cd.seen));
		assert.equal(cd.seen.filter((r) => r.path === "/v1/proof").length, 2, JSON.stringify(cd.seen.map((r) => r.path)));
		await cd.close();
	}
	rmSync(dir, { recursive: true });
});

test("connect: no discovery file is 'not running' naming the state directory, with no default address tried", async () => {
	const { dir, settings } = stateDir();
	await assert.rejects(connect(settings), (e: unknown) => e instanceof UnreachableError && e.message.includes(`contextd is not running for the state directory ${dir} (no ${join(dir, "contextd.json")})`));
	rmSync(dir, { recursive: true });
});

test("connect: a squatter on the discovery file's URL is refused before anything secret is sent", async () => {
	const sq = await serve(undefined, () => [200, {}]);
	const { dir, settings } = stateDir({ url: sq.url, pid: 1, version: "v" });
	await assert.rejects(connect(settings), /did not prove it holds the token of .*token/);
	assert.ok(sq.seen.every((r) => r.path === "/v1/proof" && r.token === undefined));
	await sq.close();
	rmSync(dir, { recursive: true });
});

test("after a 401 the token is read again once and the call retried (contextd restarted with a new token)", async () => {
	const NEW = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
	const cur = { t: TOKEN };
	const a = await serve(cur, (_p, tok) => (tok === cur.t ? [200, { token: tok }] : [401, { detail: "wrong" }]));
	const { dir, settings } = stateDir({ url: a.url });
	const c = await connect(settings);
	assert.deepEqual(await c.call("GET", "/v1/sessions"), { token: TOKEN });
	// The state directory was recreated: a new token, same address, the kept-alive connection still open.
	cur.t = NEW;
	writeFileSync(join(dir, "token"), NEW + "\n", { mode: 0o600 });
	assert.deepEqual(await c.call("POST", "/v1/x", { a: 1 }), { token: NEW });
	const tokens = a.seen.filter((r) => r.path === "/v1/x").map((r) => r.token);
	assert.deepEqual(tokens, [TOKEN, NEW], "one refused try with the old token, one retry with the new");
	await a.close();
	rmSync(dir, { recursive: true });
});

test("a 401 after the retry names the token file read and the one contextd reads", async () => {
	const a = await serve(TOKEN, () => [401, { detail: "Missing or wrong X-Contextd-Token header; send the token from /elsewhere/token." }]);
	const { dir, settings } = stateDir({ url: a.url });
	const c = await connect(settings);
	await assert.rejects(
		c.call("GET", "/v1/sessions"),
		(e: unknown) =>
			e instanceof ContextdError &&
			e.status === 401 &&
			e.message.includes(`refuses the token the extension read from ${join(dir, "token")} (state directory ${dir})`) &&
			e.message.includes("send the token from /elsewhere/token.") &&
			e.message.includes(`--state-dir ${dir}`),
	);
	assert.equal(a.seen.filter((r) => r.path === "/v1/sessions").length, 2);
	await a.close();
	rmSync(dir, { recursive: true });
});

test("a contextd gone from its address is looked up again once (restarted on another port)", async () => {
	const a = await serve(TOKEN, () => [200, { from: "a" }]);
	const { dir, settings } = stateDir({ url: a.url });
	const c = await connect(settings);
	await a.close();
	const b = await serve(TOKEN, () => [200, { from: "b" }]);
	writeFileSync(join(dir, "contextd.json"), JSON.stringify({ url: b.url }), { mode: 0o600 });
	assert.deepEqual(await c.call("POST", "/v1/x", {}), { from: "b" });
	await b.close();
	rmSync(dir, { recursive: true });
});

test("contextd stopped mid-session: the call says how to start it and asks for no /reload; once it serves again the same client reaches it", async () => {
	const a = await serve(TOKEN, () => [200, { from: "a" }]);
	const { dir, settings } = stateDir({ url: a.url });
	const c = await connect(settings);
	// contextd stop: the server goes and its discovery file with it.
	await a.close();
	rmSync(join(dir, "contextd.json"));
	await assert.rejects(c.call("POST", "/v1/x", {}), (e: unknown) => {
		const m = (e as Error).message;
		assert.equal(m, `contextd is not running for the state directory ${dir} (no ${join(dir, "contextd.json")}); run \`contextd serve --state-dir ${dir}\` in another terminal (or set "autoStart": true under "contextd" in Pi's settings.json)`);
		assert.doesNotMatch(m, /\/reload/);
		return true;
	});
	// contextd serve again: the next call finds it, no /reload.
	const b = await serve(TOKEN, () => [200, { from: "b" }]);
	writeFileSync(join(dir, "contextd.json"), JSON.stringify({ url: b.url }), { mode: 0o600 });
	assert.deepEqual(await c.call("POST", "/v1/x", {}), { from: "b" });
	await b.close();
	rmSync(dir, { recursive: true });
});

test("Transport.prove: an old contextd without the proof route (401) is refused", async () => {
	const old = createServer((_req, res) => {
		res.writeHead(401);
		res.end("{}");
	});
	await new Promise<void>((r) => old.listen(0, "127.0.0.1", r));
	const t = new Transport(parseEndpoint(`http://127.0.0.1:${(old.address() as AddressInfo).port}`, "x"), TOKEN, "/t/token");
	await assert.rejects(t.prove(), /did not prove it holds the token of \/t\/token \(HTTP 401\)/);
	t.close();
	old.closeAllConnections();
	old.close();
});
