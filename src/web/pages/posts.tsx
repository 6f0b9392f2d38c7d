import type { FC } from "hono/jsx";
import type { AccountDetails } from "../../services/accounts/accounts";
import type { BrandView } from "../../services/social/brands";
import type { BrandStats } from "../../services/social/post-stats";
import type { PostView } from "../../services/social/posts";
import { credits } from "../format";
import { AppPage, DataTable } from "../layout";

const metrics = ["views", "likes", "comments", "shares"] as const;
const colours = { views: "#3451d1", likes: "#ee46bc", comments: "#f79009", shares: "#12b76a" };

/** Engagement per network as grouped horizontal bars (server-rendered SVG). */
const EngagementChart: FC<{ stats: BrandStats }> = ({ stats }) => {
  const networks = Object.keys(stats.engagement.byNetwork);
  if (networks.length === 0) return <p class="muted">No engagement recorded in this period.</p>;
  const max = Math.max(1, ...networks.flatMap((n) => metrics.map((m) => stats.engagement.byNetwork[n][m])));
  const row = 16;
  const height = networks.length * (metrics.length * row + 14);
  return (
    <div class="chart">
      <div class="plot">
        <svg
          viewBox={`0 0 640 ${height}`}
          role="img"
          aria-label={`Engagement per network: ${metrics.map((m) => `${m} ${stats.engagement[m]}`).join(", ")}`}
        >
          {networks.map((network, n) => {
            const top = n * (metrics.length * row + 14);
            return (
              <g>
                <text x="0" y={top + 12} font-size="12" fill="#344054">
                  {network}
                </text>
                {metrics.map((metric, m) => {
                  const value = stats.engagement.byNetwork[network][metric];
                  const y = top + m * row;
                  return (
                    <g>
                      <rect
                        x="90"
                        y={y + 2}
                        width={Math.max(1, (value / max) * 480).toFixed(1)}
                        height="12"
                        fill={colours[metric]}
                        data-metric={metric}
                        data-network={network}
                      >
                        <title>{`${network} · ${metric}: ${value}`}</title>
                      </rect>
                      <text x={(96 + (value / max) * 480).toFixed(1)} y={y + 12} font-size="11" fill="#667085">
                        {`${metric} ${credits(value)}`}
                      </text>
                    </g>
                  );
                })}
              </g>
            );
          })}
        </svg>
      </div>
    </div>
  );
};

export const PostsPage: FC<{
  account: AccountDetails;
  brands: { brand: BrandView; stats: BrandStats; posts: PostView[] }[];
}> = ({ account, brands }) => (
  <AppPage title="Brands and posts" path="/app/posts" email={account.email}>
    <p class="muted">
      Posts are free. Create brands and posts through the API (/api/v1/brands, /api/v1/posts) or an assistant connected
      in Connected apps; client reviews and publications show here.
    </p>
    {brands.length === 0 && <p>No brand yet.</p>}
    {brands.map(({ brand, stats, posts }) => (
      <section class="card" data-brand-id={brand.brandId}>
        <h2 style="margin-top:0">{brand.name}</h2>
        <p class="muted">
          {brand.timeZone} · {brand.requiresApproval ? "client approval required" : "no approval step"} ·{" "}
          {brand.networks.map((n) => n.network).join(", ") || "no network"}
        </p>
        <div class="grid">
          <div class="stat">
            <div class="label">Published (30 days)</div>
            <div class="value">{Object.values(stats.publishedByNetwork).reduce((a, b) => a + b, 0)}</div>
          </div>
          <div class="stat">
            <div class="label">Approval turnaround</div>
            <div class="value">{stats.approval.averageHours === null ? "—" : `${stats.approval.averageHours} h`}</div>
          </div>
          {metrics.map((metric) => (
            <div class="stat">
              <div class="label">{metric}</div>
              <div class="value">{credits(stats.engagement[metric])}</div>
            </div>
          ))}
        </div>
        <EngagementChart stats={stats} />
        <DataTable columns={["Post", "State", "Planned", "Review", "Networks"]} empty="No posts." count={posts.length}>
          {posts.map((post) => (
            <tr data-post-id={post.postId}>
              <td class="wrap">{post.text.length > 80 ? `${post.text.slice(0, 80)}…` : post.text}</td>
              <td>
                <span
                  class={`badge ${post.state === "published" ? "completed" : post.state === "failed" ? "failed" : ""}`}
                >
                  {post.state}
                </span>
              </td>
              <td>{post.scheduledAtLocal ? post.scheduledAtLocal.replace("T", " ") : <span class="muted">—</span>}</td>
              <td class="wrap">
                {post.reviews.length === 0 && post.comments.length === 0 ? (
                  <span class="muted">—</span>
                ) : (
                  post.reviews.map((r) => (
                    <div>
                      {r.reviewerName}: {r.decision === "approved" ? "approved" : "changes requested"}{" "}
                      {r.at.slice(0, 16).replace("T", " ")} UTC
                      {r.comment ? ` — “${r.comment}”` : ""}
                    </div>
                  ))
                )}
                {/* The review thread: each comment at its moment, on the media version it was made on. */}
                {post.comments.map((c) => (
                  <div class="muted" data-testid="post-comment">
                    {c.timecode ?? "whole post"} · {c.author === "client" ? c.authorName : "you"}
                    {c.mediaVersion !== null ? ` (version ${c.mediaVersion})` : ""}: “
                    {c.text.length > 200 ? `${c.text.slice(0, 200)}…` : c.text}”
                  </div>
                ))}
              </td>
              <td class="wrap">
                {post.deliveries.length
                  ? post.deliveries.map((d) =>
                      d.url ? (
                        <a href={d.url}>{d.network}</a>
                      ) : (
                        <span>
                          {d.network} ({d.status}){" "}
                        </span>
                      ),
                    )
                  : post.networks.join(", ")}
                {/* What a network would refuse in the media: submit and schedule wait until it is fixed. */}
                {post.preflight.findings.map((f) => (
                  <div class="notice error" data-testid="post-finding">
                    {f.message}
                  </div>
                ))}
              </td>
            </tr>
          ))}
        </DataTable>
      </section>
    ))}
  </AppPage>
);
