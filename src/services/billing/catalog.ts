/**
 * What customers can buy, from docs/contract.md: one table in code that checkout, the webhook
 * and the billing page read. Amounts and credits never come from the client. Plan prices
 * live in Stripe (lookup keys), so they can change without a deploy.
 */
import { planAllowance, type Plan } from "./pricing";

export type OrderKind = "pack" | "topup";

export interface CreditOffer {
  id: string;
  kind: OrderKind;
  credits: number;
  /** Price in euro cents. */
  amountCents: number;
  label: string;
}

const offer = (id: string, kind: OrderKind, credits: number, euros: number): CreditOffer => ({
  id,
  kind,
  credits,
  amountCents: euros * 100,
  label: `${credits.toLocaleString("en-US")} credits`,
});

/** Form A packs: purchased credits that never expire. */
export const packs: readonly CreditOffer[] = [
  offer("pack_10k", "pack", 10_000, 19),
  offer("pack_25k", "pack", 25_000, 45),
  offer("pack_50k", "pack", 50_000, 85),
  offer("pack_100k", "pack", 100_000, 149),
];

/** Form B subscriber top-ups: purchased credits, offered only while on a monthly plan. */
export const topups: readonly CreditOffer[] = [
  offer("topup_3k", "topup", 3_000, 9),
  offer("topup_7k", "topup", 7_000, 19),
  offer("topup_15k", "topup", 15_000, 39),
];

export function findOffer(id: unknown): CreditOffer | undefined {
  return [...packs, ...topups].find((o) => o.id === id);
}

/** What a customer reads for an offer ("Credit pack of 10,000 credits"); an unknown id as it is. */
export function offerName(id: string): string {
  const offer = findOffer(id);
  if (!offer) return id;
  return `${offer.kind === "pack" ? "Credit pack" : "Top-up"} of ${offer.label}`;
}

export type PaidPlan = "starter" | "pro" | "scale";
export const paidPlans: readonly PaidPlan[] = ["starter", "pro", "scale"];
export const isPaidPlan = (value: unknown): value is PaidPlan => paidPlans.includes(value as PaidPlan);

/** Stripe price lookup key of each paid plan. */
export const planLookupKey = (plan: PaidPlan) => `plan_${plan}`;

export const planNames: Record<Plan, string> = {
  payg: "Pay as you go",
  solo: "Solo",
  starter: "Starter",
  pro: "Pro",
  scale: "Scale",
};

export { planAllowance };
