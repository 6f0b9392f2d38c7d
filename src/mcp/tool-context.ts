/**
 * What every connector tool shares: the request's context (account, the owner's grant to this
 * assistant, origin), the success and error results, and the guard that checks the grant's scopes
 * and turns any error into an `isError` result.
 */
import type { Env } from "../env";
import { AppError } from "../errors";
import { toolError, translateError } from "../error-translator";
import { getAccount, type Caller } from "../services/accounts/accounts";
import type { AssistantScope, Connection } from "../services/accounts/connected-apps";

/** What the account's owner allows this assistant, read at every request (src/services/accounts/connected-apps.ts). */
export interface McpConnection {
  /** Null for a grant made before scopes existed (every tool, no cap of its own). */
  connectionId: string | null;
  scopes: AssistantScope[];
  dailyCreditCap: number | null;
  perCallCreditCap: number | null;
}

export interface McpContext {
  env: Env;
  accountId: string;
  connection: McpConnection;
  /** Origin the assistant called: download and billing URLs are absolute. */
  origin: string;
  /** The OAuth grant and the name the assistant registered under, when the provider gives them. */
  grantId?: string;
  clientName?: string;
  /** Keeps work started by a call alive after its answer (a job's immediate start). */
  waitUntil?: (task: Promise<unknown>) => void;
}

export type ToolResult = {
  content: { type: "text"; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
};

export const ok = (data: Record<string, unknown>, text?: string): ToolResult => ({
  content: [{ type: "text", text: text ?? JSON.stringify(data) }],
  structuredContent: data,
});

/**
 * A tool error: `isError`, with the contract's code, message and details (a 402's balance,
 * required credits and billing page) as JSON text, and no structuredContent. structuredContent
 * must fit the tool's outputSchema, which describes successes; clients on MCP SDK 1.x (and older
 * MCP Inspectors) check it even on errors and showed "Structured content does not match the
 * tool's output schema" instead of the message.
 */
const refusal = (data: { code: string; message: string } & Record<string, unknown>): ToolResult => ({
  content: [{ type: "text", text: JSON.stringify(data) }],
  isError: true,
});

/** Any error as the connector's tool error: the translation REST answers with (src/error-translator.ts). */
const failure = (error: unknown, context: McpContext): ToolResult =>
  refusal(toolError(translateError(error, "mcp tool failed"), context.origin));

/**
 * Runs a tool's work, its errors as tool results; a tool outside the scopes the owner granted this
 * assistant is refused before anything runs.
 */
export async function guarded(
  context: McpContext,
  work: () => Promise<ToolResult>,
  scope?: AssistantScope,
): Promise<ToolResult> {
  try {
    if (scope && !context.connection.scopes.includes(scope)) {
      const what =
        scope === "media"
          ? "process media (run the tools, upload files, read jobs)"
          : "manage brands and posts or publish to networks";
      throw new AppError(
        "invalid_request",
        `The account's owner did not allow this assistant to ${what}. They can allow it in Connected apps (${context.origin}/app/connected).`,
      );
    }
    return await work();
  } catch (error) {
    return failure(error, context);
  }
}

/**
 * Jobs made through the connector belong to its connection, as a REST job to its key (a grant made
 * before connections existed shares the account's connector "key").
 */
export const connectorKeyId = (accountId: string) => `mcp:${accountId}`;

export async function callerOf(context: McpContext): Promise<Caller> {
  const account = await getAccount(context.env.DB, context.accountId);
  return {
    accountId: account.accountId,
    keyId: context.connection.connectionId ?? connectorKeyId(account.accountId),
    email: account.email,
    plan: account.plan,
    mode: "live",
  };
}

/** The caps of the call's assistant, for the debit (none for a grant made before caps existed). */
export const assistantOf = ({ connection }: McpContext): Connection | undefined =>
  connection.connectionId ? { ...connection, connectionId: connection.connectionId } : undefined;
