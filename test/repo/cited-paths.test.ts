/**
 * Every repository path cited in prose exists: links and `code` spans of the Markdown files, and
 * the comments of source files. A path is cited from the repository's root, the citing file's
 * folder or its package's folder (backend/README.md cites the backend's entry as src-relative); any of the three counts.
 * Not checked: URLs, globs, placeholders (`<tool>`, `{id}`, `...`) and words that merely contain
 * a slash (`audio/mpeg`, `queued -> processing`): a path starts with a top-level folder of the
 * repository or ends with a file extension the repository uses.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const tracked = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8" }).split("\0").filter(Boolean);
const topFolders = new Set(tracked.filter((f) => f.includes("/")).map((f) => f.slice(0, f.indexOf("/"))));
const sourceExt = /\.(ts|tsx|mts|mjs|cjs|js)$/;
const citedExt = /\.(ts|tsx|mjs|cjs|js|md|json|jsonc|toml|sql|sh|yml|yaml)$/;

/** The folder of the nearest package.json above a file (the repository's root at the latest). */
function packageDir(file: string): string {
  let dir = path.dirname(file);
  while (dir !== "." && !existsSync(path.join(root, dir, "package.json"))) dir = path.dirname(dir);
  return dir;
}

/** A candidate cleaned of quoting and trailing punctuation, or null when it is not a path at all. */
function asPath(raw: string): string | null {
  let p = raw
    .trim()
    .replace(/^[("'`[]+/, "")
    .replace(/[)"'`\],.;:!?]+$/, "");
  p = p.replace(/#.*$/, "").replace(/:\d+(-\d+)?$/, ""); // anchors, line numbers
  if (!p || /^[a-z][a-z0-9+.-]*:/i.test(p) || p.startsWith("//")) return null; // URLs, schemes
  if (/[<>{}*$|\\ ]|\.\.\.|…/.test(p)) return null; // placeholders, globs, shell
  if (p.startsWith("/") || p.startsWith("~") || p.startsWith("@")) return null; // routes, home, packages
  if (p.includes("node_modules") || p.startsWith(".wrangler") || p.startsWith("test-artifacts")) return null;
  const first = p.replace(/^\.\//, "").split("/")[0];
  // `../x` in prose is an example of a path, not a citation: a relative one needs an extension.
  const looksLikePath = (p.includes("/") && topFolders.has(first)) || (p.includes("/") && citedExt.test(p));
  return looksLikePath ? p : null;
}

/** Citations of another repository's files, by the citing file (checked by hand). */
const elsewhere = new Set([
  "wasm/README.md: packages/core", // ffmpeg.wasm's own repository, linked on the same line
]);

function exists(cited: string, from: string): boolean {
  const bases = [".", path.dirname(from), packageDir(from)];
  return bases.some((base) => existsSync(path.join(root, base, cited)));
}

function markdownCitations(text: string): string[] {
  const out: string[] = [];
  const withoutFences = text.replace(/^```[\s\S]*?^```/gm, ""); // code examples are not citations
  for (const m of withoutFences.matchAll(/\]\(([^)\s]+)\)/g)) out.push(m[1]);
  for (const m of withoutFences.matchAll(/`([^`\n]+)`/g)) out.push(...m[1].split(/[\s,]+/));
  return out;
}

function commentTexts(file: string, text: string): string[] {
  const kind = file.endsWith(".tsx")
    ? ts.ScriptKind.TSX
    : file.endsWith(".ts") || file.endsWith(".mts")
      ? ts.ScriptKind.TS
      : ts.ScriptKind.JS;
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, kind);
  const seen = new Map<number, string>();
  const collect = (ranges: ts.CommentRange[] | undefined) => {
    for (const r of ranges ?? []) seen.set(r.pos, text.slice(r.pos, r.end));
  };
  const visit = (node: ts.Node) => {
    collect(ts.getLeadingCommentRanges(text, node.getFullStart()));
    collect(ts.getTrailingCommentRanges(text, node.getEnd()));
    node.forEachChild(visit);
  };
  visit(source);
  collect(ts.getLeadingCommentRanges(text, source.endOfFileToken.getFullStart()));
  return [...seen.values()];
}

function commentCitations(comment: string): string[] {
  // In comments a path is a run of path characters; backquotes and parentheses are punctuation.
  return [...comment.matchAll(/[A-Za-z0-9_.~@<>{}*$-]*\/[A-Za-z0-9_./<>{}*$:-]*/g)].map((m) => m[0]);
}

function brokenCitations(): string[] {
  const broken: string[] = [];
  for (const file of tracked) {
    if (!existsSync(path.join(root, file))) continue; // deleted in the working tree
    let cited: string[];
    if (file.endsWith(".md")) cited = markdownCitations(readFileSync(path.join(root, file), "utf8"));
    else if (sourceExt.test(file) && !file.endsWith(".d.ts") && file !== "cli/src/api-types.ts")
      cited = commentTexts(file, readFileSync(path.join(root, file), "utf8")).flatMap(commentCitations);
    else continue;
    for (const raw of cited) {
      const p = asPath(raw);
      if (p && !exists(p, file) && !elsewhere.has(`${file}: ${p}`)) broken.push(`${file}: ${p}`);
    }
  }
  return [...new Set(broken)];
}

describe("cited repository paths", () => {
  it("name files and folders that exist", () => {
    expect(brokenCitations()).toEqual([]);
  });

  it("are recognised, and placeholders and URLs are not", () => {
    expect(asPath("`src/tools/index.ts`")).toBe("src/tools/index.ts");
    expect(asPath("docs/security.md#money")).toBe("docs/security.md");
    expect(asPath("src/tools/<tool>.ts")).toBeNull();
    expect(asPath("https://example.com/src/x.ts")).toBeNull();
    expect(asPath("audio/mpeg")).toBeNull();
    expect(asPath("/api/v1/jobs")).toBeNull();
    expect(exists("src/server.ts", "backend/README.md")).toBe(true);
  });
});
