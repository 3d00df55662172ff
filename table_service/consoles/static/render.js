"use strict";
// How a round is drawn, for every game, from the view the server lays out: the pages
// compute nothing of the rules (positions and totals come with the view).
const Render = (() => {
  const { el, t, cardEl } = LT;
  const BACCARAT_SLOTS = { player: ["P1", "P2", "P3"], banker: ["B1", "B2", "B3"] };

  function handLabel(hand) {
    if (hand.label) return hand.label;
    const key = `hand.${hand.hand}`;
    if (LT.has(key)) return t(key);
    if (hand.seat !== undefined && hand.seat !== null) {
      return hand.hand && hand.hand !== 1 ? `${t("pos.seat", { seat: hand.seat })} · ${t("pos.hand", { hand: hand.hand })}` : t("pos.seat", { seat: hand.seat });
    }
    return String(hand.hand ?? "");
  }

  // Every hand a game's view lists, in one shape: [{hand, seat, cards, total, flags…}].
  function hands(layout) {
    const out = [];
    if (layout.banker) out.push({ ...layout.banker, hand: "banker", seat: undefined, bankerSeat: layout.banker.seat });
    if (layout.dealer) out.push({ hand: "dealer", ...layout.dealer });
    for (const hand of layout.hands || []) out.push(hand);
    return out;
  }

  // Baccarat: every position as a slot, filled or waiting, the next one marked.
  function baccarat(container, round, { size = "", cls = "hand" } = {}) {
    const layout = round.layout || { positions: [], hands: [] };
    const byPosition = Object.fromEntries((layout.positions || []).map((p) => [p.position, p.card]));
    const totals = Object.fromEntries((layout.hands || []).map((h) => [h.hand, h.total]));
    const next = round.next && round.next.code;
    container.replaceChildren();
    for (const side of ["player", "banker"]) {
      const cards = el("div", { class: "cards" });
      for (const code of BACCARAT_SLOTS[side]) {
        if (byPosition[code]) {
          cards.append(el("div", { class: "position", "data-position": code }, cardEl(byPosition[code], { size }), el("span", { class: "code" }, code)));
        } else if (code === next || !code.endsWith("3")) {
          cards.append(el("div", { class: "position", "data-position": code }, el("div", { class: `slot ${code === next ? "next" : ""} ${size}` }, code)));
        }
      }
      const total = totals[side];
      container.append(
        el(
          "div",
          { class: `${cls} ${side}`, "data-hand": side },
          el("div", { class: "head" }, el("span", { class: "label" }, t(`hand.${side}`)), cls === "hand" ? null : el("span", { class: "total", "data-total": side }, total ?? "")),
          cards,
          cls === "hand" ? el("span", { class: "total", "data-total": side }, total ?? "") : null,
        ),
      );
    }
  }

  // A hand's value as the table calls it: a special hand by its name (Xì Bàng, Xì Dách,
  // Ngũ Linh, blackjack), a bust as such, else the total; nothing before its first card.
  function handValue(hand) {
    const cards = hand.cards || [];
    if (!cards.length || cards.every((c) => !c || c === "??" || c === "XX")) return "";
    if (hand.blackjack) return t("hand.blackjack_name");
    if (["xi_bang", "xi_dach", "ngu_linh"].includes(hand.classification)) return t(`class.${hand.classification}`);
    if (hand.classification === "quac" || hand.bust) return `${hand.total ?? ""} ${t("ov.bust")}`.trim();
    return hand.total === undefined || hand.total === null ? "" : String(hand.total);
  }

  // A seat's stakes by bet type ("Main 1,000 · Pair 200"), for the dealer and the pit.
  function stakesText(entry) {
    if (!entry || !entry.stakes) return "";
    return Object.entries(entry.stakes).map(([type, amount]) => `${LT.term("bet", type)} ${LT.fmtMoney(amount)}`).join(" · ");
  }

  // What a hand's flags say, in words (bust, blackjack, doubled …), and a status text.
  function handFlags(hand) {
    // the value already names a blackjack, a bust and a special Xì Dách hand
    const flags = ["doubled", "surrendered", "auto"].filter((f) => hand[f]).map((f) => t(`hand.${f}`));
    if (hand.result && LT.has(`outcome.${hand.result}`)) flags.push(t(`outcome.${hand.result}`));
    if (hand.status) flags.push(LT.term("status", hand.status));
    return flags;
  }

  function cardsOf(hand, size) {
    return el("div", { class: "cards" }, (hand.cards || []).map((code) => cardEl(code, { size, faceDown: code === null || code === "??" || code === "XX" })));
  }

  // Any other game: the dealer's (or banker's) hand first, then the seats, each with its
  // hands, its stakes (where the view has them) and who is to act.
  // While betting is open a game lays out no hand yet: every seated player's seat is shown
  // with what it has staked so far (``seated``: the view's seats), or that none is in yet.
  function generic(container, round, { size = "small", seatStakes = null, holders = null, seated = null, bankSeat = null } = {}) {
    const layout = round.layout || {};
    container.replaceChildren();
    const seats = layout.seats || [];
    const turn = round.turn || {};
    const activeSeats = new Set((turn.actors || []).map((a) => String(typeof a === "object" ? a.seat : String(a).replace(/^seat:/, ""))));
    const stakeOf = Object.fromEntries((seatStakes || []).map((x) => [String(x.seat), x]));
    const houseHands = [];
    const seatHands = new Map();
    for (const seat of seats) seatHands.set(String(seat.seat), { seat: seat.seat, hands: seat.hands || [], player: seat.player });
    const betting = round.phase === "betting";
    for (const x of [...(seatStakes || []), ...(betting ? seated || [] : [])]) {
      if (x.pending || String(x.seat) === String(bankSeat)) continue; // plays next round; the bank
      if (!seatHands.has(String(x.seat))) seatHands.set(String(x.seat), { seat: x.seat, hands: [] });
    }
    for (const hand of hands(layout)) {
      if (hand.seat !== undefined && hand.seat !== null && hand.hand !== "banker" && hand.hand !== "dealer") {
        const entry = seatHands.get(String(hand.seat)) || { seat: hand.seat, hands: [] };
        entry.hands.push(hand);
        seatHands.set(String(hand.seat), entry);
      } else houseHands.push(hand);
    }
    for (const hand of houseHands) {
      const id = hand.hand;
      const seatNote = hand.bankerSeat !== undefined && hand.bankerSeat !== null && hand.bankerSeat !== "house" ? ` · ${t("pos.seat", { seat: hand.bankerSeat })}` : "";
      container.append(
        el("div", { class: `hand house ${id} ${activeSeats.has("banker") ? "active" : ""}`, "data-hand": id },
          el("span", { class: "label" }, handLabel(hand) + seatNote),
          cardsOf(hand, size),
          el("span", { class: "flags" }, handFlags(hand).join(" · ")),
          el("span", { class: "total", "data-total": id }, handValue(hand))),
      );
    }
    const ordered = [...seatHands.values()].sort((a, b) => Number(a.seat) - Number(b.seat));
    if (ordered.length) {
      const grid = el("div", { class: "seats" });
      for (const seat of ordered) {
        const stake = stakeOf[String(seat.seat)];
        const holder = holders && holders[String(seat.seat)];
        const box = el(
          "div",
          { class: ["seat", activeSeats.has(String(seat.seat)) ? "active" : "", betting && !seat.hands.length ? "betting" : ""].filter(Boolean).join(" "), "data-seat": seat.seat },
          el("div", { class: "head" }, el("strong", {}, t("pos.seat", { seat: seat.seat })),
            stake ? el("span", { class: "stake", "data-field": "seat-stake" }, LT.fmtMoney(stake.total)) : null),
          holder ? el("div", { class: "muted holder", "data-field": "holder" }, holder) : null,
          stake ? el("div", { class: "muted stakes", "data-field": "seat-stakes" }, stakesText(stake)) : null,
          !stake && betting ? el("div", { class: "muted stakes", "data-field": "no-bet" }, t("seat.no_bet_yet")) : null,
        );
        for (const hand of seat.hands) {
          box.append(
            el("div", { class: "seat-hand", "data-hand": hand.seat !== undefined ? `seat-${seat.seat}-${hand.hand}` : hand.hand ?? "" },
              cardsOf(hand, size),
              el("div", { class: "seat-line" },
                seat.hands.length > 1 ? el("span", { class: "muted" }, t("pos.hand", { hand: hand.hand })) : null,
                el("span", { class: "total" }, handValue(hand)),
                el("span", { class: "flags" }, handFlags(hand).join(" · ")))),
          );
        }
        grid.append(box);
      }
      container.append(grid);
    }
  }

  function round(container, view, options = {}) {
    const r = view && view.round;
    if (!r) {
      container.replaceChildren();
      return;
    }
    if (view.game === "baccarat" && !(r.layout && r.layout.seats)) baccarat(container, r, options);
    else generic(container, r, options);
  }

  // The winner's total first, as the studios announce it ("Banker wins 7–5").
  function score(o) {
    const { player, banker } = LT.totals(o);
    if (player === undefined || banker === undefined) return "";
    return o.winner === "player" ? ` ${player}–${banker}` : ` ${banker}–${player}`;
  }

  function resultBanner(view, { cls = "result-banner" } = {}) {
    const r = view && view.round;
    if (!r) return null;
    if (r.phase === "voided") return el("div", { class: `${cls} voided`, "data-result": "voided" }, t("result.voided"));
    const o = r.outcome;
    if (!o || !o.winner) return null;
    const extras = [];
    if (o.natural) extras.push(t("result.natural"));
    if (o.player_pair) extras.push(t("result.player_pair"));
    if (o.banker_pair) extras.push(t("result.banker_pair"));
    const text = LT.has(`result.${o.winner}`) ? t(`result.${o.winner}`) : String(o.winner);
    return el(
      "div",
      { class: `${cls} ${o.winner}`, "data-result": o.winner },
      text + score(o),
      extras.length ? el("span", { class: "sub" }, extras.join(" · ")) : null,
    );
  }

  return { round, resultBanner, baccarat, generic, handFlags, handValue, stakesText, hands, handLabel };
})();
window.Render = Render;
