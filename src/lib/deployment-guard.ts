/**
 * Settings that exist for a developer's machine (the dev outbox, loopback URLs, injected faults)
 * must never reach a public deployment: there they would show password-reset mails to anyone or
 * let callers aim the service at private addresses. A deployment is public when PUBLIC_BASE_URL
 * is https; such a deployment with any of them set refuses to serve at all, so the mistake is
 * found on the first request instead of by an attacker.
 */
import type { Env } from "../env";

type GuardedEnv = Pick<
  Env,
  | "PUBLIC_BASE_URL"
  | "DEV_MODE"
  | "ALLOW_PRIVATE_URLS"
  | "PUBLISH_ALLOW_PRIVATE_URLS"
  | "FAULT_RUNNER_ABORT_RATE"
  | "FAULT_R2_PUT_FAIL_RATE"
  | "FAULT_QUEUE_REDELIVER_RATE"
>;

const DEV_SWITCHES = ["DEV_MODE", "ALLOW_PRIVATE_URLS", "PUBLISH_ALLOW_PRIVATE_URLS"] as const;
const FAULTS = ["FAULT_RUNNER_ABORT_RATE", "FAULT_R2_PUT_FAIL_RATE", "FAULT_QUEUE_REDELIVER_RATE"] as const;

/** Whether the Worker is served on a public https origin. */
export const isPublicDeployment = (env: Pick<Env, "PUBLIC_BASE_URL">) => /^https:\/\//i.test(env.PUBLIC_BASE_URL ?? "");

/** The development-only settings a public deployment has set (empty when it may serve). */
export function developmentSettingsInProduction(env: GuardedEnv): string[] {
  if (!isPublicDeployment(env)) return [];
  const switches = DEV_SWITCHES.filter((name) => env[name] === "true").map((name) => `${name}=true`);
  const faults = FAULTS.filter((name) => Number(env[name] ?? 0) > 0).map((name) => `${name}=${env[name]}`);
  return [...switches, ...faults];
}

/** Thrown (and logged) instead of doing any work on a misconfigured public deployment. */
export class UnsafeDeploymentError extends Error {
  constructor(settings: string[]) {
    super(
      `refusing to run: development settings on a public deployment (PUBLIC_BASE_URL is https): ${settings.join(", ")}`,
    );
    this.name = "UnsafeDeploymentError";
  }
}

/** Throws UnsafeDeploymentError when the Worker must not run with these settings. */
export function assertDeployable(env: GuardedEnv): void {
  const settings = developmentSettingsInProduction(env);
  if (settings.length > 0) throw new UnsafeDeploymentError(settings);
}
