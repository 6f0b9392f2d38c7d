import type { FC } from "hono/jsx";
import type { AccountDetails } from "../../services/accounts/accounts";
import type { JobListItem } from "../../services/billing/usage";
import type { JobStep } from "../../contract/jobs";
import { credits, dateTime } from "../format";
import { AppPage, DataTable } from "../layout";

/** A pipeline's steps, in order, each with its state: which one is running, which one failed. */
const PipelineSteps: FC<{ steps: JobStep[] }> = ({ steps }) => (
  <ol class="steps" aria-label="Steps">
    {steps.map((step) => (
      <li data-step-status={step.status}>
        {step.tool} <span class={`badge ${step.status}`}>{step.status}</span>
      </li>
    ))}
  </ol>
);

export const JobsPage: FC<{ account: AccountDetails; jobs: JobListItem[] }> = ({ account, jobs }) => (
  <AppPage title="Jobs" path="/app/jobs" email={account.email}>
    <p class="muted">
      Jobs and their results stay available for 3 hours after they end. A failed job is refunded in full.
    </p>
    <DataTable
      columns={["Created", "Tool", "Status", "Cost#", "Result", "Job"]}
      empty="No recent jobs."
      count={jobs.length}
    >
      {jobs.map((job) => (
        <tr data-job-id={job.jobId}>
          <td>{dateTime(job.createdAt)}</td>
          <td>
            {job.tool}
            {job.test && (
              <>
                {" "}
                <span class="badge queued">test</span>
              </>
            )}
            {job.steps && <PipelineSteps steps={job.steps} />}
          </td>
          <td>
            <span class={`badge ${job.status}`}>{job.status}</span>
          </td>
          <td class="num">{credits(job.cost)}</td>
          <td class="wrap">
            {job.downloadUrl ? (
              <a href={job.downloadUrl}>{job.filename ?? "download"}</a>
            ) : job.error ? (
              <span class="neg">{job.error} (refunded)</span>
            ) : (
              <span class="muted">—</span>
            )}
          </td>
          <td>
            <code>{job.jobId}</code>
          </td>
        </tr>
      ))}
    </DataTable>
  </AppPage>
);
