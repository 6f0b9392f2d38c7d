/**
 * Credits spent per day and tool as a stacked bar chart in server-rendered SVG: no client
 * script, readable on a phone (it scales), each segment with a <title> for hover details.
 */
import type { FC } from "hono/jsx";
import type { DailyUsage } from "../services/billing/usage";
import { credits } from "./format";

const palette = [
  "#3451d1",
  "#12b76a",
  "#f79009",
  "#ee46bc",
  "#06aed4",
  "#7a5af8",
  "#f04438",
  "#669f2a",
  "#875bf7",
  "#98a2b3",
  "#475467",
];

export const UsageChart: FC<{ usage: DailyUsage }> = ({ usage }) => {
  const tools = Object.keys(usage.byTool).sort();
  const totals = usage.days.map((_, i) => tools.reduce((sum, tool) => sum + Math.max(0, usage.byTool[tool][i]), 0));
  const max = Math.max(1, ...totals);
  const width = 720;
  const height = 220;
  const left = 44;
  const bottom = 24;
  const plotHeight = height - bottom - 10;
  const step = (width - left - 4) / usage.days.length;
  const barWidth = Math.max(2, step * 0.7);
  const y = (value: number) => 10 + plotHeight - (value / max) * plotHeight;
  return (
    <div class="chart">
      <div class="plot">
        <svg
          viewBox={`0 0 ${width} ${height}`}
          role="img"
          aria-label={`Credits spent per day over ${usage.days.length} days: ${credits(usage.total)} in all`}
        >
          <line x1={left} x2={width} y1={y(0)} y2={y(0)} stroke="#d0d5dd" />
          <line x1={left} x2={width} y1={y(max)} y2={y(max)} stroke="#f2f4f7" />
          <text x={left - 6} y={y(max) + 4} text-anchor="end" font-size="11" fill="#667085">
            {credits(max)}
          </text>
          <text x={left - 6} y={y(0) + 4} text-anchor="end" font-size="11" fill="#667085">
            0
          </text>
          {usage.days.map((day, i) => {
            let base = 0;
            const x = left + i * step + (step - barWidth) / 2;
            return (
              <g>
                {tools.map((tool, t) => {
                  const value = Math.max(0, usage.byTool[tool][i]);
                  if (value === 0) return null;
                  const rect = (
                    <rect
                      x={x.toFixed(1)}
                      y={y(base + value).toFixed(1)}
                      width={barWidth.toFixed(1)}
                      height={(y(base) - y(base + value)).toFixed(1)}
                      fill={palette[t % palette.length]}
                      data-tool={tool}
                      data-day={day}
                    >
                      <title>{`${day} · ${tool}: ${credits(value)} credits`}</title>
                    </rect>
                  );
                  base += value;
                  return rect;
                })}
                {i % 5 === 0 || i === usage.days.length - 1 ? (
                  // The last day's label ends at the edge instead of crossing it.
                  <text
                    x={(i === usage.days.length - 1 ? width : x + barWidth / 2).toFixed(1)}
                    y={height - 6}
                    text-anchor={i === usage.days.length - 1 ? "end" : "middle"}
                    font-size="11"
                    fill="#667085"
                  >
                    {day.slice(5)}
                  </text>
                ) : null}
              </g>
            );
          })}
        </svg>
      </div>
      <div class="legend">
        {tools.length === 0 ? (
          <span class="muted">No credits spent in the last {usage.days.length} days.</span>
        ) : (
          tools.map((tool, t) => (
            <span>
              <i style={`background:${palette[t % palette.length]}`}></i>
              {tool} ({credits(usage.byTool[tool].reduce((a, b) => a + b, 0))})
            </span>
          ))
        )}
      </div>
    </div>
  );
};
