// pi-versions.mjs: run the parity and extension checks on any list of published Pis.
//
// Usage (from anywhere; e2e/pi-versions.sh runs it on the pinned Node):
//   node e2e/pi-versions.mjs [--keep] [--from 0.85.0] [VERSION ...]
// With no VERSION, every published @earendil-works/pi-coding-agent from --from (default 0.85.0)
// on, as `npm view` lists them. docs/pi-versions.md describes the run and records the last one.
//
// 1. Installs every version side by side in a temp dir (npm aliases pi-VERSION), each with its
//    @earendil-works siblings pinned to its own version by npm overrides: a caret range would
//    pull a newer sibling (0.87.0 and 1.0.3 would get 0.87.1's and 1.3.0's). A sibling version
//    that was never published (0.99.1 and 1.0.3 ask for @earendil-works/chord ^0.99.1 and
//    ^1.0.3) gets the newest published one below it (chord 0.87.1); their session code does not
//    import it.
//    0.85.0 as published does not start: its dist/cli.js (and index.js) import
//    @earendil-works/pi-server, which it does not declare (ERR_MODULE_NOT_FOUND in a plain
//    install too; 0.85.1 dropped the import). UNDECLARED adds such packages at the top of the
//    temp dir's node_modules, where the version's code finds them.
// 2. Runs, with CONTEXTD_PI_DIRS naming those installs (e2e/harness.go):
//    TestPiParityInvariant — every version writes its own sessions (gen-sessions.mjs
//      --own-compactions) and reads every version's, every leaf compared with contextd under
//      the rules of its pi_version;
//    TestPiExtensionPrintModeUnreachable — the extension loads in print mode;
//    TestPiExtensionLocal, TestPiExtensionTree — a Local and a Tree rollover with the real
//      extension and Pi in RPC mode.
// 3. Prints one table row per version (files, leaves, mismatches, extension checks) and exits
//    non-zero if anything failed. --keep keeps the temp dir and prints it.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..");
const PKG = "@earendil-works/pi-coding-agent";
const SCOPE = "@earendil-works/";

const argv = process.argv.slice(2);
const keep = argv.includes("--keep");
let from = "0.85.0";
const versions = [];
for (let i = 0; i < argv.length; i++) {
	if (argv[i] === "--keep") continue;
	if (argv[i] === "--from") from = argv[++i];
	else if (/^\d+\.\d+\.\d+$/.test(argv[i])) versions.push(argv[i]);
	else {
		console.error("usage: pi-versions.mjs [--keep] [--from 0.85.0] [VERSION ...]");
		process.exit(2);
	}
}

const core = (v) => v.split(/[-+]/)[0].split(".").map(Number);
const cmp = (a, b) => {
	const [x, y] = [core(a), core(b)];
	for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i] - y[i];
	return 0;
};
const npmView = (spec, field) => JSON.parse(execFileSync("npm", ["view", spec, field, "--json"], { encoding: "utf8" }) || "null");
const published = (name) => [npmView(name, "versions")].flat().filter((v) => /^\d+\.\d+\.\d+$/.test(v));

if (versions.length === 0) versions.push(...published(PKG).filter((v) => cmp(v, from) >= 0));
versions.sort(cmp);
console.log(`Pi versions: ${versions.join(" ")}`);

// 1. Install.
// Packages a version imports without declaring them (see above), by version.
const UNDECLARED = { "0.85.0": { "@earendil-works/pi-server": "0.85.0" } };
const siblingVersions = new Map(); // sibling package -> its published versions
const dependencies = {};
const overrides = {};
for (const v of versions) {
	const alias = `pi-${v}`;
	dependencies[alias] = `npm:${PKG}@${v}`;
	const pins = {};
	for (const dep of Object.keys(npmView(`${PKG}@${v}`, "dependencies") ?? {})) {
		if (!dep.startsWith(SCOPE)) continue;
		if (!siblingVersions.has(dep)) siblingVersions.set(dep, published(dep));
		const have = siblingVersions.get(dep);
		const pin = have.includes(v) ? v : have.filter((s) => cmp(s, v) <= 0).sort(cmp).at(-1);
		if (!pin) throw new Error(`${PKG}@${v}: no published ${dep} at or below ${v}`);
		if (pin !== v) console.log(`${alias}: ${dep} ${v} was never published; pinned to ${pin}`);
		pins[dep] = pin;
	}
	overrides[alias] = pins;
	for (const [name, pin] of Object.entries(UNDECLARED[v] ?? {})) {
		if (dependencies[name] && dependencies[name] !== pin) throw new Error(`${name}: ${dependencies[name]} and ${pin} both needed`);
		console.log(`${alias}: imports ${name} without declaring it; installed ${name}@${pin} beside it`);
		dependencies[name] = pin;
	}
}
const dir = mkdtempSync(join(tmpdir(), "pi-versions-"));
writeFileSync(join(dir, "package.json"), `${JSON.stringify({ name: "pi-versions", private: true, dependencies, overrides }, null, 2)}\n`);
console.log(`installing into ${dir} …`);
execFileSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: dir, stdio: ["ignore", "inherit", "inherit"] });

// 2. Test.
const pairs = versions.map((v) => `${v}=${join(dir, "node_modules", `pi-${v}`)}`).join(" ");
const tests = ["TestPiParityInvariant", "TestPiExtensionPrintModeUnreachable", "TestPiExtensionLocal", "TestPiExtensionTree"];
const goArgs = ["test", "-json", "-count=1", "-timeout", "180m", "-tags", "sqlite_fts5", "-run", `^(${tests.join("|")})$`, "./e2e/"];
console.log(`CONTEXTD_PI_DIRS="…" go ${goArgs.join(" ")}`);
const started = Date.now();
const go = spawn("go", goArgs, { cwd: root, env: { ...process.env, CONTEXTD_PI_DIRS: pairs }, stdio: ["ignore", "pipe", "inherit"] });

const rows = new Map(versions.map((v) => [v, { files: 0, leaves: 0, mismatches: 0, failed: [], ext: {} }]));
const failures = [];
const outputs = new Map(); // test -> output lines, for failures
for await (const line of createInterface({ input: go.stdout })) {
	let ev;
	try {
		ev = JSON.parse(line);
	} catch {
		continue;
	}
	if (!ev.Test) continue;
	if (ev.Action === "output") {
		const o = outputs.get(ev.Test) ?? [];
		if (o.length < 40) o.push(ev.Output);
		outputs.set(ev.Test, o);
		continue;
	}
	if (ev.Action !== "pass" && ev.Action !== "fail") continue;
	const parts = ev.Test.split("/");
	const m = /^pi-(.+)$/.exec(parts[1] ?? "");
	const row = m && rows.get(m[1]);
	if (ev.Action === "fail") failures.push(ev.Test);
	if (!row) continue;
	if (parts[0] === "TestPiParityInvariant") {
		// pi-V/LABEL/FILE (a file from its default leaf) or pi-V/leaves/LABEL/FILE/KEY (one leaf).
		if (parts[2] === "leaves" && parts.length === 6) {
			row.leaves++;
			if (ev.Action === "fail") row.mismatches++;
		} else if (parts[2] !== "leaves" && parts.length === 4) {
			row.files++;
			if (ev.Action === "fail") row.mismatches++;
		} else if (parts.length === 2 && ev.Action === "fail" && row.mismatches === 0) {
			row.failed.push("parity");
		}
	} else if (parts.length === 2) {
		row.ext[parts[0].replace("TestPiExtension", "")] = ev.Action;
	}
}
const code = await new Promise((res) => go.on("close", res));
const minutes = ((Date.now() - started) / 60000).toFixed(1);

// 3. Report.
const extNames = ["PrintModeUnreachable", "Local", "Tree"];
console.log(`\n| Pi | rules | files | leaves | mismatches | ${extNames.join(" | ")} |`);
console.log(`|---|---|---:|---:|---:|${extNames.map(() => "---").join("|")}|`);
for (const [v, r] of rows) {
	const rules = cmp(v, "0.86.0") < 0 ? "pi-0.85" : cmp(v, "0.87.0") < 0 ? "pi-0.86" : "pi-1.6";
	console.log(`| ${v} | ${rules} | ${r.files} | ${r.leaves} | ${r.mismatches}${r.failed.length ? " (" + r.failed.join(", ") + " failed)" : ""} | ${extNames.map((n) => r.ext[n] ?? "not run").join(" | ")} |`);
}
const total = [...rows.values()].reduce((a, r) => ({ leaves: a.leaves + r.leaves, mismatches: a.mismatches + r.mismatches }), { leaves: 0, mismatches: 0 });
console.log(`\n${versions.length} Pis, ${total.leaves} leaves, ${total.mismatches} mismatches; go test exit ${code} after ${minutes} min`);
if (failures.length) {
	console.log(`\nfailed (${failures.length}), first ones:`);
	for (const t of failures.slice(0, 10)) console.log(`--- ${t}\n${(outputs.get(t) ?? []).join("")}`);
}
if (keep) console.log(`kept ${dir}`);
else rmSync(dir, { recursive: true, force: true });
process.exit(code === 0 && failures.length === 0 ? 0 : 1);
