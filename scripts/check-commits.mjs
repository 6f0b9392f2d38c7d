// Commit subjects since CONTRIBUTING.md was added must read `area: what changed` in at most 72
// characters (CONTRIBUTING.md, "Commits"). Older history is left as it was written.
import { execFileSync } from "node:child_process";

const git = (...args) => execFileSync("git", args, { encoding: "utf8" }).trim();
const SUBJECT = /^[a-z0-9][a-z0-9/-]*: \S.*[^.]$/;
const MAX = 72;

let first;
try {
  first = git("log", "--diff-filter=A", "--format=%H", "--", "CONTRIBUTING.md").split("\n").pop();
} catch {
  first = "";
}
if (!first) {
  console.log("check-commits: no history with CONTRIBUTING.md here (shallow clone?); nothing to check");
  process.exit(0);
}
const bad = git("log", "--format=%h %s", `${first}^..HEAD`)
  .split("\n")
  .filter(Boolean)
  .filter((line) => {
    const subject = line.slice(line.indexOf(" ") + 1);
    return subject.length > MAX || !SUBJECT.test(subject);
  });
if (bad.length > 0) {
  console.error(`check-commits: subjects must read "area: what changed" in at most ${MAX} characters:`);
  for (const line of bad) console.error(`  ${line}`);
  process.exit(1);
}
console.log("check-commits: every subject since CONTRIBUTING.md reads `area: what changed`");
