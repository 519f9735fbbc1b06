/**
 * A small self-contained SVG line chart for the journal benchmark: time per operation
 * (log y) against the journal's size in events (log x), one line per operation.
 */
export interface Series {
  name: string;
  points: { x: number; y: number }[];
}

const palette = [
  '#1f77b4',
  '#ff7f0e',
  '#2ca02c',
  '#d62728',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#7f7f7f',
  '#bcbd22',
  '#17becf',
];

const escape = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const compact = (value: number) =>
  value >= 1e6 ? `${value / 1e6}M` : value >= 1e3 ? `${value / 1e3}k` : `${value}`;

export function logLogChart(
  series: Series[],
  labels: { title: string; x: string; y: string },
): string {
  const width = 860;
  const height = 460;
  const left = 70;
  const right = 300;
  const top = 40;
  const bottom = 60;
  const xs = series.flatMap((s) => s.points.map((p) => p.x)).filter((x) => x > 0);
  const ys = series.flatMap((s) => s.points.map((p) => p.y)).filter((y) => y > 0);
  const xMin = 10 ** Math.floor(Math.log10(Math.min(...xs)));
  const xMax = 10 ** Math.ceil(Math.log10(Math.max(...xs)) - 0.01);
  const yMin = 10 ** Math.floor(Math.log10(Math.min(...ys)));
  const yMax = 10 ** Math.ceil(Math.log10(Math.max(...ys)) - 0.01);
  const plotWidth = width - left - right;
  const plotHeight = height - top - bottom;
  const px = (x: number) =>
    left + ((Math.log10(x) - Math.log10(xMin)) / (Math.log10(xMax) - Math.log10(xMin))) * plotWidth;
  const py = (y: number) =>
    top +
    plotHeight -
    ((Math.log10(y) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin))) * plotHeight;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${left}" y="24" font-size="15" font-weight="bold">${escape(labels.title)}</text>`,
  ];
  for (let decade = xMin; decade <= xMax; decade *= 10) {
    const x = px(decade).toFixed(1);
    out.push(
      `<line x1="${x}" y1="${top}" x2="${x}" y2="${top + plotHeight}" stroke="#ddd"/>`,
      `<text x="${x}" y="${top + plotHeight + 18}" text-anchor="middle">${compact(decade)}</text>`,
    );
  }
  for (let decade = yMin; decade <= yMax * 1.0001; decade *= 10) {
    const y = py(decade).toFixed(1);
    out.push(
      `<line x1="${left}" y1="${y}" x2="${left + plotWidth}" y2="${y}" stroke="#ddd"/>`,
      `<text x="${left - 8}" y="${y}" text-anchor="end" dominant-baseline="middle">${Number(decade.toPrecision(3))}</text>`,
    );
  }
  out.push(
    `<rect x="${left}" y="${top}" width="${plotWidth}" height="${plotHeight}" fill="none" stroke="#333"/>`,
    `<text x="${left + plotWidth / 2}" y="${height - 18}" text-anchor="middle">${escape(labels.x)}</text>`,
    `<text transform="translate(18 ${top + plotHeight / 2}) rotate(-90)" text-anchor="middle">${escape(labels.y)}</text>`,
  );
  series.forEach((s, index) => {
    const colour = palette[index % palette.length] as string;
    const points = s.points.filter((p) => p.x > 0 && p.y > 0);
    out.push(
      `<polyline fill="none" stroke="${colour}" stroke-width="2" points="${points
        .map((p) => `${px(p.x).toFixed(1)},${py(p.y).toFixed(1)}`)
        .join(' ')}"/>`,
      ...points.map(
        (p) =>
          `<circle cx="${px(p.x).toFixed(1)}" cy="${py(p.y).toFixed(1)}" r="3" fill="${colour}"/>`,
      ),
    );
    const ly = top + 10 + index * 20;
    out.push(
      `<line x1="${left + plotWidth + 16}" y1="${ly}" x2="${left + plotWidth + 40}" y2="${ly}" stroke="${colour}" stroke-width="2"/>`,
      `<text x="${left + plotWidth + 46}" y="${ly}" dominant-baseline="middle">${escape(s.name)}</text>`,
    );
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
