/// `GET /`: a page that shows what the service does, for a person and for the
/// browser check (`Tests/scripts/check-demo.py`). The island hides and shows only
/// from the service's state, which the session's WebSocket delivers (an
/// `EventSource` where the socket cannot open: `?channel=events`), never from the
/// page's own scroll position: the service is the one source of truth, as it is
/// for a remote app. The page reports its vertical scrolling, and a horizontal
/// row reports too, which must not bring the island back. Reports go on the
/// socket, or one request at a time, batched, with increasing `seq`, so they
/// never overtake each other. A picker chooses the session's behaviour (`PUT …/behavior`);
/// the island moves by the state's `heightOffset`, and a panel shows its
/// `collapsedFraction` and the last events. Self-contained (no external
/// assets); `data-session` on `<html>` and `data-revealed`, `data-version`,
/// `data-behavior` and `data-fraction` on the island expose what it shows.
let demoPage = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>TopChrome demo</title>
<link rel="icon" href="data:,">
<style>
  :root { --inset: 92px; --status: 28px; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 16px/1.5 system-ui, sans-serif; color: #1d2433; background: #f4f6fb; }
  #chrome { position: fixed; inset: 0 0 auto 0; z-index: 10; pointer-events: none; }
  #status { height: var(--status); padding: 0 14px; display: flex; gap: 14px; align-items: center;
            font: 12px/1 ui-monospace, monospace; color: #fff; background: rgba(20, 24, 36, .88); }
  #island { margin: 8px auto 0; width: min(560px, calc(100% - 24px)); height: 56px; padding: 0 20px;
            display: flex; align-items: center; gap: 22px; border-radius: 28px; pointer-events: auto;
            background: #12151f; color: #fff; box-shadow: 0 6px 20px rgba(0, 0, 0, .25);
            transition: transform .25s, opacity .25s, visibility .25s; }
  #island.hidden { transform: translateY(-130%); opacity: 0; visibility: hidden; }
  #island b { margin-right: auto; }
  #panel { position: fixed; right: 12px; bottom: 12px; z-index: 20; width: 300px; padding: 12px 14px;
           border-radius: 14px; background: rgba(255, 255, 255, .96); box-shadow: 0 4px 18px rgba(0, 0, 0, .18);
           font: 13px/1.4 system-ui, sans-serif; }
  #panel label { display: flex; gap: 8px; align-items: center; margin-bottom: 6px; }
  #panel select { flex: 1; min-width: 0; font: inherit; }
  #meter { height: 8px; border-radius: 4px; background: #dbe1ee; overflow: hidden; margin: 4px 0 8px; }
  #meter div { height: 100%; width: 0; background: #3b5bdb; }
  #events { margin: 0; padding: 0; list-style: none; max-height: 150px; overflow: hidden;
            font: 11px/1.45 ui-monospace, monospace; color: #4a5368; }
  #island span { opacity: .75; }
  main { padding-top: var(--inset); }
  .hero { margin-top: calc(-1 * var(--inset)); padding: calc(var(--inset) + 48px) 32px 64px; color: #fff;
          background: linear-gradient(135deg, #3b5bdb, #9c36b5); }
  .hero h1 { margin: 0 0 8px; font-size: 40px; }
  section { max-width: 760px; margin: 0 auto; padding: 8px 24px; }
  .block { height: 320px; margin: 24px 0; border-radius: 16px; padding: 20px; background: #fff;
           box-shadow: 0 1px 4px rgba(0, 0, 0, .08); }
  #row { display: flex; gap: 16px; overflow-x: auto; padding: 8px 24px 20px; }
  #row div { flex: 0 0 220px; height: 160px; border-radius: 16px; padding: 16px; color: #fff; font-weight: 600; }
</style>
</head>
<body>
<div id="chrome">
  <div id="status"><span id="sid">session …</span><span id="line">connecting…</span></div>
  <nav id="island"><b>TopChrome</b><span>Home</span><span>Search</span><span>Profile</span></nav>
</div>
<aside id="panel">
  <label>Behaviour <select id="behavior">
    <option value="revealAtTop">revealAtTop: shown at the top only</option>
    <option value="pinned">pinned: always shown</option>
    <option value="enterAlways">enterAlways: follows the finger</option>
    <option value="exitUntilCollapsed">exitUntilCollapsed: follows the position</option>
  </select></label>
  <label><input type="checkbox" id="snap"> snap when a gesture ends</label>
  <div>collapsedFraction <b id="fraction">0</b></div>
  <div id="meter"><div></div></div>
  <ol id="events"></ol>
</aside>
<main>
  <header class="hero">
    <h1>The island follows the service</h1>
    <p>Scroll down: the page reports it, the service decides the island hides, and its event stream says so.
       Back at the top it returns. The cards row below scrolls sideways and must not bring it back.</p>
  </header>
  <section id="blocks-before"></section>
  <section><h2>A horizontal row</h2></section>
  <div id="row"></div>
  <section id="blocks-after"></section>
</main>
<script>
"use strict";
const island = document.getElementById("island"), row = document.getElementById("row");
const picker = document.getElementById("behavior"), snap = document.getElementById("snap");
for (const [id, count] of [["blocks-before", 3], ["blocks-after", 4]])
  for (let i = 0; i < count; i++)
    document.getElementById(id).insertAdjacentHTML("beforeend", `<div class="block">Block ${id === "blocks-before" ? i + 1 : i + 4}</div>`);
for (let i = 0; i < 12; i++) {
  const card = document.createElement("div");
  card.style.background = `hsl(${i * 30} 60% 48%)`;
  card.textContent = `Card ${i + 1}`;
  row.append(card);
}

// `socket`: the session's WebSocket once its first state came; null: HTTP.
let session = null, seq = 0, pending = [], sending = false, socket = null;
const say = text => { document.getElementById("line").textContent = text; };

// Sends what is pending as one batch, one request at a time, so that reports
// arrive in the order of their seq.
async function flush() {
  if (sending || !session || pending.length === 0) return;
  if (socket) {
    // In order on the one connection; only a refusal is answered.
    socket.send(JSON.stringify({ type: "scroll", body: pending.splice(0, 1024) }));
    return;
  }
  sending = true;
  const batch = pending.splice(0, 1024);
  try {
    await fetch(`/v1/sessions/${session}/scroll`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(batch) });
  } catch (error) {
    say(`report failed: ${error}`);
  }
  sending = false;
  flush();
}

// One report per frame and scroller at most: the latest position counts.
function reporter(makeReport) {
  let scheduled = false;
  return () => {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => { scheduled = false; pending.push({ ...makeReport(), seq: ++seq }); flush(); });
  };
}
// Both heights, so that the rubber band at the bottom does not count as scrolling up.
const vertical = () => ({ contentOffsetY: window.scrollY, contentInsetTop: 0, axis: "vertical",
  contentHeight: document.documentElement.scrollHeight, viewportHeight: window.innerHeight });
const reportVertical = reporter(vertical);
window.addEventListener("scroll", reportVertical, { passive: true });
// The gesture's end, for snapping: the chrome settles fully shown or hidden.
window.addEventListener("scrollend", () => { pending.push({ ...vertical(), phase: "ended", seq: ++seq }); flush(); });
row.addEventListener("scroll", reporter(() =>
  ({ contentOffsetY: 0, axis: "horizontal" })), { passive: true });

// The island shows, hides or moves from the service's state only. A session
// that never chose a behaviour is revealAtTop, and its state names none.
function show(state) {
  const behavior = state.behavior ?? "revealAtTop";
  const fraction = state.collapsedFraction ?? (state.isRevealed ? 0 : 1);
  island.classList.toggle("hidden", fraction === 1);
  island.style.transform = fraction > 0 && fraction < 1 ? `translateY(${state.heightOffset}px)` : "";
  island.dataset.revealed = String(state.isRevealed);
  island.dataset.version = String(state.version);
  island.dataset.behavior = behavior;
  island.dataset.fraction = String(fraction);
  document.documentElement.style.setProperty("--inset", `${state.inset}px`);
  picker.value = behavior;
  snap.checked = state.snap ?? false;
  document.getElementById("fraction").textContent = String(fraction);
  document.querySelector("#meter div").style.width = `${fraction * 100}%`;
  const events = document.getElementById("events");
  events.insertAdjacentHTML("afterbegin",
    `<li>v${state.version} ${behavior} · fraction ${fraction} · ${state.isRevealed ? "revealed" : "hidden"}</li>`);
  while (events.children.length > 8) events.lastElementChild.remove();
  say(`v${state.version} · isRevealed ${state.isRevealed} · inset ${state.inset}`);
}

// The picker changes the session's behaviour; the island follows from the next
// event. A new behaviour takes deltas from the next report, so the page says
// at once where it stands, or the first scroll after the choice would not count.
async function choose() {
  if (!session) return;
  const response = await fetch(`/v1/sessions/${session}/behavior`, {
    method: "PUT", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ behavior: picker.value, snap: snap.checked }) });
  if (!response.ok) say(`PUT behavior answered ${response.status}`);
  reportVertical();
}
picker.addEventListener("change", choose);
snap.addEventListener("change", choose);

async function start() {
  const inset = Math.ceil(island.getBoundingClientRect().bottom);
  const response = await fetch("/v1/sessions", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ inset }) });
  if (!response.ok) throw new Error(`POST /v1/sessions answered ${response.status}`);
  session = (await response.json()).id;
  document.documentElement.dataset.session = session;
  document.getElementById("sid").textContent = `session ${session.slice(0, 8)}…`;
  if (new URLSearchParams(location.search).get("channel") === "events") followEvents(); else followSocket();
  reportVertical(); // where the page stands now, e.g. after a reload restored the scroll position
}

// States in and reports out on one WebSocket; where it cannot open (a proxy
// that passes no upgrade), the event stream and a request per batch instead.
function followSocket() {
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/v1/sessions/${session}/socket`);
  let opened = false, gone = false;
  ws.onmessage = event => {
    const message = JSON.parse(event.data);
    if (message.type === "state") {
      if (!opened) { opened = true; socket = ws; document.documentElement.dataset.channel = "socket"; flush(); }
      show(message.state);
    } else if (message.type === "deleted") {
      gone = true;
      say("session deleted");
    } else if (message.type === "answer" && message.problem) {
      say(`report refused: ${message.problem.detail}`);
    }
  };
  ws.onclose = () => {
    socket = null;
    if (!opened) followEvents();
    else if (!gone) { say("reconnecting…"); setTimeout(followSocket, 1000); }
  };
}

function followEvents() {
  document.documentElement.dataset.channel = "events";
  const events = new EventSource(`/v1/sessions/${session}/events`);
  events.addEventListener("state", event => show(JSON.parse(event.data)));
  events.addEventListener("deleted", () => { events.close(); say("session deleted"); });
  events.onerror = () => say(events.readyState === EventSource.CLOSED ? "event stream closed" : "reconnecting…");
  flush();
}

// Leaving the screen brings the island back (sendBeacon cannot send JSON; keepalive fetch outlives the page).
window.addEventListener("pagehide", () => {
  if (session) fetch(`/v1/sessions/${session}/disappear`, { method: "POST", keepalive: true });
});
start().catch(error => say(`could not start: ${error.message}`));
</script>
</body>
</html>
"""#

/// What the demo page may do in a browser, and no more: its own inline
/// script and style (named by their SHA-256, so no other inline code runs),
/// requests to this origin only, no framing by other pages (clickjacking),
/// and no guessing of its type. A change to the page's script or style
/// changes its hash: `DemoPageTests` says the new one.
let demoPageSecurityHeaders: [(String, String)] = [
    ("Content-Security-Policy",
     "default-src 'none'; script-src 'sha256-tXe+l5ZN83gMR4LDJ1UZhTopdEP0qKS6gMhXxSUfG5Y='; "
        + "style-src 'sha256-T8hp022VO2VVLouuNr4y7Toqdy/rkhbKOgzU1azrYz8='; connect-src 'self'; img-src data:; "
        + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    ("X-Content-Type-Options", "nosniff"),
]
