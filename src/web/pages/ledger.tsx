import type { FC } from "hono/jsx";
import { ledgerKinds } from "../../db/schema";
import type { AccountDetails } from "../../services/accounts/accounts";
import type { LedgerEntryView, LedgerKind } from "../../services/billing/usage";
import { credits, dateTime, signedCredits } from "../format";
import { AppPage, DataTable } from "../layout";

const query = (kind?: string, before?: string) => {
  const params = new URLSearchParams();
  if (kind) params.set("kind", kind);
  if (before) params.set("before", before);
  const text = params.toString();
  return text ? `?${text}` : "";
};

export const LedgerPage: FC<{
  account: AccountDetails;
  entries: LedgerEntryView[];
  kind?: LedgerKind;
  nextBefore: string | null;
  first: boolean;
}> = (p) => (
  <AppPage title="Ledger" path="/app/ledger" email={p.account.email}>
    <p class="muted">
      Every credit movement, newest first. The balance ({credits(p.account.balance)}) is the sum of all entries.
    </p>
    <form method="get" action="/app/ledger" class="card row">
      <label>
        Kind
        <select name="kind">
          <option value="">all</option>
          {ledgerKinds.map((k) => (
            <option value={k} selected={p.kind === k}>
              {k}
            </option>
          ))}
        </select>
      </label>
      <button type="submit" class="secondary">
        Filter
      </button>
      <a class="button secondary" href={`/app/ledger.csv${query(p.kind)}`}>
        Export CSV
      </a>
    </form>
    <DataTable
      columns={["Date", "Kind", "Credits#", "Plan#", "Purchased#", "Detail"]}
      empty="No entries."
      count={p.entries.length}
    >
      {p.entries.map((e) => (
        <tr data-kind={e.kind}>
          <td>{dateTime(e.createdAt)}</td>
          <td>
            <span class="badge">{e.kind}</span>
          </td>
          <td class={`num ${e.amount > 0 ? "pos" : e.amount < 0 ? "neg" : ""}`}>{signedCredits(e.amount)}</td>
          <td class="num">{e.planDelta ? signedCredits(e.planDelta) : ""}</td>
          <td class="num">{e.purchasedDelta ? signedCredits(e.purchasedDelta) : ""}</td>
          <td class="wrap">
            {e.reason}
            {e.jobId && <span class="muted"> · {e.jobId}</span>}
          </td>
        </tr>
      ))}
    </DataTable>
    <p class="row">
      {!p.first && <a href={`/app/ledger${query(p.kind)}`}>Newest</a>}
      {p.nextBefore && <a href={`/app/ledger${query(p.kind, p.nextBefore)}`}>Older entries →</a>}
    </p>
  </AppPage>
);
