/**
 * The life of a social post, as a table of allowed transitions:
 *
 *   draft -> pending_approval -> approved | changes_requested -> scheduled -> published | failed
 *
 * plus `cancelled` from any state that has not ended. A brand without client approval
 * schedules a draft directly; a post that needs changes goes back to draft when edited, or
 * straight back to review. Every other move is refused with the state named, so a caller
 * (REST, the connector, the approval page, the publisher) learns why.
 */
import { invalidRequest } from "../../errors";

export const postStates = [
  "draft",
  "pending_approval",
  "approved",
  "changes_requested",
  "scheduled",
  "published",
  "failed",
  "cancelled",
] as const;
export type PostState = (typeof postStates)[number];

export type PostAction =
  | "submit"
  | "approve"
  | "request_changes"
  | "edit"
  | "schedule"
  | "unschedule"
  | "publish"
  | "fail"
  | "cancel";

const ended: readonly PostState[] = ["published", "failed", "cancelled"];

/** Where each action leads from each state; absent: refused. `needsApproval` is the brand's setting. */
export function nextState(state: PostState, action: PostAction, needsApproval: boolean): PostState | undefined {
  switch (action) {
    case "submit":
      return state === "draft" || state === "changes_requested" ? "pending_approval" : undefined;
    case "approve":
      return state === "pending_approval" ? "approved" : undefined;
    case "request_changes":
      return state === "pending_approval" ? "changes_requested" : undefined;
    case "edit":
      // Editing what a client reviewed sends it back to draft; a draft stays a draft.
      return state === "draft" || state === "changes_requested"
        ? "draft"
        : state === "approved" || state === "scheduled"
          ? needsApproval
            ? "draft"
            : state
          : undefined;
    case "schedule":
      return state === "approved" || (!needsApproval && state === "draft") ? "scheduled" : undefined;
    case "unschedule":
      return state === "scheduled" ? (needsApproval ? "approved" : "draft") : undefined;
    case "publish":
      return state === "scheduled" ? "published" : undefined;
    case "fail":
      return state === "scheduled" ? "failed" : undefined;
    case "cancel":
      return ended.includes(state) ? undefined : "cancelled";
  }
}

const verbs: Record<PostAction, string> = {
  submit: "submitted for approval",
  approve: "approved",
  request_changes: "sent back for changes",
  edit: "edited",
  schedule: "scheduled",
  unschedule: "unscheduled",
  publish: "published",
  fail: "marked failed",
  cancel: "cancelled",
};

/** The next state, or a 400 naming the post's state (and what the brand requires). */
export function transition(state: PostState, action: PostAction, needsApproval: boolean): PostState {
  const next = nextState(state, action, needsApproval);
  if (next) return next;
  const hint =
    action === "schedule" && needsApproval && state === "draft"
      ? " This brand needs client approval first: submit it for approval."
      : "";
  throw invalidRequest(`state: a post in state ${state} cannot be ${verbs[action]}.${hint}`);
}
