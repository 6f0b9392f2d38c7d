/**
 * The Python client (clients/python/) against the e2e stack: its own unittest suite, run as a user
 * runs it, with the stack's URL and a live key of a fresh account in the environment. It uploads,
 * quotes, calls, waits and downloads for real (ffprobe checks the result), runs a pipeline and a
 * saved template step by step, resumes a cut resumable upload, verifies a real webhook delivery,
 * and holds the client's tables to the running API's OpenAPI document
 * (clients/python/tests/test_openapi_coverage.py).
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { describe, expect, inject, it } from "vitest";
import { newClient } from "./client";

const root = path.resolve(import.meta.dirname, "../..");

function unittest(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("python3", ["-m", "unittest", "discover", "-s", "clients/python/tests", "-v"], {
      cwd: root,
      // No __pycache__ folders left in the tree.
      env: { PATH: process.env.PATH, HOME: process.env.HOME, PYTHONDONTWRITEBYTECODE: "1", ...env },
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
  });
}

describe("Python client", () => {
  it("passes its unittest suite against the stack, nothing skipped", { timeout: 300_000 }, async () => {
    const client = await newClient(inject("e2eMainUrl"));
    const run = await unittest({
      MEDIA_CREDITS_BASE_URL: client.base,
      MEDIA_CREDITS_API_KEY: client.auth.authorization.slice("Bearer ".length),
    });
    expect(run.code, run.output).toBe(0);
    expect(run.output, run.output).toMatch(/\nOK\n/);
    expect(run.output, run.output).not.toMatch(/skipped/i);
    // The suites that need the stack did run (a renamed file would otherwise pass unnoticed).
    expect(run.output).toMatch(
      /test_openapi_coverage\.OpenApiCoverageTest\.test_every_operation_is_declared_with_its_method_and_path\) \.\.\. ok/,
    );
    expect(run.output).toMatch(
      /test_stack\.StackTest\.test_a_resumable_upload_cut_after_one_part_and_resumed\) \.\.\. ok/,
    );
    expect(run.output).toMatch(
      /test_stack\.StackTest\.test_a_pipeline_quoted_run_step_by_step_and_downloaded\) \.\.\. ok/,
    );
    expect(run.output).toMatch(/test_stack\.StackTest\.test_a_template_saved_quoted_run_and_deleted\) \.\.\. ok/);
  });
});
