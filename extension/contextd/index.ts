// The entry point Pi loads (package.json "pi": {"extensions"}). Pi names a
// local extension in its startup [Extensions] list after the directory of
// its index.ts (interactive-mode.js getCompactExtensionLabels, Pi 0.85.1
// and 1.6.0), so this directory is called contextd; the code is in src/.
export { default } from "../src/index.ts";
