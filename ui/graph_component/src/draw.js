// Drawing the visible graph on a canvas 2D: group frames, edges, boxes batched by colour, then text once the
// zoom makes it readable. Only what lies in the viewport is drawn. Every string is canvas text, never HTML.

import { BADGE } from "./layout.js";
import { say } from "./panels.js";

const FONT = "system-ui, -apple-system, 'Segoe UI', sans-serif";

export function draw(ctx, view) {
  const { graph, layoutState: L, colours, k, tx, ty, width, height, dpr, selected } = view;
  const { box, frames, visible } = L;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = "#fbfcfe";
  ctx.fillRect(0, 0, width, height);
  ctx.setTransform(k * dpr, 0, 0, k * dpr, tx * dpr, ty * dpr);
  const x0 = -tx / k;
  const y0 = -ty / k;
  const x1 = x0 + width / k;
  const y1 = y0 + height / k;
  const inView = (b) => b.x < x1 && b.x + b.w > x0 && b.y < y1 && b.y + b.h > y0;
  drawFrames(ctx, graph, frames, inView, k);
  drawEdges(ctx, view, { x0, y0, x1, y1 });
  const shown = [];
  const byColour = new Map();
  for (const it of visible.items) {
    const b = box.get(it);
    if (!inView(b)) continue;
    shown.push(it);
    const c = it >= graph.count ? colours.groupColour[it - graph.count] : colours.nodeColour[it];
    if (!byColour.has(c)) byColour.set(c, []);
    byColour.get(c).push(b);
  }
  for (const it of shown) if (it >= graph.count) stack(ctx, box.get(it));
  for (const [c, boxes] of byColour) {
    ctx.fillStyle = c;
    ctx.beginPath();
    for (const b of boxes) ctx.rect(b.x, b.y, b.w, b.h);
    ctx.fill();
  }
  if (k > 0.25) {
    ctx.strokeStyle = "rgba(30,40,60,0.45)";
    ctx.lineWidth = 1 / k;
    ctx.beginPath();
    for (const it of shown) {
      const b = box.get(it);
      ctx.rect(b.x, b.y, b.w, b.h);
    }
    ctx.stroke();
  }
  if (selected != null && box.has(selected)) {
    const b = box.get(selected);
    ctx.strokeStyle = "#e8590c";
    ctx.lineWidth = Math.max(3 / k, 2);
    ctx.strokeRect(b.x - 3, b.y - 3, b.w + 6, b.h + 6);
  }
  if (k * 12 >= 6.5) for (const it of shown) boxText(ctx, graph, it, box.get(it), k);
  if (k >= 1.1) edgeLabels(ctx, view, inView);
}

function stack(ctx, b) {
  // a collapsed group: two sheets behind its box, so it reads as "more inside"
  ctx.fillStyle = "#e3e8ef";
  ctx.fillRect(b.x + 6, b.y + 6, b.w, b.h);
  ctx.fillStyle = "#eef2f7";
  ctx.fillRect(b.x + 3, b.y + 3, b.w, b.h);
}

function drawFrames(ctx, graph, frames, inView, k) {
  for (const f of frames) {
    if (!inView(f)) continue;
    if (f.owner != null) {
      // an open node: its own box is drawn on top as the frame's header; its bodies sit inside
      ctx.fillStyle = "rgba(255,255,255,0.92)";
      ctx.fillRect(f.x, f.y, f.w, f.h);
      ctx.strokeStyle = "rgba(60,74,99,0.7)";
      ctx.lineWidth = 1.5 / k;
      ctx.strokeRect(f.x, f.y, f.w, f.h);
      continue;
    }
    ctx.fillStyle = "rgba(90,110,150,0.06)";
    ctx.fillRect(f.x, f.y, f.w, f.h);
    ctx.strokeStyle = "rgba(90,110,150,0.45)";
    ctx.lineWidth = 1 / k;
    ctx.strokeRect(f.x, f.y, f.w, f.h);
    if (k * 11 >= 6) {
      ctx.fillStyle = "#3c4a63";
      ctx.font = `600 11px ${FONT}`;
      ctx.textAlign = "left";
      ctx.textBaseline = "top";
      const gi = f.group;
      const room = Math.max(4, Math.floor((f.w - 60) / 6.8));
      ctx.fillText(`▾ ${clip(graph.data.g.name[gi], room)}  (${graph.data.g.count[gi]})`, f.x + 5, f.y + 3);
    }
  }
}

function edgePoints(L, s, t) {
  const { box } = L;
  const a = L.open.get(s) || box.get(s); // what an open node computes leaves from the bottom of its frame
  const b = box.get(t);
  const sx = a.x + a.w / 2;
  const sy = a.y + a.h;
  const ex = b.x + b.w / 2;
  const ey = b.y;
  return [sx, sy, ex, ey];
}

function drawEdges(ctx, view, vp) {
  const { layoutState: L, k, selected } = view;
  const hot = [];
  ctx.strokeStyle = "#9aa6b8";
  ctx.lineWidth = 1.2 / k;
  ctx.beginPath();
  for (const e of L.drawn) {
    const [sx, sy, ex, ey] = edgePoints(L, e.s, e.t);
    if (Math.max(sx, ex) + 80 < vp.x0 || Math.min(sx, ex) - 80 > vp.x1) continue;
    if (Math.max(sy, ey) < vp.y0 || Math.min(sy, ey) > vp.y1) continue;
    if (e.s === selected || e.t === selected) hot.push([sx, sy, ex, ey]);
    curve(ctx, sx, sy, ex, ey);
  }
  ctx.stroke();
  if (hot.length) {
    ctx.strokeStyle = "#e8590c";
    ctx.lineWidth = 2.2 / k;
    ctx.beginPath();
    for (const [sx, sy, ex, ey] of hot) curve(ctx, sx, sy, ex, ey);
    ctx.stroke();
  }
}

function curve(ctx, sx, sy, ex, ey) {
  const dy = ey - sy;
  ctx.moveTo(sx, sy);
  if (dy > 60 && Math.abs(ex - sx) < 4) {
    // a long straight edge would run through the boxes between: bow it out to the side
    const bow = Math.min(120, 14 + dy / 12);
    ctx.bezierCurveTo(sx + bow, sy + dy * 0.2, ex + bow, ey - dy * 0.2, ex, ey);
  } else ctx.bezierCurveTo(sx, sy + dy / 2, ex, ey - dy / 2, ex, ey);
  ctx.moveTo(ex - 3, ey - 5);
  ctx.lineTo(ex, ey);
  ctx.lineTo(ex + 3, ey - 5);
}

function boxText(ctx, graph, it, b, k) {
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  ctx.fillStyle = "#1d2430";
  const cx = b.x + b.w / 2;
  const maxChars = Math.floor((b.w - 10) / 7.4);
  if (it >= graph.count) {
    const gi = it - graph.count;
    const g = graph.data.g;
    ctx.font = `600 12px ${FONT}`;
    ctx.fillText(clip(`▸ ${g.name[gi]}`, maxChars), cx, b.y + 14);
    ctx.font = `10px ${FONT}`;
    const more = g.repeat[gi] || say(graph.words, g.kind[gi] === "scope" ? "group" : g.kind[gi]);
    const text = say(graph.words, "{count} nodes · {more}", { count: g.count[gi].toLocaleString("en"), more });
    ctx.fillText(clip(text, maxChars + 2), cx, b.y + 33);
    return;
  }
  nodeText(ctx, graph, it, b, k);
}

function nodeText(ctx, graph, it, b, k) {
  const holder = graph.holderOf.get(it);
  let w = b.w;
  if (holder !== undefined) {
    // the badge that opens or closes the bodies this node holds
    w -= BADGE;
    ctx.font = `700 13px ${FONT}`;
    ctx.fillStyle = "#2f3b52";
    ctx.fillText(graph.expanded[holder] ? "▾" : "▸", b.x + w + BADGE / 2 - 2, b.y + b.h / 2);
    ctx.fillStyle = "#1d2430";
  }
  const cx = b.x + w / 2;
  const maxChars = Math.floor((w - 10) / 7.4);
  const pseudo = graph.pseudo[it];
  const attrs = pseudo ? graph.data.n.name[it] : graph.data.n.attrs[it];
  const twoLines = attrs && k * 10 >= 6;
  ctx.font = `600 12px ${FONT}`;
  ctx.fillText(clip(graph.op(it), maxChars), cx, twoLines ? b.y + 12 : b.y + b.h / 2);
  if (twoLines) {
    ctx.font = `10px ${FONT}`;
    ctx.fillStyle = "#3a4456";
    ctx.fillText(clip(attrs, maxChars + 4), cx, b.y + 26);
  }
}

function edgeLabels(ctx, view, inView) {
  // one label per tensor, just under the box that makes it: it never lands on another box
  const { graph, layoutState: L } = view;
  ctx.font = `10px ${FONT}`;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  const done = new Set();
  for (const e of L.visible.edges) {
    const text = graph.label(e.edge);
    const key = `${e.s}:${graph.data.e.tensor[e.edge]}`;
    if (!text || done.has(key)) continue;
    done.add(key);
    const b = L.open.get(e.s) || L.box.get(e.s);
    const mx = b.x + b.w / 2 + 6;
    const my = b.y + b.h + 11;
    if (!inView({ x: mx, y: my - 6, w: 120, h: 12 })) continue;
    const label = clip(text, 40);
    const w = ctx.measureText(label).width;
    ctx.fillStyle = "rgba(251,252,254,0.85)";
    ctx.fillRect(mx - 2, my - 6, w + 4, 12);
    ctx.fillStyle = "#56627a";
    ctx.fillText(label, mx, my);
  }
}

export function clip(text, n) {
  return text.length > n ? `${text.slice(0, Math.max(1, n - 1))}…` : text;
}

// The minimap: every visible item as a dot, drawn once per layout; the viewport drawn over it per frame.
export function minimapImage(canvas, view) {
  const { graph, layoutState: L, colours } = view;
  const ctx = canvas.getContext("2d");
  const { minX, minY, maxX, maxY } = L.bounds;
  const s = Math.min((canvas.width - 8) / (maxX - minX || 1), (canvas.height - 8) / (maxY - minY || 1));
  // centred: world (minX, minY) sits at (ox, oy) on the minimap
  const ox = (canvas.width - (maxX - minX) * s) / 2 - minX * s;
  const oy = (canvas.height - (maxY - minY) * s) / 2 - minY * s;
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  for (const it of L.visible.items) {
    const b = L.box.get(it);
    const c = it >= graph.count ? colours.groupColour[it - graph.count] : colours.nodeColour[it];
    ctx.fillStyle = c === "#ffffff" ? "#d5dbe4" : c; // white boxes (not in a colouring) on the white minimap
    ctx.fillRect(ox + b.x * s, oy + b.y * s, Math.max(1, b.w * s), Math.max(1, b.h * s));
  }
  return { scale: s, ox, oy, image: ctx.getImageData(0, 0, canvas.width, canvas.height) };
}
