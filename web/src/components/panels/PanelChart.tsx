import {
  Area,
  AreaChart,
  Bar,
  BarChart,
  CartesianGrid,
  Cell,
  Legend,
  Line,
  LineChart,
  Pie,
  PieChart,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
} from 'recharts';
import type { PanelComponent } from 'parley/client';

type Chart = Extract<PanelComponent, { type: 'chart' }>;

const colors = ['#2563eb', '#16a34a', '#dc2626', '#9333ea', '#ea580c', '#0891b2'];

/** A panel's `chart` component, drawn by recharts (loaded only when a panel has a chart). */
export default function PanelChart({ chart }: { chart: Chart }) {
  const rows = chart.labels.map((label, index) => ({
    label,
    ...Object.fromEntries(chart.series.map((series) => [series.name, series.values[index] ?? 0])),
  }));
  const series = chart.series.map((one, index) => ({
    name: one.name,
    color: colors[index % colors.length] as string,
  }));
  const axes = [
    <CartesianGrid key="grid" strokeDasharray="3 3" />,
    <XAxis key="x" dataKey="label" />,
    <YAxis key="y" />,
    <Tooltip key="tip" />,
    <Legend key="legend" />,
  ];
  let drawn;
  if (chart.kind === 'pie') {
    const first = chart.series[0];
    drawn = (
      <PieChart>
        <Pie
          data={chart.labels.map((label, index) => ({ label, value: first?.values[index] ?? 0 }))}
          dataKey="value"
          nameKey="label"
          isAnimationActive={false}
        >
          {chart.labels.map((label, index) => (
            <Cell key={label} fill={colors[index % colors.length]} />
          ))}
        </Pie>
        <Tooltip />
        <Legend />
      </PieChart>
    );
  } else if (chart.kind === 'bar') {
    drawn = (
      <BarChart data={rows}>
        {axes}
        {series.map((one) => (
          <Bar key={one.name} dataKey={one.name} fill={one.color} isAnimationActive={false} />
        ))}
      </BarChart>
    );
  } else if (chart.kind === 'area') {
    drawn = (
      <AreaChart data={rows}>
        {axes}
        {series.map((one) => (
          <Area
            key={one.name}
            dataKey={one.name}
            stroke={one.color}
            fill={one.color}
            isAnimationActive={false}
          />
        ))}
      </AreaChart>
    );
  } else {
    drawn = (
      <LineChart data={rows}>
        {axes}
        {series.map((one) => (
          <Line key={one.name} dataKey={one.name} stroke={one.color} isAnimationActive={false} />
        ))}
      </LineChart>
    );
  }
  return (
    <figure className="panel-chart" aria-label={chart.title ?? 'Chart'}>
      {chart.title ? <figcaption className="small">{chart.title}</figcaption> : null}
      <ResponsiveContainer width="100%" height={220}>
        {drawn}
      </ResponsiveContainer>
    </figure>
  );
}
