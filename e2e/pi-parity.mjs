// pi-parity.mjs: ask Pi's own SessionManager what it makes of session files.
//
// Usage: node pi-parity.mjs [--leaf ID] FILE.jsonl [FILE2.jsonl ...]
//        (PI_PARITY_LEAF=ID works like --leaf)
//
// Prints ONE JSON array to stdout, one object per input file, in input order.
// Each file is copied into a fresh temp dir first and only the copy is opened:
// Pi rewrites v1/v2 files (migration) and repairs a missing trailing newline
// when it opens them, and the originals must stay untouched.
//
// Field notes (contextd's Go tests compare against these):
//   header          Pi's header after loading (a migrated v1/v2 file reports version 3);
//                   sourceVersion is the version on disk before Pi opened it (missing = 1).
//   leafId          Pi's leaf after open (the last entry in file order), or the --leaf id.
//   branchIds/Types getBranch(leaf): root -> leaf, every entry type.
//   contextEntryIds buildContextEntries(): the compaction-aware entry list.
//   messages        buildSessionContext().messages, each tagged with the id of the context
//                   entry that produced it (0.85: sessionEntryToContextMessages yields 0 or 1 per
//                   entry; 1.x: buildSessionProjection's entries, 0 to 2 messages per entry).
//                   editId (1.x): the message's content is not its entry's own (Pi's
//                   projectContextEntry replaced it); the id is the last context_edit among the
//                   context entries that targets the entry.
//   piVersion       the version of the Pi that answered.
//   textPrefix      first 80 code points of the first text: a string content, else the first
//                   {type:"text"} part; for bashExecution the command. summaryPrefix likewise for
//                   branchSummary/compactionSummary. Code points, not UTF-16 units, so that a
//                   surrogate pair is never cut in half.
// Ids of v1 files are assigned at random by Pi's migration: they differ on every run.
// A file Pi refuses gets an "error" string and the other fields stay empty.

import { chmodSync, copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";

// Keep Pi away from the real ~/.pi (it reads config from the agent dir).
const scratch = mkdtempSync(join(tmpdir(), "pi-parity-"));
process.env.PI_CODING_AGENT_DIR ??= join(scratch, "agent");

// PI_VERSION (pi-version.mjs) selects the installed Pi: 0.85 (default) or 1.6.
const { piVersion, importPi } = await import("./pi-version.mjs");
const { SessionManager, buildContextEntries, buildSessionContext, sessionEntryToContextMessages, buildSessionProjection } =
	await importPi();

const PREFIX_CHARS = 80;

function parseArgs(argv) {
	let leaf = process.env.PI_PARITY_LEAF || undefined;
	const files = [];
	for (let i = 0; i < argv.length; i++) {
		if (argv[i] === "--leaf") leaf = argv[++i];
		else if (argv[i].startsWith("--leaf=")) leaf = argv[i].slice("--leaf=".length);
		else files.push(argv[i]);
	}
	if (files.length === 0) {
		console.error("usage: node pi-parity.mjs [--leaf ID] FILE.jsonl [FILE2 ...]");
		process.exit(2);
	}
	return { leaf, files };
}

const prefix = (s) => (typeof s === "string" ? Array.from(s).slice(0, PREFIX_CHARS).join("") : undefined);

// Version on disk: the first non-blank line's header, as Pi would see it (missing = 1).
function sourceVersion(path) {
	const text = readFileSync(path, "utf8");
	for (const line of text.split("\n")) {
		if (!line.trim()) continue;
		try {
			const h = JSON.parse(line);
			return h && h.type === "session" ? (h.version ?? 1) : null;
		} catch {
			return null;
		}
	}
	return null;
}

// One AgentMessage -> the compact shape the Go side compares.
function describeMessage(entryId, m) {
	const out = { entryId, role: m.role };
	if (m.customType !== undefined) out.customType = m.customType;
	if (m.display !== undefined) out.display = m.display;
	if (m.stopReason !== undefined) out.stopReason = m.stopReason;
	if (m.errorMessage !== undefined) out.errorMessage = prefix(m.errorMessage);
	if (m.toolName !== undefined) out.toolName = m.toolName;
	if (m.fromId !== undefined) out.fromId = m.fromId;
	if (typeof m.content === "string") {
		out.contentKind = "string";
		out.textPrefix = prefix(m.content);
	} else if (Array.isArray(m.content)) {
		out.contentKind = "parts";
		out.partTypes = m.content.map((p) => p?.type ?? null);
		const firstText = m.content.find((p) => p?.type === "text");
		if (firstText) out.textPrefix = prefix(firstText.text);
	} else {
		out.contentKind = "none";
		if (m.role === "bashExecution") out.textPrefix = prefix(m.command);
	}
	if (m.role === "branchSummary" || m.role === "compactionSummary") out.summaryPrefix = prefix(m.summary);
	return out;
}

// PI_PARITY_REUSE=1 (the Go tests' batch of --leaf runs in one process): a file opened once is
// kept open for the later runs on it (globalThis outlives each run's fresh import of this
// script). Only with --leaf: those runs call Pi's pure functions on the entries and read the
// SessionManager without changing it. Without --leaf every run opens its own copy.
const reuse = process.env.PI_PARITY_REUSE === "1" ? (globalThis.piParityOpened ??= new Map()) : null;

// open copies file into a fresh dir (one for the copy, one as Pi's sessionDir for /new,
// /fork) and opens the copy with Pi's SessionManager.
function open(file) {
	const dir = mkdtempSync(join(scratch, "file-"));
	const copy = join(dir, basename(file));
	copyFileSync(file, copy);
	chmodSync(copy, 0o644); // fixtures may be read-only; Pi rewrites the copy on migration
	const version = sourceVersion(copy);
	try {
		return { sourceVersion: version, sm: SessionManager.open(copy, join(dir, "sessions")) };
	} catch (err) {
		return { sourceVersion: version, err };
	} finally {
		rmSync(dir, { recursive: true, force: true });
	}
}

function inspect(file, leafFlag) {
	let opened = leafFlag !== undefined ? reuse?.get(file) : undefined;
	if (!opened) {
		opened = open(file);
		if (leafFlag !== undefined) reuse?.set(file, opened);
	}
	const result = { file, sourceVersion: opened.sourceVersion };
	try {
		if (opened.err) throw opened.err;
		const sm = opened.sm;
		const entries = sm.getEntries();
		const byId = new Map(entries.map((e) => [e.id, e]));
		if (leafFlag !== undefined && !byId.has(leafFlag)) throw new Error(`--leaf ${leafFlag}: no such entry`);
		const leafId = leafFlag ?? sm.getLeafId();

		// Without --leaf use the instance methods, i.e. exactly what Pi does on resume.
		const branch = sm.getBranch(leafId ?? undefined);
		const ctxEntries = leafFlag === undefined ? sm.buildContextEntries() : buildContextEntries(entries, leafId, byId);
		const ctx = leafFlag === undefined ? sm.buildSessionContext() : buildSessionContext(entries, leafId, byId);

		// Tag each context message with its entry id; check it lines up with buildSessionContext.
		let messages;
		if (buildSessionProjection) {
			const projection = leafFlag === undefined ? sm.buildSessionProjection() : buildSessionProjection(entries, leafId, byId);
			const lastEdit = new Map();
			for (const e of ctxEntries) if (e.type === "context_edit") lastEdit.set(e.targetId, e.id);
			messages = projection.entries.flatMap(({ sourceEntry, messages: ms }) => {
				const own = sessionEntryToContextMessages(sourceEntry);
				return ms.map((m, k) => {
					const d = describeMessage(sourceEntry.id, m);
					if (lastEdit.has(sourceEntry.id) && own[k] && m.content !== own[k].content) d.editId = lastEdit.get(sourceEntry.id);
					return d;
				});
			});
		} else {
			messages = ctxEntries.flatMap((e) => sessionEntryToContextMessages(e).map((m) => describeMessage(e.id, m)));
		}
		if (messages.length !== ctx.messages.length) {
			throw new Error(`internal: ${messages.length} tagged messages vs ${ctx.messages.length} from buildSessionContext`);
		}
		messages.forEach((m, i) => {
			if (m.role !== ctx.messages[i].role) throw new Error(`internal: message ${i} role mismatch`);
		});

		const header = sm.getHeader();
		const labels = {};
		for (const e of entries) {
			const l = sm.getLabel(e.id);
			if (l !== undefined) labels[e.id] = l;
		}
		const entryCountByType = {};
		for (const e of entries) entryCountByType[e.type] = (entryCountByType[e.type] ?? 0) + 1;

		Object.assign(result, {
			piVersion,
			header: header && { version: header.version, id: header.id, cwd: header.cwd, timestamp: header.timestamp },
			leafId,
			branchIds: branch.map((e) => e.id),
			branchTypes: branch.map((e) => e.type),
			contextEntryIds: ctxEntries.map((e) => e.id),
			messages,
			thinkingLevel: ctx.thinkingLevel,
			model: ctx.model,
			entryCount: entries.length,
			entryCountByType,
			labels,
			sessionName: sm.getSessionName() ?? null,
		});
	} catch (err) {
		result.error = String(err?.message ?? err);
	}
	return result;
}

const { leaf, files } = parseArgs(process.argv.slice(2));
try {
	const results = files.map((f) => inspect(f, leaf));
	process.stdout.write(`${JSON.stringify(results, null, 1)}\n`);
} finally {
	rmSync(scratch, { recursive: true, force: true });
}
