"use strict";
// Regulator recall: the current round and the nine before it, every step in order, with
// each round's settle input for recomputing it offline (`livetable settle <game>`).
(() => {
  const { el, t, api } = LT;
  const $ = (id) => document.getElementById(id);
  const tableId = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop());
  const LAST = Math.min(50, Math.max(1, parseInt(new URLSearchParams(location.search).get("last") || "10", 10) || 10));
  const state = { data: null, open: new Set(), more: new Map(), loading: new Set() };
  window.LT_RECALL = state;

  LT.onLang(() => render());

  async function start() {
    await Shell.signIn(["regulator", "supervisor", "admin"]);
    $("table-badge").textContent = `${t("table.table")} ${tableId}`;
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

  function table(headers, rows) {
    return el("table", { class: "grid" },
      el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, t(h))))),
      el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((c) => el("td", {}, c === null || c === undefined ? "" : c))))));
  }

  function outcomeText(o) {
    const { player, banker } = LT.totals(o);
    const name = LT.term("result", o.winner);
    const score = o.winner === "player" ? `${player}–${banker}` : `${banker}–${player}`;
    const extras = [o.natural ? t("result.natural") : "", o.player_pair ? t("result.player_pair") : "", o.banker_pair ? t("result.banker_pair") : ""].filter(Boolean);
    return [`${name} ${player === undefined ? "" : score}`, ...extras].join(" · ");
  }

  function stepDetail(step) {
    if (step.type === "round_result" && step.details && step.details.outcome) {
      const o = step.details.outcome;
      if (!o.winner) return LT.details(o);
      const cards = ["player", "banker"].map((side) => (o[side] && o[side].cards ? `${t(`hand.${side}`)} ${o[side].cards.join(" ")}` : "")).filter(Boolean);
      return [outcomeText(o), ...cards].join(" · ");
    }
    if (step.type === "card_dealt") {
      const read = step.reader ? t("recall.reader_seq", { reader: step.reader, n: step.reader_seq ?? "?" }) : "";
      return [step.card, step.position, `#${step.index}`, read, LT.term("source", step.source)].filter(Boolean).join(" · ");
    }
    if (step.bets !== undefined) return t("recall.n_bets", { n: step.bets });
    if (step.lines !== undefined) return t("recall.n_lines", { n: step.lines });
    if (step.kind) return `${step.incident_id} ${LT.incidentName(step.kind)}`;
    if (step.incident_id) return step.incident_id;
    return LT.details(step.details);
  }

  const sectionPath = (r, section, after) =>
    `/api/v1/tables/${encodeURIComponent(tableId)}/recall/${encodeURIComponent(r.round_id)}/${section}?after=${encodeURIComponent(after)}`;

  // A section's items: the first page (with the round) and the pages fetched since.
  function itemsOf(r, section) {
    const more = state.more.get(`${r.round_id}:${section}`);
    return {
      items: more ? [...r[section], ...more.items] : r[section],
      next: more ? more.next : r[`${section}_next`],
      total: r[`${section}_total`],
    };
  }

  // Fetches the next page (or, with `all`, every page left) of a round's section.
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
    }
  }

  function paged(r, section, headers, row) {
    const { items, next, total } = itemsOf(r, section);
    const box = el("div", {}, table(headers, items.map(row)));
    if (total > r[section].length) box.append(el("p", { class: "muted", "data-field": "shown" }, t("recall.shown", { shown: items.length, total })));
    if (next) {
      const left = total - items.length;
      box.append(
        el("div", { class: "buttons" },
          el("button", { type: "button", "data-action": "more", onclick: () => fetchMore(r, section, false) }, t("recall.more", { n: Math.min(500, left) })),
          el("button", { type: "button", "data-action": "all", onclick: () => fetchMore(r, section, true) }, t("recall.all", { n: left }))),
      );
    }
    return box;
  }

  function render() {
    const data = state.data;
    $("table-badge").textContent = `${t("table.table")} ${tableId}`;
    if (!data) return;
    $("recall-title").textContent = t("recall.title", { n: data.rounds.length });
    const box = $("rounds");
    const scroll = window.scrollY;
    box.replaceChildren();
    if (!data.rounds.length) box.append(el("p", { class: "muted" }, t("recall.none")));
    for (const r of data.rounds) {
      const o = r.outcome || {};
      const settleText = JSON.stringify(r.settle_input);
      const copy = el("button", { type: "button", "data-action": "copy" }, t("recall.copy"));
      copy.addEventListener("click", async () => {
        try {
          await navigator.clipboard.writeText(settleText);
          copy.textContent = t("recall.copied");
        } catch (exc) {
          LT.toast(settleText);
        }
      });
      const details = (key, body) => {
        const d = el("details", { "data-section": key }, el("summary", {}, t(`recall.${key}`)), body);
        const id = `${r.round_id}:${key}`;
        if (state.open.has(id) || key === "steps") d.open = true;
        d.addEventListener("toggle", () => (d.open ? state.open.add(id) : state.open.delete(id)));
        return d;
      };
      box.append(
        el("article", { class: "round-record", "data-round": r.round_id, "data-phase": r.phase },
          el("h3", {},
            el("span", {}, t("recall.round", { round: r.round_id, game: r.game_number, shoe: r.shoe_no })),
            r.game ? el("span", { class: "badge" }, LT.term("game", r.game)) : null,
            el("span", { class: "badge" }, LT.term("phase", r.phase)),
            o.winner ? el("span", { class: `chip ${o.winner}` }, "") : null,
            o.winner ? el("span", { "data-field": "outcome" }, outcomeText(o)) : null,
            r.void_reason ? el("span", { class: "badge bad" }, r.void_reason) : null,
            el("span", { class: "muted", "data-field": "dealer" }, t("recall.dealer", { dealer: r.dealer || t("table.nobody") }))),
          details("steps", table(["col.seq", "col.time", "col.step", "col.detail", "col.actor"], r.steps.map((s) => [String(s.seq), LT.fmtTime(s.ts), LT.term("step", s.type), stepDetail(s), s.actor]))),
          details("bets", paged(r, "bets", ["col.bet", "col.time", "col.account", "col.type", "col.stake", "col.accepted"], (b) => [b.bet_id, LT.fmtTime(b.ts), b.account, LT.term("bet", b.type), String(b.stake), b.accepted ? "✔" : "✘"])),
          details("incidents", table(["col.incident", "col.procedure", "col.raised_resolved", "col.resolution"], r.incidents.map((i) => [LT.incidentName(i.kind), LT.procedureText(i), `${i.raised_by || ""} → ${i.resolved_by || "—"}`, i.resolution || ""]))),
          details("settlement", paged(r, "settlement", ["col.bet", "col.type", "col.stake", "col.result", "col.returned"], (s) => [s.bet_id, LT.term("bet", s.type), String(s.stake), LT.term("line", s.result), String(s.returned)])),
          details("settle_input", el("div", {}, el("pre", { class: "settle", "data-field": "settle-input" }, settleText), copy)),
        ),
      );
    }
    window.scrollTo(0, scroll);
  }

  start();
})();
