"use strict";
// Regulator recall: the current round and the nine before it, every step in order, with
// each round's settle input for recomputing it offline (`livetable settle <game>`).
(() => {
  const { el, t, api } = LT;
  const $ = (id) => document.getElementById(id);
  const tableId = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop());
  const LAST = Math.min(50, Math.max(1, parseInt(new URLSearchParams(location.search).get("last") || "10", 10) || 10));
  const state = { data: null, open: new Set() };
  window.LT_RECALL = state;

  LT.applyI18n();
  LT.langSwitch($("lang-switch"));
  LT.onLang(() => render());
  LT.onUnauthorized((reason) => {
    sessionStorage.removeItem("lt.token");
    LT.toast(t("auth.expired", { reason }), "error");
    setTimeout(() => location.reload(), 1500);
  });
  $("signout").addEventListener("click", () => LT.signOut());

  async function start() {
    const who = await LT.signIn(["regulator", "supervisor", "admin"], { form: $("signin-form"), error: $("signin-error") });
    $("who").textContent = t("auth.signed_in", { name: who.name, role: t(`role.${who.role}`) });
    $("signout").hidden = false;
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
      onStatus: (s) => LT.statusBadge($("stream-badge"), s),
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
    const name = LT.has(`result.${o.winner}`) ? t(`result.${o.winner}`) : o.winner;
    const score = o.winner === "player" ? `${player}–${banker}` : `${banker}–${player}`;
    const extras = [o.natural ? t("result.natural") : "", o.player_pair ? t("result.player_pair") : "", o.banker_pair ? t("result.banker_pair") : ""].filter(Boolean);
    return [`${name} ${player === undefined ? "" : score}`, ...extras].join(" · ");
  }

  function stepDetail(step) {
    if (step.type === "round_result" && step.details && step.details.outcome) {
      const o = step.details.outcome;
      const cards = ["player", "banker"].map((side) => (o[side] && o[side].cards ? `${t(`hand.${side}`)} ${o[side].cards.join(" ")}` : "")).filter(Boolean);
      return [outcomeText(o), ...cards].join(" · ");
    }
    if (step.type === "card_dealt") {
      return [step.card, step.position, `#${step.index}`, step.reader ? `${step.reader} seq ${step.reader_seq ?? "?"}` : "", step.source].filter(Boolean).join(" · ");
    }
    if (step.bets !== undefined) return `${step.bets}`;
    if (step.lines !== undefined) return `${step.lines}`;
    if (step.kind) return `${step.incident_id} ${LT.incidentName(step.kind)}`;
    if (step.incident_id) return step.incident_id;
    const d = step.details || {};
    return Object.entries(d).map(([k, v]) => `${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`).join(" · ");
  }

  function render() {
    const data = state.data;
    if (!data) return;
    $("recall-title").textContent = t("recall.title", { n: data.rounds.length });
    const box = $("rounds");
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
            el("span", { class: "badge" }, t(`phase.${r.phase}`) || r.phase),
            o.winner ? el("span", { class: `chip ${o.winner}` }, "") : null,
            o.winner ? el("span", { "data-field": "outcome" }, outcomeText(o)) : null,
            r.void_reason ? el("span", { class: "badge bad" }, r.void_reason) : null,
            el("span", { class: "muted", "data-field": "dealer" }, t("recall.dealer", { dealer: r.dealer || t("table.nobody") }))),
          details("steps", table(["col.seq", "col.time", "col.step", "col.detail", "col.actor"], r.steps.map((s) => [String(s.seq), LT.fmtTime(s.ts), s.type, stepDetail(s), s.actor]))),
          details("bets", table(["col.bet", "col.time", "col.account", "col.type", "col.stake", "col.accepted"], r.bets.map((b) => [b.bet_id, LT.fmtTime(b.ts), b.account, b.type, String(b.stake), b.accepted ? "✔" : "✘"]))),
          details("incidents", table(["col.step", "col.detail", "col.actor", "col.result"], r.incidents.map((i) => [LT.incidentName(i.kind), i.procedure || "", `${i.raised_by || ""} → ${i.resolved_by || "—"}`, i.resolution || ""]))),
          details("settlement", table(["col.bet", "col.type", "col.stake", "col.result", "col.returned"], r.settlement.map((s) => [s.bet_id, s.type, String(s.stake), s.result, String(s.returned)]))),
          details("settle_input", el("div", {}, el("pre", { class: "settle", "data-field": "settle-input" }, settleText), copy)),
        ),
      );
    }
  }

  start();
})();
