"use strict";
// Regulator recall: find any round (by its id, the table, a time range or, for a
// regulator, an account), then every step of it in plain words with who did it, amounts
// and dates with their time zone, the bets, the settlement and the incidents; each round
// can be saved as one self-contained HTML file for a complaints team. Below the search,
// the table's current round and the ones before it, live.
(() => {
  const { el, t, api } = LT;
  const $ = (id) => document.getElementById(id);
  const tableId = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop());
  const LAST = Math.min(50, Math.max(1, parseInt(new URLSearchParams(location.search).get("last") || "10", 10) || 10));
  const state = { data: null, open: new Set(), more: new Map(), loading: new Set(), who: null, found: null, picked: null, query: null };
  window.LT_RECALL = state;

  LT.onLang(() => {
    render();
    renderFound();
    renderPicked();
  });

  // An operator's complaints team finds the rounds of its own accounts: each with the
  // account's bets and what they returned, saved as one file; the round's other players
  // and its full record are the regulator's and the pit's.
  const byOperator = () => state.who && state.who.role === "operator";

  async function start() {
    state.who = await Shell.signIn(["regulator", "supervisor", "admin", "operator"]);
    $("table-badge").textContent = `${t("table.table")} ${tableId}`;
    setUpSearch();
    if (byOperator()) {
      $("stream-badge").hidden = true; // no live table for an operator here: its search only
      $("console").hidden = false;
      $("recall-title").textContent = "";
      $("zone-note").textContent += ` ${t("search.operator_note")}`;
      return;
    }
    await refresh();
    $("console").hidden = false;
    const head = state.data && state.data.rounds.length ? state.data.rounds[0].closed_seq || state.data.rounds[0].opened_seq : 0;
    LT.stream({
      path: `/api/v1/tables/${encodeURIComponent(tableId)}/stream`,
      afterSeq: head || 0,
      auth: true,
      onEvent: (e) => {
        if (e.round_id || e.type === "shoe_inserted") refreshSoon();
      },
      onStatus: Shell.streamStatus,
      onFatal: (code, reason) => LT.toast(t("stream.closed", { reason: reason || code }), "error"),
    });
  }

  async function refresh() {
    try {
      state.data = await api("GET", `/api/v1/tables/${encodeURIComponent(tableId)}/recall?last=${LAST}`);
      render();
    } catch (exc) {
      LT.toast(t("error.generic", { reason: exc.message }), "error");
    }
  }
  const refreshSoon = LT.debounce(refresh, 150);

  // -- search --------------------------------------------------------------------------------
  function setUpSearch() {
    const form = $("search-form");
    form.elements.table.value = tableId;
    // an account is searched by a regulator, or by the operator that owns it
    $("account-field").hidden = !["regulator", "operator"].includes(state.who.role);
    form.elements.account.required = byOperator();
    $("zone-note").textContent = t("search.zone", { zone: Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC" });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      search();
    });
  }

  // A datetime-local value is the browser's local time: sent with its offset.
  function withOffset(value) {
    if (!value) return "";
    const d = new Date(value);
    if (Number.isNaN(d.getTime())) return "";
    return d.toISOString();
  }

  async function search() {
    const f = $("search-form").elements;
    const params = new URLSearchParams();
    const put = (k, v) => v && params.set(k, v);
    put("round_id", f.round_id.value.trim());
    put("table_id", f.table.value.trim());
    put("from", withOffset(f.from.value));
    put("to", withOffset(f.to.value));
    if (!$("account-field").hidden) put("account", f.account.value.trim());
    state.account = f.account.value.trim();
    state.query = params.toString();
    state.picked = null;
    renderPicked();
    try {
      state.found = await api("GET", `/api/v1/recall/search?${params}`);
      renderFound();
      // one round found by its exact id: open it at once
      const rounds = state.found.rounds;
      if (rounds.length === 1 && rounds[0].round_id === f.round_id.value.trim()) openRound(rounds[0]);
    } catch (exc) {
      state.found = null;
      renderFound();
      LT.toast(t("error.generic", { reason: exc.message }), "error");
    }
  }

  function renderFound() {
    const box = $("found");
    box.replaceChildren();
    const found = state.found;
    if (!found) return;
    if (!found.rounds.length) {
      box.append(el("p", { class: "muted", "data-field": "none-found" }, t("search.none")));
      return;
    }
    box.append(
      el("p", { class: "muted" }, found.more ? t("search.found_more", { n: found.rounds.length }) : found.rounds.length === 1 ? t("search.found_one") : t("search.found", { n: found.rounds.length })),
      foundTable(found, { exporting: false }),
    );
    if (byOperator()) {
      box.append(el("div", { class: "buttons" },
        el("button", { type: "button", "data-action": "export-found", onclick: () => download(foundHtml(found), `rounds-${state.account || "account"}.html`) }, t("recall.export"))));
    }
  }

  const accountBets = (r) => (r.account_bets || []).map((b) => `${LT.term("bet", b.type)} ${LT.fmtMoney(b.stake)} → ${b.returned === null || b.returned === undefined ? LT.term("bet_status", b.status) : LT.fmtMoney(b.returned)}`).join("; ");

  // The rounds found; for an operator, the account's bets in each, not the round's totals
  // nor a way into the record of every player.
  function foundTable(found, { exporting }) {
    const mine = byOperator();
    const head = ["col.round", "col.table", "col.opened", "col.phase", "col.result"];
    if (!mine) head.push("col.bets", "col.staked");
    const account = found.rounds.some((r) => r.account_bets);
    if (account) head.push("col.account_bets");
    const opens = !mine && !exporting;
    return el("table", { class: "grid found" },
      el("thead", {}, el("tr", {}, head.map((h) => el("th", {}, t(h))), opens ? el("th", {}) : null)),
      el("tbody", {}, found.rounds.map((r) => el("tr", { "data-found": r.round_id },
        el("td", {}, r.round_id),
        el("td", {}, r.table_id),
        el("td", {}, LT.fmtDateTime(r.opened_at)),
        el("td", {}, LT.term("phase", r.phase)),
        el("td", {}, r.void_reason ? `${t("result.voided")}` : outcomeText(r.outcome, gameOf(r))),
        mine ? null : el("td", { class: "num" }, String(r.bets)),
        mine ? null : el("td", { class: "num" }, LT.fmtMoney(r.staked)),
        account ? el("td", { "data-field": "account-bets" }, accountBets(r)) : null,
        opens ? el("td", {}, el("button", { type: "button", "data-action": "open-round", onclick: () => openRound(r) }, t("search.open"))) : null))));
  }

  async function openRound(found) {
    try {
      state.picked = await api("GET", `/api/v1/tables/${encodeURIComponent(found.table_id)}/recall/${encodeURIComponent(found.round_id)}`);
      renderPicked();
      $("picked").scrollIntoView({ block: "start" });
    } catch (exc) {
      LT.toast(t("error.generic", { reason: exc.message }), "error");
    }
  }

  function renderPicked() {
    const box = $("picked");
    box.replaceChildren();
    if (state.picked) box.append(record(state.picked, { picked: true }));
  }

  // -- words -----------------------------------------------------------------------------------
  const gameOf = (r) => r.game || (r.outcome && r.outcome.dealer ? "blackjack" : r.outcome && r.outcome.hands ? "xidach" : "baccarat");
  const cards = (list) => (list || []).map((c) => LT.cardText(c)).join(" ");

  function handText(hand) {
    const value = Render.handValue(hand);
    return `${cards(hand.cards)}${value ? ` = ${value}` : ""}`;
  }

  // A round's result as the studio announces it, for every game.
  // A blackjack seat's fate from the settlement: its one main bet's line ("wins", "push",
  // "half refunded"); nothing where the seat split (a hand each) or the line is not loaded.
  function seatResult(r, seat) {
    if (!r || !r.bets || !r.settlement) return "";
    const mains = r.bets.filter((b) => String(b.seat) === String(seat) && b.type === "main");
    if (mains.length !== 1) return "";
    const line = r.settlement.find((l) => l.bet_id === mains[0].bet_id);
    return line && LT.has(`outcome.${line.result}`) ? ` (${LT.term("outcome", line.result)})` : "";
  }

  function outcomeText(o, game, r = null) {
    if (!o) return "";
    if (o.dealer) {
      const seats = (o.seats || []).flatMap((s) => (s.hands || []).map((h) => `${t("pos.seat", { seat: s.seat })}${s.hands.length > 1 ? ` · ${t("pos.hand", { hand: h.hand })}` : ""}: ${handText(h)}${s.hands.length === 1 ? seatResult(r, s.seat) : ""}`));
      return [`${t("hand.dealer")} ${handText(o.dealer)}`, ...seats].join(" · ");
    }
    if (o.banker && o.hands) {
      const who = o.banker.seat && o.banker.seat !== "house" ? `${t("hand.banker")} (${t("pos.seat", { seat: o.banker.seat })})` : t("hand.banker");
      const hands = o.hands.map((h) => `${t("pos.seat", { seat: h.seat })}: ${handText(h)}${h.result ? ` (${LT.term("outcome", h.result)})` : ""}`);
      return [`${who} ${handText(o.banker)}`, ...hands].join(" · ");
    }
    if (!o.winner) return "";
    const { player, banker } = LT.totals(o);
    const name = LT.term("result", o.winner);
    const score = o.winner === "player" ? `${player}–${banker}` : `${banker}–${player}`;
    const extras = [o.natural ? t("result.natural") : "", o.player_pair ? t("result.player_pair") : "", o.banker_pair ? t("result.banker_pair") : ""].filter(Boolean);
    return [`${name} ${player === undefined ? "" : score}`, ...extras].join(" · ");
  }

  // Who did a step, in words: the rules for what the table does itself, the person or the
  // reader otherwise ("reader:bac-1-shoe" → "Reader bac-1-shoe").
  function actorText(step) {
    const d = step.details || {};
    if (step.by_rules) return t("actor.rules");
    if (step.type === "action_taken" && d.auto) return t("actor.rules_auto", { why: LT.term("auto", d.auto) });
    const [kind, ...rest] = String(step.by || step.actor || "").split(":");
    const name = rest.join(":");
    if (kind === "system") return t("actor.rules");
    const who = LT.has(`actor.${kind}`) ? t(`actor.${kind}`, { name }) : step.actor || "";
    // a player's decision comes through its operator's platform: the player first
    if (step.type === "action_taken" && kind === "operator" && d.actor) return t("actor.player_via", { who: LT.actorLabel(d.actor), via: who });
    return who;
  }

  // A position by its name, and its code where the name does not say it ("Seat 1 · hand 1
  // (S1H1)", but "Banker (Nhà cái)", not "… (BANKER)").
  function position(code) {
    if (!code) return "";
    const label = LT.targetLabel({ code });
    return label.toLowerCase().includes(String(code).toLowerCase()) ? label : `${label} (${code})`;
  }

  const bets = (n) => (n === 1 ? t("count.bets_one") : t("count.bets", { n }));

  const bankText = (b) => t("says.bank_settled", { stake: LT.fmtMoney(b.stake), returned: LT.fmtMoney(b.returned) });

  // A bet as a regulator reads it: "Seat 1 · Main bet 800 · alice".
  function betText(b) {
    return [b.seat ? t("pos.seat", { seat: b.seat }) : "", `${LT.term("bet", b.type)} ${LT.fmtMoney(b.stake)}`, b.account || ""].filter(Boolean).join(" · ");
  }

  // A step in plain words, for every game.
  function stepText(step, r) {
    const d = step.details || {};
    switch (step.type) {
      case "card_dealt": {
        const read = step.reader ? t("recall.reader_seq", { reader: step.reader, n: step.reader_seq ?? "?" }) : LT.term("source", step.source);
        return t("says.card_dealt", { card: LT.cardText(step.card), to: position(step.position), index: step.index, read });
      }
      case "betting_opened":
        return t("says.betting_opened", { time: LT.fmtDateTime(d.closes_at) });
      case "betting_closed":
        return t("says.betting_closed", { reason: LT.term("close", d.reason) });
      case "decision_awaited":
        return t("says.decision_awaited", { who: (d.actors || []).map(LT.actorLabel).join(", "), s: Math.round((d.ms || 0) / 1000), time: LT.fmtDateTime(d.deadline) });
      case "action_taken": {
        const who = `${LT.actorLabel(d.actor)}${d.hand && d.hand > 1 ? ` · ${t("pos.hand", { hand: d.hand })}` : ""}`;
        // a house banker's check names its target ("check every punter (xét bài)")
        const move = d.target ? LT.houseMove(d.target === "all" ? "check all" : `check seat ${d.target}`) : LT.term("move", d.action);
        return `${who}: ${move}`;
      }
      case "round_result":
        return outcomeText(d.outcome, r.game, r) || LT.details(d);
      case "round_settled": {
        // the logged totals hold a seated bank: the punters' bets first, the bank apart
        const b = step.bank || { lines: 0, stake: 0, returned: 0 };
        const said = t("says.round_settled", { bets: (d.bets ?? 0) - b.lines, staked: LT.fmtMoney((d.staked || 0) - b.stake), returned: LT.fmtMoney((d.returned || 0) - b.returned) });
        return step.bank ? `${said}; ${bankText(step.bank)}` : said;
      }
      case "round_voided":
        return t("says.round_voided", { reason: d.reason || "" });
      case "cards_revealed":
        return t("says.cards_revealed", { cards: (d.cards || []).map((c) => LT.cardText(c && c.card ? c.card : c)).join(" ") });
      case "cards_rearranged":
        return t("says.cards_rearranged", { cards: (d.cards || []).map((c, i) => `${d.positions && d.positions[i] ? `${position(d.positions[i])} ` : ""}${LT.cardText(c)}`).join(", ") });
      case "card_burnt":
        return t("says.card_burnt", { card: LT.cardText(d.card) });
      case "card_set_aside":
        return t("says.card_set_aside", { card: LT.cardText(d.card), reason: LT.term("aside", d.reason) });
      case "commission_credited":
        return t("says.commission", { amount: LT.fmtMoney(d.amount) });
      case "seat_taken":
        return t("says.seat_taken", { seat: d.seat, account: d.account || "" });
      case "seat_released":
        return t("says.seat_released", { seat: d.seat, reason: d.reason || "" });
      default:
        break;
    }
    if (step.type === "bets_placed") {
      const each = step.items && step.items.length === step.bets ? step.items.map(betText).join("; ") : "";
      return each || t("says.bets_placed", { bets: bets(step.bets), staked: LT.fmtMoney(step.stake) });
    }
    if (step.type === "bets_settled") {
      const said = t("says.bets_settled", { bets: bets(step.lines), returned: LT.fmtMoney(step.returned) });
      return step.bank ? `${said}; ${bankText(step.bank)}` : said;
    }
    if (step.type === "bets_refunded") return t("says.bets_refunded", { bets: bets(step.lines), returned: LT.fmtMoney(step.returned), reason: step.reason || "" });
    if (step.type === "incident_resolved") {
      return t("says.incident_resolved", { kind: step.kind ? LT.incidentName(step.kind) : "", id: step.incident_id, note: step.resolution || "" });
    }
    if (step.kind) return `${LT.incidentName(step.kind)} (${step.incident_id})`;
    if (step.incident_id) return step.incident_id;
    const shown = Object.fromEntries(Object.entries(d).filter(([k]) => !["clock", "ms", "by", "positions"].includes(k)));
    return LT.details(shown);
  }

  // -- records ---------------------------------------------------------------------------------
  function table(headers, rows, cls = "") {
    return el("table", { class: `grid ${cls}` },
      el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, t(h))))),
      el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((c) => el("td", {}, c === null || c === undefined ? "" : c))))));
  }

  const sectionPath = (r, section, after) =>
    `/api/v1/tables/${encodeURIComponent(r.table_id || tableId)}/recall/${encodeURIComponent(r.round_id)}/${section}?after=${encodeURIComponent(after)}`;

  function itemsOf(r, section) {
    const more = state.more.get(`${r.round_id}:${section}`);
    return {
      items: more ? [...r[section], ...more.items] : r[section],
      next: more ? more.next : r[`${section}_next`],
      total: r[`${section}_total`],
    };
  }

  async function fetchMore(r, section, all) {
    const key = `${r.round_id}:${section}`;
    if (state.loading.has(key)) return;
    state.loading.add(key);
    try {
      let { next } = itemsOf(r, section);
      while (next) {
        const got = await api("GET", sectionPath(r, section, next));
        const more = state.more.get(key) || { items: [], next: null };
        more.items.push(...got.items);
        more.next = got.next;
        state.more.set(key, more);
        next = got.next;
        if (!all) break;
      }
    } catch (exc) {
      LT.toast(t("error.generic", { reason: exc.message }), "error");
    } finally {
      state.loading.delete(key);
      render();
      renderPicked();
    }
  }

  function paged(r, section, headers, row, { exporting }) {
    const { items, next, total } = itemsOf(r, section);
    const box = el("div", {}, table(headers, items.map(row)));
    if (total > r[section].length || (exporting && next)) box.append(el("p", { class: "muted", "data-field": "shown" }, t("recall.shown", { shown: items.length, total })));
    if (next && !exporting) {
      const left = total - items.length;
      box.append(
        el("div", { class: "buttons" },
          el("button", { type: "button", "data-action": "more", onclick: () => fetchMore(r, section, false) }, t("recall.more", { n: Math.min(500, left) })),
          el("button", { type: "button", "data-action": "all", onclick: () => fetchMore(r, section, true) }, t("recall.all", { n: left }))),
      );
    }
    return box;
  }

  const amount = (n) => el("span", { class: "num" }, LT.fmtMoney(n));

  // One round's record; with `exporting`, every section open and no button.
  function record(r, { exporting = false, picked = false } = {}) {
    const o = r.outcome || {};
    const settleText = JSON.stringify(r.settle_input);
    const details = (key, body) => {
      const d = el("details", { "data-section": key }, el("summary", {}, t(`recall.${key}`)), body);
      const id = `${picked ? "picked:" : ""}${r.round_id}:${key}`;
      if (exporting || state.open.has(id) || key === "steps") d.open = true;
      d.addEventListener("toggle", () => (d.open ? state.open.add(id) : state.open.delete(id)));
      return d;
    };
    const buttons = [];
    if (!exporting) {
      const copy = el("button", { type: "button", "data-action": "copy" }, t("recall.copy"));
      copy.addEventListener("click", async () => {
        try {
          await navigator.clipboard.writeText(settleText);
          copy.textContent = t("recall.copied");
        } catch (exc) {
          LT.toast(settleText);
        }
      });
      buttons.push(copy);
    }
    const number = r.table_round ? t("recall.table_round", { n: r.table_round }) : "";
    const when = [r.opened_at ? t("recall.opened_at", { time: LT.fmtDateTime(r.opened_at) }) : "", r.closed_at ? t("recall.closed_at", { time: LT.fmtDateTime(r.closed_at) }) : ""].filter(Boolean).join(" · ");
    const head = el("h3", {},
      el("span", {}, t("recall.round", { round: r.round_id, game: r.game_number, shoe: r.shoe_no })),
      number ? el("span", { class: "badge", "data-field": "table-round" }, number) : null,
      r.game ? el("span", { class: "badge" }, LT.term("game", r.game)) : null,
      el("span", { class: "badge" }, LT.term("phase", r.phase)),
      o.winner ? el("span", { class: `chip ${o.winner}` }, "") : null,
      el("span", { "data-field": "outcome" }, outcomeText(o, r.game, r)),
      r.void_reason ? el("span", { class: "badge bad" }, r.void_reason) : null,
      el("span", { class: "muted", "data-field": "dealer" }, t("recall.dealer", { dealer: r.dealer || t("table.nobody") })));
    const article = el("article", { class: "round-record", "data-round": r.round_id, "data-phase": r.phase },
      head,
      when ? el("div", { class: "muted when", "data-field": "when" }, when) : null,
      exporting ? null : el("div", { class: "buttons record-actions" },
        el("button", { type: "button", "data-action": "export", onclick: () => exportRound(r) }, t("recall.export")),
        el("button", { type: "button", "data-action": "print", onclick: () => printRound(r) }, t("recall.print"))),
      details("steps", table(["col.seq", "col.time", "col.step", "col.detail", "col.actor"], r.steps.map((s) => [String(s.seq), LT.fmtDateTime(s.ts, { ms: true }), LT.term("step", s.type), stepText(s, r), actorText(s)]), "steps")),
      details("bets", paged(r, "bets", ["col.bet", "col.time", "col.account", "col.type", "col.seat", "col.stake", "col.accepted"], (b) => [b.bet_id, LT.fmtDateTime(b.ts), b.account, LT.term("bet", b.type), b.seat ? String(b.seat) : "", amount(b.stake), b.accepted ? "✔" : "✘"], { exporting })),
      details("incidents", table(["col.incident", "col.procedure", "col.raised_resolved", "col.resolution"], r.incidents.map((i) => [LT.incidentName(i.kind), LT.procedureText(i), `${LT.principalLabel(i.raised_by)} (${LT.fmtDateTime(i.raised_at)}) → ${i.resolved_by ? LT.principalLabel(i.resolved_by) : "—"}${i.resolved_at ? ` (${LT.fmtDateTime(i.resolved_at)})` : ""}`, i.resolution || ""]))),
      details("settlement", paged(r, "settlement", ["col.bet", "col.type", "col.stake", "col.result", "col.returned"], (s) => [s.bet_id, LT.term("bet", s.type), amount(s.stake), LT.term("line", s.result), amount(s.returned)], { exporting })),
      details("settle_input", el("div", {}, el("pre", { class: "settle", "data-field": "settle-input" }, settleText), ...buttons)),
    );
    if (exporting) {
      article.append(el("h4", {}, t("recall.hashes")), table(["col.seq", "col.hash"], r.steps.map((s) => [String(s.seq), el("code", {}, s.hash || "")]), "hashes"));
    }
    return article;
  }

  // -- export ----------------------------------------------------------------------------------
  const EXPORT_CSS = `
body{font-family:"DejaVu Sans","Noto Sans",Arial,sans-serif;color:#111;background:#fff;margin:24px;font-size:13px}
h1{font-size:20px;margin:0 0 4px}h3{font-size:16px;display:flex;gap:10px;flex-wrap:wrap;align-items:baseline}
.meta{color:#444;margin-bottom:14px}.muted{color:#555}.badge{border:1px solid #999;border-radius:10px;padding:1px 8px;font-size:12px}
table{border-collapse:collapse;width:100%;margin:6px 0 14px}th,td{border:1px solid #bbb;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#eee}.num{text-align:right;font-variant-numeric:tabular-nums}details>summary{font-weight:bold;margin:8px 0 2px;list-style:none}
pre{white-space:pre-wrap;word-break:break-all;background:#f4f4f4;padding:8px}code{font-size:11px;word-break:break-all}.chip{display:none}
@media print{body{margin:10mm}}`;

  function exportHtml(r) {
    const node = record(r, { exporting: true });
    const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
    const meta = t("export.meta", { table: r.table_id || tableId, by: (state.who && state.who.name) || "", time: LT.fmtDateTime(new Date().toISOString()) });
    return `<!doctype html>
<html lang="${esc(LT.lang())}">
<head>
<meta charset="utf-8">
<meta name="generator" content="livetable recall">
<title>${esc(t("export.title", { round: r.round_id }))}</title>
<style>${EXPORT_CSS}</style>
</head>
<body>
<h1>${esc(t("export.title", { round: r.round_id }))}</h1>
<div class="meta">${esc(meta)}</div>
${node.outerHTML}
<p class="muted">${esc(t("export.note"))}</p>
</body>
</html>
`;
  }

  // An operator's file for a complaint: the account's rounds, each with its bets and returns.
  function foundHtml(found) {
    const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
    const title = t("export.account_title", { account: state.account || "" });
    const meta = t("export.account_meta", { by: (state.who && state.who.name) || "", time: LT.fmtDateTime(new Date().toISOString()) });
    return `<!doctype html>
<html lang="${esc(LT.lang())}">
<head>
<meta charset="utf-8">
<meta name="generator" content="livetable recall">
<title>${esc(title)}</title>
<style>${EXPORT_CSS}</style>
</head>
<body>
<h1>${esc(title)}</h1>
<div class="meta">${esc(meta)}</div>
${foundTable(found, { exporting: true }).outerHTML}
</body>
</html>
`;
  }

  function exportRound(r) {
    download(exportHtml(r), `round-${r.round_id}.html`);
  }

  function download(html, name) {
    state.lastExport = html;
    const url = URL.createObjectURL(new Blob([html], { type: "text/html;charset=utf-8" }));
    const a = el("a", { href: url, download: name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  }

  function printRound(r) {
    const win = window.open("", "_blank");
    if (!win) return exportRound(r);
    win.document.write(exportHtml(r));
    win.document.close();
    win.focus();
    win.print();
  }

  // -- the table's last rounds -----------------------------------------------------------------
  function render() {
    const data = state.data;
    $("table-badge").textContent = `${t("table.table")} ${tableId}`;
    if (!data) return;
    $("recall-title").textContent = data.rounds.length === 1 ? t("recall.title_one") : t("recall.title", { n: data.rounds.length });
    const box = $("rounds");
    const scroll = window.scrollY;
    box.replaceChildren();
    if (!data.rounds.length) box.append(el("p", { class: "muted" }, t("recall.none")));
    for (const r of data.rounds) box.append(record({ ...r, table_id: r.table_id || tableId }));
    window.scrollTo(0, scroll);
  }

  start();
})();
