"use strict";
// The pit supervisor's console: every table at a glance, the incident queue with the
// procedure each rule prescribes, and the forms that resolve them.
(() => {
  const { el, t, api } = LT;
  const $ = (id) => document.getElementById(id);
  const RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K"];
  const SUIT_KEYS = [["S", "♠"], ["H", "♥"], ["D", "♦"], ["C", "♣"]];
  const LARGE_KEY = "lt.supervisor.large_above";
  const state = { who: null, tables: [], timeline: [], forms: new Map(), streams: new Map(), largeAbove: Number(localStorage.getItem(LARGE_KEY) || 2000) };

  LT.onLang(() => {
    state.forms.forEach((node) => node.remove());
    state.forms.clear();
    render();
  });

  async function start() {
    await LT.syncClock();
    state.who = await Shell.signIn(["supervisor"]);
    const above = $("large-above");
    above.value = String(state.largeAbove);
    above.addEventListener("change", () => {
      state.largeAbove = Math.max(0, parseInt(above.value, 10) || 0);
      localStorage.setItem(LARGE_KEY, String(state.largeAbove));
      refreshSoon();
    });
    setInterval(tickTimers, 250);
    await refresh();
    $("console").hidden = false;
    for (const view of state.tables) follow(view.table_id, view.last_seq);
    window.LT_SUPERVISOR = state;
  }

  function follow(tableId, afterSeq) {
    if (state.streams.has(tableId)) return;
    state.streams.set(
      tableId,
      LT.stream({
        path: `/api/v1/tables/${encodeURIComponent(tableId)}/stream`,
        afterSeq,
        auth: true,
        onEvent: () => refreshSoon(),
        onStatus: Shell.streamStatus,
        onFatal: (code, reason) => LT.toast(t("stream.closed", { reason: reason || code }), "error"),
      }),
    );
  }

  async function refresh() {
    try {
      const [tables, timeline] = await Promise.all([
        api("GET", `/api/v1/console/overview?large_above=${encodeURIComponent(state.largeAbove)}`),
        api("GET", "/api/v1/console/timeline?limit=30"),
      ]);
      state.tables = tables;
      state.timeline = timeline;
      render();
      // a view older than the last event the streams brought is asked for again
      const seen = Math.max(0, ...[...state.streams.values()].map((s) => s.last || 0));
      const have = Math.max(0, ...tables.map((v) => v.last_seq || 0));
      if (have < seen) refreshSoon();
    } catch (exc) {
      LT.toast(t("error.generic", { reason: exc.message }), "error");
    }
  }
  const refreshSoon = LT.debounce(refresh, 80);

  function render() {
    renderTiles();
    renderPitMoney();
    renderQueue();
    renderTimeline();
  }

  const money = (n) => LT.fmtMoney(n);
  const signed = (n) => (n > 0 ? `+${money(n)}` : n < 0 ? `−${money(-n)}` : money(0));

  // The pit's totals: stakes in play over every table, the house's result today.
  function renderPitMoney() {
    const inPlay = state.tables.reduce((sum, v) => sum + ((v.money && v.money.in_play) || 0), 0);
    const today = state.tables.reduce((sum, v) => sum + ((v.money && v.money.day && v.money.day.house) || 0), 0);
    $("pit-money").replaceChildren(
      el("span", { class: "pit-stat" }, `${t("money.in_play")} `, el("strong", { "data-field": "pit-in-play" }, money(inPlay))),
      el("span", { class: "pit-stat" }, `${t("money.today")} `, el("strong", { class: today < 0 ? "neg" : "pos", "data-field": "pit-today" }, signed(today))),
    );
  }

  function tickTimers() {
    for (const node of document.querySelectorAll("[data-deadline]")) {
      const left = LT.secondsLeft(node.dataset.deadline);
      node.textContent = left === null ? "" : t("countdown.seconds", { n: Math.ceil(left) });
    }
  }

  function since(ts) {
    return ts ? LT.fmtDateTime(ts) : "";
  }

  const tablePath = (tableId, suffix) => `/api/v1/tables/${encodeURIComponent(tableId)}${suffix}`;

  async function act(run, done) {
    try {
      const answer = await run();
      LT.toast(done || t("done.generic"), "ok");
      return answer;
    } catch (exc) {
      LT.toast(t("error.generic", { reason: exc.message }), "error");
      return null;
    } finally {
      refreshSoon();
    }
  }

  function reasonDialog(title, placeholder) {
    return new Promise((resolve) => {
      const text = el("textarea", { name: "reason", rows: "3", placeholder });
      const ok = el("button", { type: "button", class: "danger", "data-action": "confirm" }, t("action.confirm"));
      const cancel = el("button", { type: "button", "data-action": "cancel" }, t("action.cancel"));
      const dialog = el("dialog", {}, el("p", { class: "confirm-text" }, title), el("label", {}, t("form.reason")), text, el("div", { class: "buttons" }, cancel, ok));
      const done = (value) => {
        dialog.close();
        dialog.remove();
        resolve(value);
      };
      ok.addEventListener("click", () => (text.value.trim() ? done(text.value.trim()) : text.focus()));
      cancel.addEventListener("click", () => done(null));
      dialog.addEventListener("cancel", (e) => {
        e.preventDefault();
        done(null);
      });
      document.body.append(dialog);
      dialog.showModal();
      text.focus();
    });
  }

  function renderTiles() {
    const box = $("tiles");
    box.replaceChildren();
    for (const view of state.tables) {
      const r = view.round;
      const open = (view.incidents || []).length;
      const duty = view.dealer_on_duty;
      const active = r && ["betting", "dealing", "result"].includes(r.phase);
      const m = view.money || {};
      const deadline = r && (r.phase === "betting" ? r.deadline : r.turn && r.turn.deadline);
      const tile = el(
        "div",
        { class: `tile ${view.paused || !view.reader_online ? "alert" : ""}`, "data-table": view.table_id },
        el("div", { class: "name" },
          el("span", {}, `${view.table_id} · ${t(`game.${view.game}`)}`),
          el("span", { class: `badge ${view.reader_online ? "ok" : "bad"}`, "data-field": "reader" }, view.reader_online ? t("reader.online") : t("reader.offline")),
          view.paused ? el("span", { class: "badge bad" }, t("paused.title")) : null),
        el("div", { class: "row" }, el("span", {}, t("table.round")),
          el("strong", { "data-field": "phase" }, r ? `${r.table_round || r.game_number} · ${t(`phase.${r.phase}`)}` : t("phase.none")),
          deadline ? el("span", { class: "timer", "data-deadline": deadline }) : null),
        el("div", { class: "row" }, el("span", {}, t("table.shoe")), el("span", { "data-field": "shoe" }, view.shoe ? `${view.shoe.shoe_no} · ${t(view.shoe.cards_seen === 1 ? "table.cards_seen_one" : "table.cards_seen", { n: view.shoe.cards_seen })}` : t("table.no_shoe"))),
        el("div", { class: "row" }, el("span", {}, t("table.dealer_on_duty")),
          el("span", {}, el("span", { "data-field": "dealer" }, duty ? duty.dealer : t("table.nobody")),
            duty ? el("span", { class: "muted", "data-field": "dealer-since" }, ` · ${t("table.since", { time: since(duty.since) })}`) : null)),
        el("div", { class: "row" }, el("span", {}, t("table.incidents_open")), el("strong", { "data-field": "incidents" }, String(open))),
      );
      // the hands on the table (every card: a supervisor sees what the dealer sees)
      const holders = Object.fromEntries((view.seats || []).map((x) => [String(x.seat), x.account]));
      if (r && r.layout && r.phase !== "betting") {
        const hands = el("div", { class: "hands tile-hands", "data-field": "hands" });
        Render.round(hands, view, { size: "small", seatStakes: r.seat_stakes, holders });
        tile.append(hands);
      }
      const seatList = seatsRow(view, holders);
      if (seatList) tile.append(seatList);
      if (m.bank) {
        tile.append(el("div", { class: "row bank", "data-field": "bank" }, el("span", {}, t("money.bank")),
          el("strong", {}, t("money.bank_holder", { account: m.bank.account, seat: m.bank.seat, balance: money(m.bank.balance) }))));
      } else if (view.bank_seat) {
        tile.append(el("div", { class: "row bank", "data-field": "bank" }, el("span", {}, t("money.bank")), el("strong", {}, t("money.bank_keeper", { seat: view.bank_seat }))));
      } else if (view.house_banker) {
        tile.append(el("div", { class: "row bank", "data-field": "bank" }, el("span", {}, t("money.bank")), el("strong", {}, t("money.bank_house"))));
      }
      tile.append(moneyBox(view));
      const buttons = el("div", { class: "buttons" });
      if (!view.shoe) {
        buttons.append(el("button", { type: "button", "data-action": "insert-shoe", onclick: async () => {
          if (await LT.confirmDialog(t("confirm.insert_shoe", { table: view.table_id }))) act(() => api("POST", tablePath(view.table_id, "/shoe")));
        } }, t("action.insert_shoe")));
      } else {
        buttons.append(el("button", { type: "button", "data-action": "change-shoe", onclick: async () => {
          const reason = await reasonDialog(t("confirm.change_shoe", { shoe: view.shoe.shoe_no }), "");
          if (reason) act(() => api("POST", tablePath(view.table_id, "/shoe/change"), { reason }));
        } }, t("action.change_shoe")));
      }
      const approval = view.void_approval || {};
      if (active) {
        buttons.append(el("button", { type: "button", class: "danger", "data-action": "void", onclick: async () => {
          const reason = await reasonDialog(t("confirm.void", { round: r.round_id }), t("form.void_reason"));
          if (reason) voidRound(view, r, reason);
        } }, t(approval.needed ? "action.request_void" : "action.void")));
      }
      if (approval.needed) {
        tile.append(el("div", { class: "muted", "data-field": "approval-needed" }, t("form.approval_needed", { stake: money(approval.open_stakes), threshold: money(approval.threshold) })));
      }
      for (const req of approval.pending || []) {
        const mine = req.requested_by === state.who.name;
        tile.append(
          el("div", { class: "pending-void", "data-request": req.request_id },
            el("div", {}, t("form.pending_void", { who: req.requested_by, reason: req.reason })),
            el("button", { type: "button", class: "danger", "data-action": "approve-void", disabled: mine, title: mine ? t("form.same_supervisor") : null, onclick: async () => {
              if (await LT.confirmDialog(t("confirm.void", { round: r ? r.round_id : "" }))) {
                act(() => api("POST", tablePath(view.table_id, `/round/void-requests/${encodeURIComponent(req.request_id)}/approve`)), t("done.voided", { round: r ? r.round_id : "" }));
              }
            } }, t("action.approve")),
            mine ? el("span", { class: "muted" }, ` ${t("form.same_supervisor")}`) : null),
        );
      }
      buttons.append(el("a", { href: `/recall/${encodeURIComponent(view.table_id)}`, class: "muted", target: "_blank" }, t("app.recall")));
      tile.append(buttons);
      box.append(tile);
    }
    tickTimers();
  }

  // Seats and who holds them (a seat taken mid-round plays from the next one).
  function seatsRow(view, holders) {
    const seats = view.seats || [];
    if (view.game === "baccarat" && !seats.length) return null; // bets on the round, no seats
    if (!seats.length) return el("div", { class: "row muted", "data-field": "seats" }, t("money.no_seats"));
    return el("div", { class: "seat-list", "data-field": "seats" },
      seats.map((x) => el("span", { class: `seat-chip ${x.pending ? "pending" : ""} ${x.disconnected ? "gone" : ""}`, "data-seat-holder": x.seat },
        `${x.seat}: ${holders[String(x.seat)] || ""}${x.pending ? ` (${t("money.next_round")})` : ""}`)));
  }

  // Money at the table: in play by bet type, the house's result this shoe and today, and
  // the open bets above the supervisor's threshold.
  function moneyBox(view) {
    const m = view.money || {};
    const byType = Object.entries(m.by_type || {});
    const box = el("div", { class: "money", "data-field": "money" },
      el("div", { class: "row" }, el("span", {}, t("money.in_play")), el("strong", { "data-field": "in-play" }, money(m.in_play || 0))));
    if (byType.length) {
      box.append(el("div", { class: "by-type", "data-field": "by-type" },
        byType.map(([type, amount]) => el("span", { class: "type-chip", "data-type": type }, `${LT.term("bet", type)} ${money(amount)}`))));
    }
    const result = (x, key, field) => el("div", { class: "row" }, el("span", {}, t(key)),
      el("strong", { class: x && x.house < 0 ? "neg" : "pos", "data-field": field, title: x ? t("money.result_detail", { bets: x.bets, staked: money(x.staked), returned: money(x.returned) }) : "" }, x ? signed(x.house) : "—"));
    box.append(result(m.shoe, "money.result_shoe", "result-shoe"), result(m.day, "money.result_day", "result-day"));
    const large = m.large_bets || [];
    if (large.length) {
      box.append(el("div", { class: "large-bets", "data-field": "large-bets" },
        el("div", { class: "muted" }, t("money.large_bets", { above: money(m.large_above) })),
        large.map((b) => el("div", { class: "large-bet", "data-bet": b.bet_id },
          el("strong", {}, money(b.stake)), ` ${LT.term("bet", b.type)}`, b.seat ? ` · ${t("pos.seat", { seat: b.seat })}` : "", ` · ${b.account}`))));
    }
    return box;
  }

  // Above the table's threshold a void is requested, and a different supervisor approves.
  async function voidRound(view, r, reason) {
    const request = () => act(() => api("POST", tablePath(view.table_id, "/round/void-requests"), { reason, change_shoe: true }), t("done.requested"));
    if (view.void_approval && view.void_approval.needed) return request();
    try {
      await api("POST", tablePath(view.table_id, "/round/void"), { reason, change_shoe: true });
      LT.toast(t("done.voided", { round: r.round_id }), "ok");
      refreshSoon();
    } catch (exc) {
      if (exc.code === "void_needs_approval") return request();
      LT.toast(t("error.generic", { reason: exc.message }), "error");
    }
  }

  // Every incident, newest first: when, which table and round, who raised and resolved.
  function renderTimeline() {
    const box = $("timeline");
    box.replaceChildren();
    if (!state.timeline.length) box.append(el("p", { class: "muted" }, t("timeline.none")));
    for (const i of state.timeline) {
      box.append(
        el("div", { class: `timeline-item ${i.status}`, "data-incident": i.incident_id, "data-status": i.status },
          el("div", { class: "when" }, LT.fmtDateTime(i.raised_at)),
          el("div", {}, el("strong", {}, LT.incidentName(i.kind)), " ",
            el("span", { class: "badge" }, `${i.table_id}${i.round_id ? ` · ${i.round_id}` : ""}`)),
          el("div", { class: "muted", "data-field": "raised-by" }, t("timeline.raised", { who: LT.principalLabel(i.raised_by) })),
          i.status === "resolved"
            ? el("div", { "data-field": "resolved-by" }, t("timeline.resolved", { who: LT.principalLabel(i.resolved_by), time: LT.fmtDateTime(i.resolved_at), note: i.resolution || "" }))
            : el("div", { class: "open-note" }, t("timeline.open"))),
      );
    }
  }

  function renderQueue() {
    const box = $("queue");
    const open = [];
    const when = Object.fromEntries(state.timeline.map((x) => [x.incident_id, x.raised_at]));
    for (const view of state.tables) for (const i of view.incidents || []) open.push({ ...i, view, raised_at: when[i.incident_id] });
    const ids = new Set(open.map((i) => i.incident_id));
    for (const [id, node] of state.forms) {
      if (!ids.has(id)) {
        node.remove();
        state.forms.delete(id);
      }
    }
    let empty = box.querySelector(".empty");
    if (!open.length) {
      if (!empty) box.append(el("p", { class: "muted empty" }, t("incident.none")));
    } else if (empty) empty.remove();
    for (const incident of open) {
      let node = state.forms.get(incident.incident_id);
      if (!node) {
        node = incidentCard(incident);
        state.forms.set(incident.incident_id, node);
        box.append(node);
      }
      node.update(incident.view);
    }
  }

  // One incident: what happened, what the rule says, and the resolution form.
  function incidentCard(incident) {
    const tableId = incident.view.table_id;
    const picked = { rank: null, suit: null };
    let order = [];
    const node = el("article", { class: `incident ${incident.blocking ? "blocking" : ""}`, "data-incident": incident.incident_id, "data-kind": incident.kind });
    node.append(
      el("div", { class: "head" },
        el("span", { class: "kind" }, LT.incidentName(incident.kind)),
        el("span", { class: "badge" }, `${tableId}${incident.round_id ? ` · ${incident.round_id}` : ""}`),
        incident.blocking ? el("span", { class: "badge bad" }, t("incident.blocking")) : null),
      el("div", { class: "muted" }, t("incident.raised_by", { who: LT.principalLabel(incident.raised_by) }), incident.raised_at ? ` · ${LT.fmtDateTime(incident.raised_at)}` : ""),
      el("div", { class: "procedure", "data-field": "procedure" }, el("strong", {}, `${t("incident.procedure")}: `), LT.procedureText(incident) || "—"),
    );
    const details = Object.entries(incident.details || {});
    if (details.length) node.append(el("div", { class: "muted" }, LT.details(incident.details)));

    const roundCards = el("div", { class: "round-cards" });
    const index = el("select", { name: "index" });
    const pickedLabel = el("span", { class: "badge", "data-field": "picked" }, t("form.pick_card"));
    const ranks = el("div", { class: "ranks" });
    const suits = el("div", { class: "suits" });
    const showPicked = () => {
      ranks.querySelectorAll("button").forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.rank === picked.rank)));
      suits.querySelectorAll("button").forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.suit === picked.suit)));
      pickedLabel.textContent = picked.rank && picked.suit ? t("form.picked", { card: picked.rank + picked.suit }) : t("form.pick_card");
      pickedLabel.dataset.card = picked.rank && picked.suit ? picked.rank + picked.suit : "";
    };
    for (const rank of RANKS) {
      ranks.append(el("button", { type: "button", "data-rank": rank, "aria-pressed": "false", onclick: () => { picked.rank = picked.rank === rank ? null : rank; showPicked(); } }, rank === "T" ? "10" : rank));
    }
    for (const [suit, glyph] of SUIT_KEYS) {
      suits.append(el("button", { type: "button", "data-suit": suit, class: suit === "H" || suit === "D" ? "red" : "", "aria-pressed": "false", onclick: () => { picked.suit = picked.suit === suit ? null : suit; showPicked(); } }, glyph));
    }
    const picker = el("fieldset", { class: "picker" }, el("legend", {}, t("action.enter_card")), roundCards, el("label", { class: "form-row" }, t("form.index"), index), ranks, suits, pickedLabel);

    const reorderBox = el("div", { class: "reorder" });
    const reorderCount = el("select", { name: "reorder-count" });
    const reorder = el("fieldset", { class: "picker" }, el("legend", {}, t("action.reorder")), el("div", { class: "muted" }, t("form.reorder_hint")), el("label", { class: "form-row" }, t("form.reorder_count"), reorderCount), reorderBox);
    let reorderOn = false;
    const drawOrder = () => {
      reorderBox.replaceChildren();
      order.forEach((card, i) => {
        const left = el("button", { type: "button", "data-move": `left-${i}`, onclick: () => { if (i > 0) { [order[i - 1], order[i]] = [order[i], order[i - 1]]; reorderOn = true; drawOrder(); } } }, "←");
        const right = el("button", { type: "button", "data-move": `right-${i}`, onclick: () => { if (i < order.length - 1) { [order[i + 1], order[i]] = [order[i], order[i + 1]]; reorderOn = true; drawOrder(); } } }, "→");
        reorderBox.append(el("div", { class: "item", "data-order-card": card }, LT.cardEl(card, { size: "small" }), el("div", {}, left, right)));
      });
    };

    // a possible duplicate the supervisor finds to be one card read twice: the repeat goes
    const twice = el("input", { type: "checkbox", name: "read_twice" });
    const twiceRow = el("label", { class: "form-row" }, twice, t("form.read_twice"));
    twiceRow.hidden = incident.kind !== "possible_duplicate";
    const note = el("textarea", { name: "note", rows: "2", placeholder: t("form.note") });
    const resolve = el("button", { type: "submit", class: "primary", "data-action": "resolve" }, t("action.resolve"));
    const form = el("form", {}, picker, reorder, twiceRow, el("label", {}, t("form.note")), note, resolve);
    node.append(form);

    let cards = [];
    const dealing = () => {
      const view = state.tables.find((v) => v.table_id === tableId);
      return view && view.round && view.round.phase === "dealing";
    };
    node.update = (view) => {
      const r = view.round;
      const now = (r && r.cards) || [];
      if (JSON.stringify(now) === JSON.stringify(cards) && index.options.length) return;
      cards = now;
      const positions = Object.fromEntries(((r && r.layout && r.layout.positions) || []).map((p, i) => [i, p.position]));
      roundCards.replaceChildren(...cards.map((c, i) => el("div", {}, LT.cardEl(c, { size: "small" }), el("div", { class: "idx" }, `#${i} ${positions[i] || ""}`))));
      const chosen = index.value;
      index.replaceChildren();
      for (let i = 0; i <= cards.length; i += 1) {
        const where = i < cards.length ? `${cards[i]}` : t("form.index_end");
        index.append(el("option", { value: String(i) }, t("form.index_at", { i, where })));
      }
      const wanted = incident.details && Number.isInteger(incident.details.index) ? incident.details.index : cards.length;
      index.value = chosen && Number(chosen) <= cards.length ? chosen : String(Math.min(wanted, cards.length));
      reorderCount.replaceChildren();
      for (let n = 2; n <= Math.min(cards.length, 6); n += 1) reorderCount.append(el("option", { value: String(n) }, String(n)));
      reorderCount.value = String(Math.min(cards.length, 3));
      order = cards.slice(cards.length - Number(reorderCount.value || 0));
      reorderOn = false;
      drawOrder();
      picker.hidden = !dealing();
      reorder.hidden = !dealing() || cards.length < 2;
    };
    reorderCount.addEventListener("change", () => {
      order = cards.slice(cards.length - Number(reorderCount.value));
      reorderOn = false;
      drawOrder();
    });

    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (!note.value.trim()) {
        note.focus();
        LT.toast(t("form.note"), "error");
        return;
      }
      const body = { note: note.value.trim() };
      if (picked.rank && picked.suit && dealing()) body.entered = [{ card: picked.rank + picked.suit, index: Number(index.value) }];
      if (reorderOn && dealing()) body.order = order.slice();
      if (twice.checked && !twiceRow.hidden) {
        body.read_twice = true;
        delete body.entered;
        delete body.order;
      }
      if (!(await LT.confirmDialog(t("confirm.resolve", { id: incident.incident_id })))) return;
      await act(() => api("POST", tablePath(tableId, `/incidents/${encodeURIComponent(incident.incident_id)}/resolve`), body), t("done.resolved", { id: incident.incident_id }));
    });
    return node;
  }

  start();
})();
