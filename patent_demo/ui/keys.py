"""The page's keyboard queue: every key of ``serve.SHORTCUTS`` (and a click on the label panel's label,
next, previous and undo buttons) goes into one queue in the browser, in the order pressed, and none is
dropped, whatever the server is doing.

A label key is bound when it is pressed to the hit under the cursor at that moment, by the hit's id
(``sessions.hit_ref``: the search, the list, the patent and the figure, read from the cursor line's marker
``views.cursor_marker``), never by a rank read later; with auto-advance ticked the cursor moves on in the
browser at once, so the next key binds to the next hit. Next and previous move that cursor in the browser
too (skipping labelled hits when "show unlabelled only" is ticked), and undo puts it back on the last hit
labelled. The queue sends one entry at a time through a hidden button (``LabelHandlers.key``) and sends the
next when the answer of the last one is back (its request key, ``ack``); the server stores a label only on
a hit of the list on screen. Any other key of ``SHORTCUTS`` (a button of another part of the page) is a
plain click, made in its turn once the entries before it are answered."""

from __future__ import annotations

import json

# the label panel's buttons (their elem ids) and what their key puts in the queue
GRADE_BUTTONS = {"lbl-rel": "relevant", "lbl-part": "partly", "lbl-not": "not"}
MOVE_BUTTONS = {"lbl-next": 1, "lbl-prev": -1}
UNDO_BUTTON = "lbl-undo"
SEND_ID, ENTRY_ID, QUEUE_LINE_ID, MARKER_ID = "l-send", "l-entry", "l-queue", "l-at"
# the event of the hidden button: the entry at the head of the queue replaces the first input's value
SEND_JS = "(...a) => { a[0] = window.patentKeys.head(); return a; }"
ACK_JS = "(key) => { window.patentKeys.acked(key); return []; }"
RESEND_MS = 60_000  # an entry unanswered this long is sent again (its request key stores a label once)

QUEUE_JS = r"""
(() => {
const CFG = %s;
const Q = {items: [], busy: null, at: null, follow: false, labelled: [], sentAt: 0};
window.patentKeys = Q;
const uid = () => (crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random()).replace(/-/g, '');
function marker() {  // where the page's cursor is (views.cursor_marker), or null without a hit
  const m = document.querySelector('#l-at .l-at[data-at]');
  try { return m ? JSON.parse(m.dataset.at) : null; } catch (err) { return null; }
}
function cursor() {  // the hit the next key binds to: the queue's own cursor, else (after a click) the page's
  const m = marker();  // a new search's list is always followed
  if (!Q.at || Q.follow || (m && m.search !== Q.at.search)) Q.at = m;
  Q.follow = false;
  return Q.at;
}
function hitAt(at, rank) {
  const h = at.hits[rank - 1];
  return {search: at.search, list: at.list, id: h[0], figure: h[1]};
}
function checked(sel) { const el = document.querySelector(sel); return !!(el && el.checked); }
function line() {  // what waits, and where the next key goes
  const el = document.getElementById(CFG.line);
  if (!el) return;
  const n = Q.items.length + (Q.busy ? 1 : 0), at = Q.at;
  el.textContent = n && at ? `⏳ ${n} waiting · the next key goes to ${at.list} #${at.rank} (${at.hits[at.rank - 1][0]})` : '';
}
function snapshot() {  // the category and note go with this label, and are cleared for the next hit
  const cat = document.querySelector('#l-category input:checked');
  const note = document.querySelector('#l-note textarea, #l-note input');
  const out = {category: cat ? cat.value : '', note: note ? note.value : ''};
  if (out.category) { const none = document.querySelector('#l-category input[value=""]'); if (none) none.click(); }
  if (out.note) { note.value = ''; note.dispatchEvent(new Event('input', {bubbles: true})); }
  return out;
}
function press(id) {  // one key (or a click on a label panel button): into the queue, bound now
  enqueue(id);
  Q.follow = false;  // after snapshot(), whose clearing of the category and note fires input events
  pump();
}
const MOVERS = 'button, select, label, td, th, img, [role=button], [role=tab], [role=radio], input[type=radio], input[type=number]';
function enqueue(id) {
  const grade = CFG.grades[id], step = CFG.moves[id];
  if (grade || step || id === CFG.undo) {
    const at = cursor();
    if (id === CFG.undo) {
      const last = Q.labelled.pop();
      Q.items.push({key: uid(), action: 'undo'});
      if (last && at && last.search === at.search) Q.at = Object.assign({}, at, {list: last.list, rank: last.rank, hits: last.hits});
    } else if (!at || !at.hits.length) {
      const status = document.querySelector('#l-status');
      if (status) status.textContent = '⚠️ no hit under the cursor: run a search first';
      return;
    } else if (grade) {
      const auto = checked('#l-auto input');
      Q.items.push(Object.assign({key: uid(), action: grade, hit: hitAt(at, at.rank), auto: auto}, snapshot()));
      Q.labelled.push({search: at.search, list: at.list, rank: at.rank, hits: at.hits});
      at.judged = at.judged.concat([at.hits[at.rank - 1][0]]);
      Q.at = Object.assign({}, at, {rank: auto ? Math.min(at.rank + 1, at.hits.length) : at.rank});
    } else {
      const skip = checked('#l-unlabelled input') ? new Set(at.judged) : new Set();
      let r = at.rank + step;
      while (r >= 1 && r <= at.hits.length && skip.has(at.hits[r - 1][0])) r += step;
      if (r < 1 || r > at.hits.length) r = at.rank;
      Q.items.push({key: uid(), action: 'goto', hit: hitAt(at, r)});
      Q.at = Object.assign({}, at, {rank: r});
    }
  } else {
    Q.items.push({key: uid(), action: 'click', id: id});
  }
}
function pump() {  // the head of the queue goes out when nothing is waiting for an answer
  line();
  if (Q.busy || !Q.items.length) return;
  const head = Q.items[0];
  if (head.action === 'click') {  // a plain click in its turn
    Q.items.shift();
    const el = document.getElementById(head.id);
    if (el) el.click();
    return pump();
  }
  Q.busy = head;
  Q.sentAt = Date.now();
  document.getElementById(CFG.send).click();
}
Q.head = () => JSON.stringify(Q.busy || {});
Q.acked = (key) => {
  if (!Q.busy || key !== Q.busy.key) return;
  Q.items.shift();
  Q.busy = null;
  setTimeout(pump, 0);
};
Q.pending = () => Q.items.length + (Q.busy ? 1 : 0);
setInterval(() => {  // an entry whose answer never came (a dropped connection) is sent again
  if (Q.busy && Q.busy.action !== 'undo' && Date.now() - Q.sentAt > CFG.resend) {
    Q.sentAt = Date.now();
    document.getElementById(CFG.send).click();
  }
}, 1000);
document.addEventListener('keydown', (e) => {
  const t = e.target, tag = (t && t.tagName || '').toLowerCase();
  if (tag === 'input' || tag === 'textarea' || tag === 'select' || (t && t.isContentEditable)) return;
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const id = CFG.shortcuts[e.key];
  if (!id || !document.getElementById(id)) return;
  e.preventDefault();
  press(id);
});
document.addEventListener('click', (e) => {  // the label panel's own buttons, clicked: the same queue
  if (!e.isTrusted) return;
  const btn = e.target.closest && e.target.closest('button[id]');
  const id = btn && btn.id;
  if (id && (CFG.grades[id] || CFG.moves[id] || id === CFG.undo)) {
    e.preventDefault(); e.stopImmediatePropagation(); press(id);
  } else if (e.target.closest && e.target.closest(MOVERS)) {
    Q.follow = true;  // a click that may move the cursor (a hit, a list, a search): the next key reads the page's
  }
}, true);
document.addEventListener('input', (e) => {  // the list or rank typed in the label panel
  if (e.isTrusted && e.target.closest && e.target.closest('#l-pick')) Q.follow = true;
}, true);
})();
"""


def queue_js(shortcuts: dict[str, str]) -> str:
    """The queue's script for the page's ``head``, with the keys of ``shortcuts`` (key -> button elem id)."""
    config = {
        "shortcuts": shortcuts,
        "grades": GRADE_BUTTONS,
        "moves": MOVE_BUTTONS,
        "undo": UNDO_BUTTON,
        "send": SEND_ID,
        "line": QUEUE_LINE_ID,
        "resend": RESEND_MS,
    }
    return QUEUE_JS % json.dumps(config)
