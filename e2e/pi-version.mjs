// pi-version.mjs: which installed Pi the e2e scripts load.
//
// PI_VERSION selects it: "0.85" (default) loads @earendil-works/pi-coding-agent 0.85.1, "1.6"
// loads the npm alias pi-coding-agent-1.6 (@earendil-works/pi-coding-agent 1.6.0). Both are
// pinned in package.json and installed side by side by `npm ci --prefix e2e`.
//
// Adding a newer Pi: add an alias to package.json ("pi-coding-agent-1.7":
// "npm:@earendil-works/pi-coding-agent@1.7.0", and pi-ai likewise), a line below, and a
// PiVersion in harness.go; the parity and rollover tests then run on it too.
import { readFileSync } from "node:fs";

export const PI_PACKAGES = {
	"0.85": { agent: "@earendil-works/pi-coding-agent", ai: "@earendil-works/pi-ai" },
	"1.6": { agent: "pi-coding-agent-1.6", ai: "pi-ai-1.6" },
};

export const piLine = process.env.PI_VERSION || "0.85";
if (!(piLine in PI_PACKAGES)) {
	throw new Error(`PI_VERSION=${piLine}: not one of ${Object.keys(PI_PACKAGES).join(", ")}`);
}
export const piPackage = PI_PACKAGES[piLine].agent;
/** The installed package's own version, e.g. "1.6.0". */
export const piVersion = JSON.parse(readFileSync(new URL(`./node_modules/${piPackage}/package.json`, import.meta.url), "utf8")).version;
/** The module of the selected Pi (SessionManager, buildSessionContext, …). */
export const importPi = () => import(piPackage);
