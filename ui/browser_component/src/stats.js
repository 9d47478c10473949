// The statistics of core/runtime/stats.py (summarize), for the standalone page, where there is no Python: the
// median (numpy's: the mean of the middle two when n is even), its 95 % distribution-free interval from order
// statistics (ranks n/2 ± z·√n/2), and numpy's linear-interpolation percentiles. tests/e2e compares the two on
// the same call times.
const Z95 = 1.959963984540054;

function percentile(sorted, q) {
  const at = ((sorted.length - 1) * q) / 100;
  const low = Math.floor(at);
  const high = Math.min(low + 1, sorted.length - 1);
  return sorted[low] + (sorted[high] - sorted[low]) * (at - low);
}

export function summarize(values) {
  const data = Float64Array.from(values).sort();
  const n = data.length;
  if (n === 0) return { n: 0, median: NaN, p90: NaN, p99: NaN, min: NaN, max: NaN, median_low: NaN, median_high: NaN };
  const half = (Z95 * Math.sqrt(n)) / 2;
  const low = Math.max(Math.floor(n / 2 - half), 0);
  const high = Math.min(Math.ceil(n / 2 + half), n - 1);
  return {
    n,
    median: percentile(data, 50),
    p90: percentile(data, 90),
    p99: percentile(data, 99),
    min: data[0],
    max: data[n - 1],
    median_low: data[low],
    median_high: data[high],
  };
}
