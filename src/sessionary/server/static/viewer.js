// The sessionary web viewer: plain JavaScript over the /v1 API, no build step.
// Every string from the store is put in the page with textContent, never as HTML.
"use strict";

const state = { key: sessionStorage.getItem("sessionary-key") || "", user: "",
  cursor: null, session: null, stream: null };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

function headers() {
  const h = { "Content-Type": "application/json" };
  if (state.key) h.Authorization = "Bearer " + state.key;
  if (state.user) h["X-Sessionary-User"] = state.user;
  return h;
}

async function api(path) {
  const response = await fetch(path, { headers: headers() });
  const body = await response.json();
  if (response.status === 401) { askForKey(body.error.message); throw new Error("unauthorized"); }
  if (!response.ok) throw new Error(body.error ? body.error.type + ": " + body.error.message : response.status);
  return body;
}

function askForKey(message) {
  document.getElementById("key-form").hidden = false;
  document.getElementById("key-error").textContent = state.key ? message : "";
}

function marked(snippet, spans) {
  // A hit's spans are [start, end) offsets into its snippet (the author's text, which may
  // hold its own **markdown**); each becomes a <mark>, as text, never parsed as HTML.
  const span = el("span");
  let at = 0;
  for (const [start, end] of spans || []) {
    if (start < at || end <= start) continue;
    span.append(snippet.slice(at, start), el("mark", { text: snippet.slice(start, end) }));
    at = end;
  }
  span.append(snippet.slice(at));
  return span;
}

function usage(s) {
  const cost = s.cost ? ` · $${s.cost.toFixed(4)}` : "";
  return `${s.message_count} messages · ${s.input_tokens + s.output_tokens} tokens${cost}`;
}

async function loadSessions(more = false) {
  const list = document.getElementById("session-list");
  if (!more) { list.replaceChildren(); state.cursor = null; }
  const query = new URLSearchParams({ limit: "50", preview: "true" });
  if (state.cursor) query.set("cursor", state.cursor);
  const page = await api("/v1/sessions?" + query);
  for (const s of page.sessions) {
    list.append(el("li", { class: "session-item", "data-id": s.id, onclick: () => openSession(s.id) },
      el("div", { class: "session-name", text: s.name || s.id }),
      el("div", { class: "session-preview", text: s.preview || "(empty)" }),
      el("div", { class: "session-usage", text: usage(s) + (s.end_reason ? ` · ended: ${s.end_reason}` : "") })));
  }
  state.cursor = page.next_cursor;
  document.getElementById("more-sessions").hidden = !page.next_cursor;
}

async function allMessages(id) {
  const found = [];
  let cursor = null;
  do {
    const query = new URLSearchParams({ limit: "2000" });
    if (cursor) query.set("cursor", cursor);
    const page = await api(`/v1/sessions/${encodeURIComponent(id)}/tree?` + query);
    found.push(...page.messages);
    cursor = page.next_cursor;
  } while (cursor);
  return found;
}

function renderPart(part) {
  if (part.type === "text") return el("div", { class: "text", text: part.text });
  if (part.type === "reasoning") {
    return el("details", { class: "reasoning" }, el("summary", { text: "reasoning" }), el("pre", { text: part.text }));
  }
  if (part.type === "tool_call") {
    const args = typeof part.arguments === "string" ? part.arguments : JSON.stringify(part.arguments, null, 2);
    return el("details", { class: "tool-call" }, el("summary", { text: `→ ${part.name}(${(args || "").slice(0, 60).replace(/\s+/g, " ")})` }),
      el("pre", { text: args || "" }));
  }
  if (part.type === "tool_result") {
    const output = typeof part.output === "string" ? part.output : JSON.stringify(part.output, null, 2);
    const label = `← result of ${part.name || part.call_id}${part.is_error ? " (error)" : ""} · ${output.length} chars`;
    return el("details", { class: "tool-result" }, el("summary", { text: label }), el("pre", { text: output }));
  }
  return el("pre", { class: "part", text: JSON.stringify(part) });
}

function renderMessage(m, view) {
  const classes = ["message"];
  if (!view.onHead.has(m.id)) classes.push("off-head");
  if (m.id === view.head) classes.push("head");
  if (view.compacted.has(m.id)) classes.push("compacted");
  const siblings = view.children.get(m.parent_id || "") || [];
  const top = el("div", { class: "meta" }, el("span", { class: "role", text: m.role }),
    el("span", { class: "muted", text: new Date(m.created_at).toLocaleString() }));
  if (siblings.length > 1) {
    top.append(el("span", { class: "branch-badge", text: `branch ${siblings.indexOf(m) + 1}/${siblings.length}` }));
  }
  if (m.id === view.head) top.append(el("span", { class: "head-badge", text: "HEAD" }));
  const node = el("div", { class: classes.join(" "), "data-id": m.id, "data-role": m.role }, top);
  for (const part of m.parts) node.append(renderPart(part));
  return node;
}

function renderOverlay(o) {
  return el("div", { class: "overlay", "data-overlay": o.id },
    el("div", { class: "overlay-title", text: `Compacted: ${o.covered} messages → summary (${o.tokens_before} → ${o.tokens_after} tokens)` }),
    el("details", {}, el("summary", { text: "summary" }), el("pre", { class: "overlay-summary", text: o.summary })));
}

function buildView(messages, info, overlays) {
  const byId = new Map(messages.map((m) => [m.id, m]));
  const children = new Map();
  for (const m of messages) {
    const key = m.parent_id || "";
    if (!children.has(key)) children.set(key, []);
    children.get(key).push(m);
  }
  const onHead = new Set();
  for (let id = info.head_id; id && byId.has(id); id = byId.get(id).parent_id) onHead.add(id);
  const compacted = new Set();
  const overlayAt = new Map();
  for (const o of overlays) {
    for (let id = o.last_id; id && byId.has(id); id = byId.get(id).parent_id) {
      compacted.add(id);
      if (id === o.first_id) break;
    }
    overlayAt.set(o.first_id, o);
  }
  return { byId, children, onHead, compacted, overlayAt, head: info.head_id };
}

function renderTree(view) {
  // Chains render flat; a message with several children opens side-by-side branches.
  const root = el("div");
  const stack = [[view.children.get("") || [], root]];
  while (stack.length) {
    const [starts, container] = stack.pop();
    let target = container;
    if (starts.length > 1) {
      target = el("div", { class: "branches" });
      container.append(target);
    }
    for (const start of starts) {
      const lane = starts.length > 1 ? el("div", { class: "branch" }) : target;
      if (lane !== target) target.append(lane);
      let m = start;
      while (m) {
        const overlay = view.overlayAt.get(m.id);
        if (overlay) lane.append(renderOverlay(overlay));
        lane.append(renderMessage(m, view));
        const kids = view.children.get(m.id) || [];
        if (kids.length === 1) { m = kids[0]; continue; }
        if (kids.length > 1) stack.push([kids, lane]);
        m = null;
      }
    }
  }
  return root;
}

function renderBlock(block, versions) {
  const node = el("div", { class: "block", "data-label": block.label },
    el("div", { class: "block-label", text: block.label }),
    el("div", { class: "block-meta", text: `${block.kind} · ${block.level} · ${block.tokens} tokens${block.limit ? " of " + block.limit : ""}` }),
    el("pre", { class: "block-content", text: block.content || "(empty)" }));
  if (versions.length) {
    const history = el("details", { class: "block-history" }, el("summary", { text: `${versions.length} versions` }));
    for (const v of versions.slice().reverse()) {
      history.append(el("div", { class: "block-version" },
        el("div", { class: "muted", text: `v${v.version} by ${v.author} · ${new Date(v.updated_at).toLocaleString()}` }),
        el("pre", { text: v.content })));
    }
    node.append(history);
  }
  return node;
}

async function renderSide(id) {
  const base = `/v1/sessions/${encodeURIComponent(id)}`;
  const [blocks, st, overlays] = await Promise.all([api(base + "/blocks"), api(base + "/state"), api(base + "/overlays")]);
  const holder = document.getElementById("blocks");
  holder.replaceChildren();
  for (const block of blocks) {
    const versions = block.kind === "writable" ? await api(`${base}/blocks/${encodeURIComponent(block.label)}/versions`).catch(() => []) : [];
    holder.append(renderBlock(block, versions));
  }
  if (!blocks.length) holder.append(el("p", { class: "muted", text: "No blocks stored." }));
  document.getElementById("state").textContent = `version ${st.version}\n` + JSON.stringify(st.data, null, 2);
  const list = document.getElementById("overlays");
  list.replaceChildren(...overlays.map(renderOverlay));
  if (!overlays.length) list.append(el("p", { class: "muted", text: "None." }));
  return overlays;
}

async function openSession(id) {
  state.session = id;
  for (const item of document.querySelectorAll(".session-item")) item.classList.toggle("selected", item.dataset.id === id);
  document.getElementById("search-results").hidden = true;
  document.getElementById("empty").hidden = true;
  document.getElementById("session-view").hidden = false;
  await refresh(id);
  follow(id);
}

async function refresh(id) {
  const info = await api(`/v1/sessions/${encodeURIComponent(id)}`);
  const [messages, overlays] = await Promise.all([allMessages(id), renderSide(id)]);
  document.getElementById("session-header").replaceChildren(
    el("div", { class: "title", text: info.name || info.id }),
    el("div", { class: "muted", text: `${info.id}${info.model ? " · " + info.model : ""}${info.parent_session_id ? " · forked from " + info.parent_session_id : ""}` }),
    el("div", { class: "session-usage", text: usage(info) }));
  document.getElementById("tree").replaceChildren(renderTree(buildView(messages, info, overlays)));
}

async function follow(id) {
  // fetch() rather than EventSource, so the API key travels in a header, not the URL.
  if (state.stream) state.stream.abort();
  const control = new AbortController();
  state.stream = control;
  const live = document.getElementById("live");
  try {
    const response = await fetch(`/v1/sessions/${encodeURIComponent(id)}/events`, { headers: headers(), signal: control.signal });
    live.textContent = "● live";
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "", first = true;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      const events = buffer.split("\n\n");
      buffer = events.pop();
      if (events.some((e) => /^event: head/m.test(e))) {
        if (!first && state.session === id) await refresh(id);
        first = false;
      }
    }
  } catch (error) {
    if (error.name !== "AbortError") live.textContent = "";
  }
}

async function search(text) {
  const results = document.getElementById("search-results");
  results.hidden = false;
  results.replaceChildren(el("h2", { text: `Results for ${text}` }));
  try {
    const found = await api("/v1/search?" + new URLSearchParams({ q: text, limit: "50" }));
    for (const hit of found.hits) {
      results.append(el("div", { class: "hit", "data-session": hit.session_id, onclick: () => openSession(hit.session_id) },
        el("div", { class: "muted", text: `${hit.session_id} · ${hit.role} · ${new Date(hit.created_at).toLocaleString()}` }),
        marked(hit.snippet, hit.spans)));
    }
    if (!found.hits.length) results.append(el("p", { class: "muted", text: "No matches." }));
  } catch (error) {
    results.append(el("p", { class: "error", text: String(error.message) }));
  }
}

async function loadUsers(info) {
  const select = document.getElementById("user-select");
  const users = (await api("/v1/users")).users;
  if (!users.includes(info.user)) users.unshift(info.user);
  select.replaceChildren(...users.map((u) => el("option", { value: u, text: "user: " + u })));
  select.value = state.user || info.user;
  select.hidden = users.length < 2;
}

async function start() {
  try {
    const info = await api("/v1/info");
    document.getElementById("key-form").hidden = true;
    document.getElementById("whoami").textContent = `tenant ${info.tenant}`;
    await loadUsers(info);
    await loadSessions();
  } catch (error) {
    if (error.message !== "unauthorized") document.getElementById("empty").textContent = String(error.message);
  }
}

document.getElementById("key-form").addEventListener("submit", (event) => {
  event.preventDefault();
  state.key = document.getElementById("key-input").value.trim();
  sessionStorage.setItem("sessionary-key", state.key);
  start();
});
document.getElementById("search-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = document.getElementById("search-input").value.trim();
  if (text) search(text);
});
document.getElementById("user-select").addEventListener("change", (event) => {
  state.user = event.target.value;
  loadSessions();
});
document.getElementById("more-sessions").addEventListener("click", () => loadSessions(true));
start();
