import { describe, expect, it } from "vitest";
import { nextState, postStates, transition, type PostAction } from "../../src/services/social/post-states";

describe("post state machine", () => {
  it("follows the approval path of a brand that needs client approval", () => {
    let state = transition("draft", "submit", true);
    expect(state).toBe("pending_approval");
    expect(transition(state, "request_changes", true)).toBe("changes_requested");
    expect(transition("changes_requested", "submit", true)).toBe("pending_approval");
    state = transition(state, "approve", true);
    expect(state).toBe("approved");
    state = transition(state, "schedule", true);
    expect(state).toBe("scheduled");
    expect(transition(state, "publish", true)).toBe("published");
    expect(transition(state, "fail", true)).toBe("failed");
  });

  it("never schedules an unapproved post of a brand that needs approval, and says why", () => {
    expect(() => transition("draft", "schedule", true)).toThrow(
      /state draft cannot be scheduled.*needs client approval/,
    );
    expect(() => transition("pending_approval", "schedule", true)).toThrow(/pending_approval/);
    expect(() => transition("changes_requested", "schedule", true)).toThrow(/changes_requested/);
    expect(transition("draft", "schedule", false)).toBe("scheduled");
  });

  it("sends an edited approved post back to review when approval is required", () => {
    expect(transition("approved", "edit", true)).toBe("draft");
    expect(transition("scheduled", "edit", true)).toBe("draft");
    expect(transition("scheduled", "edit", false)).toBe("scheduled");
  });

  it("cancels from any state that has not ended, and nothing leaves an ended state", () => {
    const actions: PostAction[] = [
      "submit",
      "approve",
      "request_changes",
      "edit",
      "schedule",
      "unschedule",
      "publish",
      "fail",
      "cancel",
    ];
    for (const state of postStates) {
      const ended = state === "published" || state === "failed" || state === "cancelled";
      expect(nextState(state, "cancel", true) === "cancelled").toBe(!ended);
      if (ended) for (const action of actions) expect(nextState(state, action, true)).toBeUndefined();
    }
    expect(() => transition("published", "cancel", true)).toThrow(/state published cannot be cancelled/);
  });

  it("publishes only scheduled posts", () => {
    for (const state of postStates)
      expect(nextState(state, "publish", false) !== undefined).toBe(state === "scheduled");
  });
});
