// pi-version.mjs: which installed Pi the e2e scripts load.
//
// PI_VERSION selects one of the Pis pinned in package.json and installed side by side by
// `npm ci --prefix e2e`: "0.85" (default) loads @earendil-works/pi-coding-agent 0.85.1, "0.86"
// the npm alias pi-coding-agent-0.86 (0.86.1), "0.87" pi-coding-agent-0.87 (0.87.0), "1.6"
// pi-coding-agent-1.6 (1.6.0): the releases at the edges of contextd's rule sets.
//
// PI_PACKAGE_DIR, when set, is the absolute directory of an installed
// @earendil-works/pi-coding-agent of any version (e2e/pi-versions.sh installs each published
// version in its own, docs/pi-versions.md); it is loaded instead, and PI_VERSION is ignored.
//
// Adding a newer Pi: add an alias to package.json ("pi-coding-agent-1.7":
// "npm:@earendil-works/pi-coding-agent@1.7.0", and pi-ai likewise), a line below, and a
// PiVersion in harness.go; the parity and rollover tests then run on it too.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

export const PI_PACKAGES = {
	"0.85": { agent: "@earendil-works/pi-coding-agent", ai: "@earendil-works/pi-ai" },
	"0.86": { agent: "pi-coding-agent-0.86", ai: "pi-ai-0.86" },
	"0.87": { agent: "pi-coding-agent-0.87", ai: "pi-ai-0.87" },
	"1.6": { agent: "pi-coding-agent-1.6", ai: "pi-ai-1.6" },
};

const packageDir = process.env.PI_PACKAGE_DIR || "";
export const piLine = packageDir ? "" : process.env.PI_VERSION || "0.85";
if (!packageDir && !(piLine in PI_PACKAGES)) {
	throw new Error(`PI_VERSION=${piLine}: not one of ${Object.keys(PI_PACKAGES).join(", ")}`);
}
/** The package name (or, with PI_PACKAGE_DIR, its directory). */
export const piPackage = packageDir || PI_PACKAGES[piLine].agent;
const manifestURL = packageDir
	? pathToFileURL(join(packageDir, "package.json"))
	: new URL(`./node_modules/${piPackage}/package.json`, import.meta.url);
/** The installed package's own version, e.g. "1.6.0". */
export const piVersion = JSON.parse(readFileSync(manifestURL, "utf8")).version;
/** The module of the selected Pi (SessionManager, buildSessionContext, …). */
export const importPi = () => import(packageDir ? pathToFileURL(join(packageDir, "dist", "index.js")).href : piPackage);
/** A module of the selected Pi's dist/ by path (e.g. "core/compaction/compaction.js"), for what its index does not export. */
export const importPiDist = (path) =>
	import(packageDir ? pathToFileURL(join(packageDir, "dist", path)).href : new URL(`./node_modules/${piPackage}/dist/${path}`, import.meta.url).href);
