"use strict";
// The dealer console: what to do next, where the next card goes, what the reader saw,
// and the dealer's buttons. Live from the table's stream, resumed after a drop.
(() => {
  const { el, t, api } = LT;
  const $ = (id) => document.getElementById(id);
  const TABLE_KEY = "lt.dealer.table";
  const state = { who: null, tableId: null, view: null, last: null, stream: null, busy: false };

  LT.onLang(() => render());

  async function start() {
    await LT.syncClock();
    state.who = await Shell.signIn(["dealer", "supervisor"]);
    const tables = (await api("GET", "/api/v1/tables")).filter((x) => !state.who.table_id || x.table_id === state.who.table_id);
    const remembered = sessionStorage.getItem(TABLE_KEY);
    if (state.who.table_id) return choose(state.who.table_id);
    if (remembered && tables.some((x) => x.table_id === remembered)) return choose(remembered);
    const list = $("table-list");
    list.replaceChildren();
    if (!tables.length) list.append(el("p", {}, t("choose.none")));
    for (const table of tables) {
      list.append(el("button", { type: "button", "data-table": table.table_id, onclick: () => choose(table.table_id) }, `${t("table.table")} ${table.table_id}`));
    }
    $("choose-section").hidden = false;
  }

  async function choose(tableId) {
    state.tableId = tableId;
    sessionStorage.setItem(TABLE_KEY, tableId);
    $("choose-section").hidden = true;
    if (state.who.role === "dealer") {
      try {
        await api("POST", `/api/v1/tables/${encodeURIComponent(tableId)}/duty`);
      } catch (exc) {
        LT.toast(t("error.generic", { reason: exc.message }), "error");
      }
    }
    await refresh();
    $("console").hidden = false;
    state.stream = LT.stream({
      path: `/api/v1/tables/${encodeURIComponent(tableId)}/stream`,
      afterSeq: state.view ? state.view.last_seq : 0,
      auth: true,
      onEvent,
      onStatus: Shell.streamStatus,
      onFatal: (code, reason) => {
        LT.toast(t("stream.closed", { reason: reason || code }), "error");
        if (code === 4401) LT.signOut();
      },
    });
    window.LT_DEALER = state;
    setInterval(tick, 200);
  }

  async function refresh() {
    try {
      state.view = await api("GET", `/api/v1/console/tables/${encodeURIComponent(state.tableId)}/view`);
      const seen = state.view.last_card;
      if (!state.last && seen) state.last = { type: seen.type, actor: seen.actor, payload: seen };
      render();
      // The stream sends an event once it is committed, a moment before the table's view
      // shows it: a view older than the last event seen is asked for again.
      if (state.view.last_seq < (state.eventSeq || 0)) refreshSoon();
    } catch (exc) {
      LT.toast(t("error.generic", { reason: exc.message }), "error");
    }
  }
  const refreshSoon = LT.debounce(refresh, 60);

  function readerKind(event) {
    if (event.payload && event.payload.source === "carried") return t("reader.carried");
    if (!event.actor || !event.actor.startsWith("reader:")) return `${t("reader.manual")} · ${event.actor || ""}`;
    const kind = (state.view && state.view.reader && state.view.reader.kind) || "shoe";
    return `${t(`reader.${kind}`)} · ${event.actor.slice(7)}`;
  }

  // What "last card read" shows for a card event (from the stream, or the view's last card).
  function lastOf(event) {
    const p = event.payload || {};
    const note = event.type === "card_burnt" ? t("last.burnt") : event.type === "card_set_aside" ? t("last.set_aside", { reason: LT.term("aside", p.reason) }) : "";
    return { card: p.card, source: readerKind(event), seq: p.reader_seq, position: p.position, note };
  }

  function onEvent(event) {
    const p = event.payload || {};
    state.eventSeq = Math.max(state.eventSeq || 0, event.seq || 0);
    if (event.type === "card_dealt") {
      state.last = event;
      // Draw the card at once; the view (totals, next target) follows from the server.
      const r = state.view && state.view.round;
      if (r && r.round_id === event.round_id && r.layout && r.layout.positions && p.position) {
        r.layout.positions = [...r.layout.positions.filter((x) => x.position !== p.position), { position: p.position, card: p.card }];
      }
      render();
    } else if (event.type === "card_burnt" || event.type === "card_set_aside") {
      if (p.card) {
        state.last = event;
        render();
      }
    } else if (event.type === "cards_rearranged") {
      for (const card of p.entered || []) state.last = { type: "card_dealt", actor: event.actor, payload: { card, source: "manual" } };
    }
    refreshSoon();
  }

  function instruction(view) {
    const r = view.round;
    if (view.paused) return { text: t("next.paused") };
    if (!view.shoe) return { text: t("next.insert_shoe") };
    if (!view.shoe.ready) {
      return view.shoe.burn_remaining === null || view.shoe.burn_remaining === undefined
        ? { text: t("table.burn_indicator") }
        : { text: t("table.burning", { n: view.shoe.burn_remaining }) };
    }
    if (!r || r.phase === "settled" || r.phase === "voided") return { text: t("next.open_betting") };
    if (r.phase === "betting") return { text: t("next.wait_betting") };
    if (r.next && r.show_again) {
      // The camera could not read the card it saw: the same card, shown again (not the next one).
      const why = t(`cause.${r.show_again.cause}`);
      return { text: `${t("next.show_again")} (${why})`, target: LT.targetLabel(r.next), code: r.next.code, again: true };
    }
    if (r.next) return { text: t("next.deal_to"), target: LT.targetLabel(r.next), code: r.next.code };
    if (r.turn) {
      const who = (r.turn.actors || []).map(LT.actorLabel).join(", ");
      const house = r.layout && r.layout.house_move;  // Xì Dách: the house banker's required move
      return { text: house ? `${t("xd.banker_action")}: ${LT.houseMove(house)}` : t("next.wait_turn"), target: who, code: (r.turn.actors || []).join(" ") };
    }
    return { text: t("next.round_over") };
  }

  function render() {
    const view = state.view;
    if (!view) return;
    const r = view.round;
    $("table-badge").textContent = `${t("table.table")} ${view.table_id} · ${t(`game.${view.game}`)}`;
    const cut = view.shoe && view.shoe.cut_card_drawn ? ` · ${t("table.cut_card")}` : "";
    $("shoe-badge").textContent = view.shoe ? `${t("table.shoe")} ${view.shoe.shoe_no} · ${t(view.shoe.cards_seen === 1 ? "table.cards_seen_one" : "table.cards_seen", { n: view.shoe.cards_seen })}${cut}` : t("table.no_shoe");
    const reader = $("reader-badge");
    reader.textContent = view.reader_online ? t("reader.online") : t("reader.offline");
    reader.className = `badge ${view.reader_online ? "ok" : "bad"}`;
    $("phase").textContent = r ? `${t("table.round")} ${r.table_round || r.game_number} · ${t(`phase.${r.phase}`)}` : t("phase.none");
    $("phase").dataset.phase = r ? r.phase : "none";
    const what = instruction(view);
    $("instruction").textContent = what.text;
    $("instruction").dataset.showAgain = what.again ? "yes" : "";
    $("next-target").textContent = what.target || "";
    $("next-target").dataset.code = what.code || "";
    $("next-code").textContent = r && r.next && what.code && what.code !== what.target ? what.code : "";
    const seatsAt = (r && r.layout && ((r.layout.seats || []).length + (r.layout.hands || []).length)) || 0;
    Render.round($("layout"), view, { size: seatsAt > 4 ? "" : "big", seatStakes: r && r.seat_stakes, seated: view.seats, bankSeat: view.bank_seat });
    $("layout").dataset.seats = String(seatsAt);
    $("layout").dataset.crowd = seatsAt > 4 ? "many" : "few";
    renderStakes(view);
    const banner = Render.resultBanner(view);
    $("result").replaceChildren(...(banner ? [banner] : []));
    renderTurn(r);
    renderLast();
    const blocking = (view.incidents || []).filter((i) => i.blocking);
    $("paused-banner").hidden = !view.paused;
    $("paused-reason").textContent = blocking.map((i) => t("paused.reason", { kind: LT.incidentName(i.kind), procedure: LT.procedureText(i) })).join(" · ");
    const idle = !r || r.phase === "settled" || r.phase === "voided";
    $("open-betting").disabled = state.busy || view.paused || !view.shoe || !view.shoe.ready || !idle;
    $("close-betting").disabled = state.busy || !r || r.phase !== "betting";
    $("report").disabled = state.busy || !view.opened;
    $("round-badge").textContent = r ? r.round_id : "";
    tick();
  }

  // The round's stakes: per seat in the seats' boxes; the total here (baccarat has no seats).
  function renderStakes(view) {
    const r = view.round;
    const s = r && r.stakes;
    const bets = s && t(s.bets === 1 ? "count.bets_one" : "count.bets", { n: s.bets });
    const players = s && t(s.players === 1 ? "count.players_one" : "count.players", { n: s.players });
    $("round-stakes").textContent = s && s.bets ? t("dealer.stakes", { bets, players, staked: LT.fmtMoney(s.staked) }) : "";
  }

  // A move as the game names it: "Hit", "Check seat 3 (xét bài)", "Double · hand 2".
  function moveName(m, { hands = false } = {}) {
    const base = m.action === "check" && m.target ? (m.target === "all" ? LT.houseMove("check all") : LT.houseMove(`check seat ${m.target}`)) : LT.term("move", m.action);
    const word = base.charAt(0).toUpperCase() + base.slice(1);
    return hands && m.hand ? `${word} · ${t("pos.hand", { hand: m.hand })}` : word;
  }

  // Whose decision it is and what the game allows them: labels where players act, and
  // buttons (keys 1–9) where the dealer acts for the house (the Xì Dách house banker).
  function renderTurn(r) {
    const box = $("turn");
    box.replaceChildren();
    state.houseMoves = [];
    if (!r || !r.turn) return;
    const turn = r.turn;
    const actors = (turn.actors || []).map(LT.actorLabel).join(", ");
    box.append(el("div", { "data-field": "turn" }, el("strong", {}, `${t("turn.title")}: `), actors), el("div", { class: "timer", id: "turn-timer" }));
    const legal = turn.legal_actions || {};
    const house = state.view && state.view.house_banker;
    for (const [actor, moves] of Object.entries(legal)) {
      const seen = new Set();
      const unique = (moves || []).filter((m) => {
        const key = `${m.action}|${m.hand || ""}|${m.target || ""}`;
        if (seen.has(key)) return false;
        seen.add(key);
        return true;
      });
      // a hand is named only where the seat has split (more than one hand)
      const hands = unique.some((m) => m.hand && m.hand > 1);
      const row = el("div", { class: "legal", "data-legal": actor }, el("span", { class: "who" }, LT.actorLabel(actor)));
      if (actor === "banker" && house) {
        unique.forEach((m, i) => {
          state.houseMoves.push(m);
          row.append(el("button", { type: "button", class: m.action === (r.layout && r.layout.house_move || "").split(" ")[0] ? "primary" : "", "data-move": m.action, "data-target": m.target || "", onclick: () => houseMove(m) },
            moveName(m, { hands }), i < 9 ? el("kbd", {}, String(i + 1)) : null));
        });
      } else {
        for (const m of unique) row.append(el("span", { class: "move-chip", "data-move": m.action }, moveName(m, { hands })));
      }
      box.append(row);
    }
  }

  async function houseMove(m) {
    if (state.busy) return;
    const body = { action: m.action };
    if (m.target) body.target = m.target;
    act(() => api("POST", path("/house-move"), body), moveName(m));
  }

  function renderLast() {
    const box = $("last-card");
    box.replaceChildren();
    if (!state.last) {
      box.append(el("div", { class: "slot big" }, "—"));
      $("last-source").textContent = t("last.none");
      return;
    }
    const last = lastOf(state.last);
    box.append(LT.cardEl(last.card, { size: "big" }));
    const parts = [last.source];
    if (last.position) parts.push(last.position);
    if (last.seq !== undefined && last.seq !== null) parts.push(t("last.seq", { n: last.seq }));
    if (last.note) parts.push(last.note);
    $("last-source").textContent = parts.join(" · ");
  }

  function tick() {
    const r = state.view && state.view.round;
    const countdown = $("countdown");
    const left = r && r.phase === "betting" ? LT.secondsLeft(r.deadline) : r && r.turn ? LT.secondsLeft(r.turn.deadline) : null;
    countdown.textContent = left === null ? "" : t("countdown.seconds", { n: Math.ceil(left) });
    const timer = document.getElementById("turn-timer");
    if (timer && r && r.turn) {
      const s = LT.secondsLeft(r.turn.deadline);
      timer.textContent = s === null ? "" : t("countdown.seconds", { n: Math.ceil(s) });
    }
  }

  async function act(run, done) {
    state.busy = true;
    render();
    try {
      await run();
      if (done) LT.toast(done, "ok");
    } catch (exc) {
      LT.toast(t("error.generic", { reason: exc.message }), "error");
    } finally {
      state.busy = false;
      await refresh();
    }
  }

  const path = (suffix) => `/api/v1/tables/${encodeURIComponent(state.tableId)}${suffix}`;

  function openBetting() {
    if ($("open-betting").disabled) return;
    act(() => api("POST", path("/betting/open")));
  }

  async function closeBetting() {
    if ($("close-betting").disabled) return;
    if (!(await LT.confirmDialog(t("confirm.close_betting")))) return;
    act(() => api("POST", path("/betting/close")));
  }

  // The incidents a dealer may report at this game (its catalogue, from the server), each
  // with what the rule says happens; then a confirmation, since a report may pause the table.
  async function report() {
    if ($("report").disabled) return;
    const kinds = (state.view && state.view.dealer_incidents) || [];
    const dialog = el("dialog", { id: "report-dialog" });
    const chosen = await new Promise((resolve) => {
      const grid = el("div", { class: "kinds" });
      kinds.forEach((kind, i) => {
        grid.append(
          el("button", { type: "button", "data-kind": kind.kind, onclick: () => resolve(kind) },
            el("strong", {}, LT.incidentName(kind.kind), i < 9 ? el("kbd", {}, String(i + 1)) : null),
            el("span", { class: "muted" }, LT.procedureText(kind))),
        );
      });
      // by keyboard: the number of a kind picks it (Tab and Enter work too; Escape cancels)
      dialog.addEventListener("keydown", (e) => {
        const n = Number.parseInt(e.key, 10);
        if (n >= 1 && n <= Math.min(9, kinds.length) && e.target.name !== "count") {
          e.preventDefault();
          resolve(kinds[n - 1]);
        }
      });
      dialog.append(
        el("h2", {}, t("action.report")),
        el("p", { class: "muted" }, t("report.choose")),
        grid,
        el("div", { class: "buttons" }, el("button", { type: "button", "data-action": "cancel", onclick: () => resolve(null) }, t("action.cancel"))),
      );
      dialog.addEventListener("cancel", (e) => {
        e.preventDefault();
        resolve(null);
      });
      document.body.append(dialog);
      dialog.showModal();
      grid.querySelector("button")?.focus();
    });
    dialog.close();
    dialog.remove();
    if (!chosen) return;
    const name = LT.incidentName(chosen.kind);
    const details = {};
    if (chosen.count) {
      // only a kind that counts asks how many cards: never before a kind is chosen
      const n = await countDialog(name);
      if (n === null) return;
      details.count = n;
    } else if (!(await LT.confirmDialog(t("confirm.report", { kind: name })))) return;
    const r = state.view && state.view.round;
    if (chosen.kind === "missed_scan" && r && r.cards) details.index = r.cards.length;
    act(() => api("POST", path("/incidents"), { kind: chosen.kind, details }), name);
  }

  // How many cards were exposed: a number, then the report (Enter confirms).
  function countDialog(name) {
    return new Promise((resolve) => {
      const count = el("input", { type: "number", name: "count", min: "1", max: "52", value: "1", inputmode: "numeric" });
      const ok = el("button", { type: "submit", class: "primary", "data-action": "confirm" }, t("action.report"));
      const cancel = el("button", { type: "button", "data-action": "cancel" }, t("action.cancel"));
      const form = el("form", { method: "dialog" },
        el("h2", {}, name),
        el("label", { class: "form-row" }, t("report.how_many"), count),
        el("p", { class: "muted" }, t("confirm.report", { kind: name })),
        el("div", { class: "buttons" }, cancel, ok));
      const dialog = el("dialog", { id: "count-dialog" }, form);
      const done = (value) => {
        dialog.close();
        dialog.remove();
        resolve(value);
      };
      form.addEventListener("submit", (e) => {
        e.preventDefault();
        done(Math.max(1, Math.min(52, parseInt(count.value, 10) || 1)));
      });
      cancel.addEventListener("click", () => done(null));
      dialog.addEventListener("cancel", (e) => {
        e.preventDefault();
        done(null);
      });
      document.body.append(dialog);
      dialog.showModal();
      count.select();
    });
  }

  $("open-betting").addEventListener("click", openBetting);
  $("close-betting").addEventListener("click", closeBetting);
  $("report").addEventListener("click", report);
  document.addEventListener("keydown", (event) => {
    if (event.target.closest("input, textarea, select, dialog") || event.ctrlKey || event.metaKey || event.altKey) return;
    const key = event.key.toLowerCase();
    if (key === "o") openBetting();
    else if (key === "c") closeBetting();
    else if (key === "r") report();
    else if (/^[1-9]$/.test(key) && state.houseMoves && state.houseMoves[Number(key) - 1]) houseMove(state.houseMoves[Number(key) - 1]);
  });

  start();
})();
