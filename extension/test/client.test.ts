// Unit tests of the typed client (client.ts request()): the method, path,
// query and body it sends for an operation of the generated OpenAPI types,
// against a local HTTP server that records the request.
import assert from "node:assert/strict";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { Contextd, ContextdError, fillPath, problemDetail, ROUTES } from "../src/client.ts";
import { proofOf } from "../src/transport.ts";

interface Seen {
	method?: string;
	url?: string;
	token?: string;
	contentType?: string;
	body: string;
}

async function withServer(status: number, answer: unknown, fn: (c: Contextd, seen: Seen) => Promise<void>): Promise<void> {
	const seen: Seen = { body: "" };
	const srv = createServer((req: IncomingMessage, res) => {
		const u = new URL(req.url ?? "/", "http://x");
		if (u.pathname === "/v1/proof") {
			res.writeHead(200, { "Content-Type": "application/json" });
			res.end(JSON.stringify({ proof: proofOf("tok", u.searchParams.get("challenge") ?? "") }));
			return;
		}
		seen.method = req.method;
		seen.url = req.url;
		seen.token = req.headers["x-contextd-token"] as string | undefined;
		seen.contentType = req.headers["content-type"];
		req.on("data", (d) => (seen.body += d));
		req.on("end", () => {
			res.writeHead(status, { "Content-Type": status < 300 ? "application/json" : "application/problem+json" });
			res.end(JSON.stringify(answer));
		});
	});
	await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
	try {
		await fn(new Contextd(`http://127.0.0.1:${(srv.address() as AddressInfo).port}`, "tok"), seen);
	} finally {
		srv.close();
	}
}

test("request: fills path parameters, sends the typed body and returns the typed answer", async () => {
	const answer = { awaiting_file: false, hidden_summaries: [], leaf_id: "l1", mode: "local", needs_boundary: true, orphaned_tool_results: [], projection: { drop: [], start_at: null }, window: null };
	await withServer(200, answer, async (c, seen) => {
		const a = await c.request("session-context", { path: { session_id: "s/1" }, body: { leaf_id: "l1" } });
		assert.equal(a.window, null);
		assert.equal(a.leaf_id, "l1");
		assert.equal(seen.method, "POST");
		assert.equal(seen.url, "/v1/sessions/s%2F1/context");
		assert.equal(seen.token, "tok");
		assert.equal(seen.contentType, "application/json");
		assert.deepEqual(JSON.parse(seen.body), { leaf_id: "l1" });
	});
});

test("request: query parameters, no body on GET", async () => {
	await withServer(200, { context: [], cycle: false, entry_ids: [], leaf_id: "x", rules: "pi-1.6" }, async (c, seen) => {
		const b = await c.request("get-branch", { path: { session_id: "s1" }, query: { leaf_id: "x", tail: 5 } });
		assert.equal(b.rules, "pi-1.6");
		assert.equal(seen.method, "GET");
		assert.equal(seen.url, "/v1/sessions/s1/branch?leaf_id=x&tail=5");
		assert.equal(seen.body, "");
		assert.equal(seen.contentType, undefined);
	});
});

test("request: a problem answer is a ContextdError with contextd's detail and code, without the HTTP status in its sentence", async () => {
	await withServer(422, { title: "Unprocessable Entity", status: 422, detail: "limit must be between 1 and 25", code: "invalid" }, async (c) => {
		await assert.rejects(
			c.request("history-list_items", { body: { context: { session_id: "s1" }, limit: 0 } }),
			(e: unknown) => e instanceof ContextdError && e.status === 422 && e.code === "invalid" && e.message === "contextd: limit must be between 1 and 25" && e.fields.length === 0,
		);
	});
});

test("request: a validation problem's field errors are kept on the ContextdError for the tool's sentence (toolerror.ts)", async () => {
	const body = { title: "Unprocessable Entity", status: 422, detail: "Invalid request: body: expected required property window_id to be present.", code: "invalid", errors: [{ message: "expected required property window_id to be present", location: "body" }] };
	await withServer(422, body, async (c) => {
		await assert.rejects(
			c.request("history-read_item", { body: { context: { session_id: "s1" } } as never }),
			(e: unknown) =>
				e instanceof ContextdError &&
				e.message === "contextd: Invalid request: body: expected required property window_id to be present." &&
				JSON.stringify(e.fields) === JSON.stringify([{ location: "body", message: "expected required property window_id to be present" }]),
		);
	});
});

test("request: an answer that is not a problem document keeps its text and has no code", async () => {
	await withServer(502, "upstream proxy said no", async (c) => {
		await assert.rejects(c.request("list-sessions", {}), (e: unknown) => e instanceof ContextdError && e.status === 502 && e.code === undefined && e.message === 'contextd: "upstream proxy said no"');
	});
});

test("ROUTES: every template's parameters are filled; a missing one is an error", () => {
	assert.equal(fillPath(ROUTES["rollover-settle"][1], { session_id: "a", rollover_id: "b c" }), "/v1/sessions/a/rollovers/b%20c/settle");
	assert.throws(() => fillPath(ROUTES["window-cut"][1], { session_id: "a" }), /no value for \{window_id\}/);
	assert.equal(Object.keys(ROUTES).length, 28);
});

test("a problem's detail is said once: field errors it already names are not repeated, others are added", () => {
	// contextd's 422 for history read_item without window_id (api/errors.go names the field errors in detail).
	const named = { title: "Unprocessable Entity", status: 422, detail: "Invalid request: body: expected required property window_id to be present.", errors: [{ message: "expected required property window_id to be present", location: "body" }] };
	assert.equal(problemDetail(JSON.stringify(named)), "Invalid request: body: expected required property window_id to be present.");
	const other = { detail: "Invalid request: body.limit: must be at most 25.", errors: [{ message: "must be at most 25", location: "body.limit" }, { message: "unexpected property", location: "body.x" }] };
	assert.equal(problemDetail(JSON.stringify(other)), "Invalid request: body.limit: must be at most 25. (body.x: unexpected property)");
	assert.equal(problemDetail("plain text"), "plain text");
});
