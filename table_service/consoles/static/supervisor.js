"use strict";
// The pit supervisor's console: every table at a glance, the incident queue with the
// procedure each rule prescribes, and the forms that resolve them.
(() => {
  const { el, t, api } = LT;
  const $ = (id) => document.getElementById(id);
  const RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K"];
  const SUIT_KEYS = [["S", "♠"], ["H", "♥"], ["D", "♦"], ["C", "♣"]];
  const state = { who: null, tables: [], resolved: [], forms: new Map(), streams: new Map() };

  LT.onLang(() => {
    state.forms.forEach((node) => node.remove());
    state.forms.clear();
    render();
  });

  async function start() {
    await LT.syncClock();
    state.who = await Shell.signIn(["supervisor"]);
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
      const [tables, resolved] = await Promise.all([
        api("GET", "/api/v1/console/overview"),
        api("GET", "/api/v1/incidents?status=resolved&limit=12"),
      ]);
      state.tables = tables;
      state.resolved = resolved;
      render();
    } catch (exc) {
      LT.toast(t("error.generic", { reason: exc.message }), "error");
    }
  }
  const refreshSoon = LT.debounce(refresh, 80);

  function render() {
    renderTiles();
    renderQueue();
    renderResolved();
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
      const duty = view.dealer_on_duty ? view.dealer_on_duty.dealer : t("table.nobody");
      const active = r && ["betting", "dealing", "result"].includes(r.phase);
      const tile = el(
        "div",
        { class: `tile ${view.paused || !view.reader_online ? "alert" : ""}`, "data-table": view.table_id },
        el("div", { class: "name" }, `${view.table_id} · ${t(`game.${view.game}`)}`),
        el("div", { class: "row" }, el("span", {}, t("table.round")), el("strong", { "data-field": "phase" }, r ? `${r.game_number} · ${t(`phase.${r.phase}`)}` : t("phase.none"))),
        el("div", { class: "row" }, el("span", {}, t("table.shoe")), el("span", { "data-field": "shoe" }, view.shoe ? `${view.shoe.shoe_no} · ${t("table.cards_seen", { n: view.shoe.cards_seen })}` : t("table.no_shoe"))),
        el("div", { class: "row" }, el("span", {}, t("table.dealer_on_duty")), el("span", { "data-field": "dealer" }, duty)),
        el("div", { class: "row" }, el("span", {}, t("table.incidents_open")), el("strong", { "data-field": "incidents" }, String(open))),
        el("div", { class: "row" }, el("span", { class: `badge ${view.reader_online ? "ok" : "bad"}`, "data-field": "reader" }, view.reader_online ? t("reader.online") : t("reader.offline"))),
      );
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
        tile.append(el("div", { class: "muted", "data-field": "approval-needed" }, t("form.approval_needed", { stake: approval.open_stakes, threshold: approval.threshold })));
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

  function renderResolved() {
    const box = $("resolved");
    box.replaceChildren();
    for (const i of state.resolved) {
      box.append(
        el("div", { class: "resolved-item", "data-incident": i.incident_id },
          el("strong", {}, `${i.table_id} · ${LT.incidentName(i.kind)}`), " ",
          el("span", { class: "muted" }, t("incident.raised_by", { who: i.raised_by, time: "" })),
          el("div", {}, t("incident.resolved_by", { who: i.resolved_by || "", note: i.resolution || "" }))),
      );
    }
  }

  function renderQueue() {
    const box = $("queue");
    const open = [];
    for (const view of state.tables) for (const i of view.incidents || []) open.push({ ...i, view });
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
      el("div", { class: "muted" }, t("incident.raised_by", { who: incident.raised_by || "", time: "" })),
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

    const note = el("textarea", { name: "note", rows: "2", placeholder: t("form.note") });
    const resolve = el("button", { type: "submit", class: "primary", "data-action": "resolve" }, t("action.resolve"));
    const form = el("form", {}, picker, reorder, el("label", {}, t("form.note")), note, resolve);
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
      if (!(await LT.confirmDialog(t("confirm.resolve", { id: incident.incident_id })))) return;
      await act(() => api("POST", tablePath(tableId, `/incidents/${encodeURIComponent(incident.incident_id)}/resolve`), body), t("done.resolved", { id: incident.incident_id }));
    });
    return node;
  }

  start();
})();
