// dvault's dashboard script: progressive enhancement only, every page works without it. Served from
// /assets/app.<hash>.js under `script-src 'self'`; it reads what it needs from data-* attributes and JSON
// endpoints and writes text with textContent only (or adopts markup dvault's own pages rendered, escaped), so
// nothing the service wrote can become markup or code.
//   - the archive grid: the next page appended when the pager scrolls into view (its plain links stay for
//     browsers without script), the URL following the page in view (history.replaceState) so a reload or Back
//     returns to it; a lightbox (click a tile; ←/→, Esc, swipe, z to zoom, i for the info panel, Tab kept inside);
//   - keyboard: the skip link to the grid, ? lists the shortcuts, / to search, j/k between [data-jk] elements of
//     a [data-jk-list], Enter opens;
//   - [data-activity]: polls /api/activity (Redis and Postgres, so a worker on another host shows too).

// ---- infinite scroll, the place kept in the URL -----------------------------------------------------------

/** Adopts a fetched page's tiles into the grid, its pager in place of the old one, and its count into the line. */
function appendPage(grid, pager, text, url, { group, ofTotal }) {
  const doc = new DOMParser().parseFromString(text, "text/html");
  const incoming = [...(doc.querySelector(".thumbs")?.children ?? [])];
  // A month that goes on from the page before keeps its one heading (and its last row goes on filling).
  const lastGroup = [...grid.querySelectorAll(".group")].at(-1)?.dataset.group;
  if (incoming[0]?.matches(".group") && incoming[0].dataset.group === lastGroup) {
    incoming.shift();
    if (grid.lastElementChild?.matches(".fill")) grid.lastElementChild.remove();
  }
  const first = incoming.find((n) => n.matches(".thumb"));
  if (first) first.dataset.pageUrl = url;
  for (const node of incoming) grid.append(document.adoptNode(node));
  const next = doc.querySelector("nav.pager");
  if (next) pager.replaceWith(document.adoptNode(next));
  else pager.remove();
  const count = document.querySelector(".count[data-total]");
  const got = doc.querySelector(".count[data-total]");
  if (count && got) {
    count.dataset.to = got.dataset.to;
    // The total the lightbox shows is the one the newest page counted, as the line says.
    count.dataset.total = got.dataset.total;
    count.dataset.more = got.dataset.more || "";
    count.textContent = `${group(count.dataset.from)}–${group(got.dataset.to)} of ${ofTotal(got)}`;
  }
}

/**
 * Calls `load` again later, for a next page the dashboard could not give now (busy: 503 or 429 with Retry-After; a
 * gateway's 502/504; the connection lost): after the wait it names, else 2, 4, 8 … s, five times in a row at most;
 * after that the pager's plain link stays for a person to follow. Any other answer is not asked again.
 */
function retrying(load) {
  const RETRIES = 5;
  let retries = 0;
  let timer = null;
  return {
    succeeded: () => {
      retries = 0;
    },
    /** The error of a failed fetch: one that may pass (it carries retryAfter) schedules `load` once more. */
    failed: (err) => {
      if (!err || !("retryAfter" in err) || retries >= RETRIES || timer) return;
      retries += 1;
      const seconds = err.retryAfter;
      const wait = Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, 60) : 2 ** retries;
      timer = setTimeout(() => {
        timer = null;
        void load();
      }, wait * 1000);
    },
  };
}

/** A failed answer as an error: one that may pass later carries the seconds its Retry-After names (NaN: none). */
function unavailable(r) {
  const err = new Error(`HTTP ${r.status}`);
  if ([429, 502, 503, 504].includes(r.status)) err.retryAfter = Number(r.headers.get("Retry-After"));
  return Promise.reject(err);
}

/**
 * The grid's next page appended when its pager scrolls into view; returns loadMore (the lightbox and j/k call it
 * past the last tile), which resolves false when there is no next page or it could not be had.
 */
function archivePaging(grid, helpers) {
  let loading = null;
  let observer = null;
  const retry = retrying(() => loadMore());
  const loadMore = () => {
    const pager = document.querySelector("nav.pager[data-next]");
    if (!grid || !pager) return Promise.resolve(false);
    if (loading) return loading;
    const url = pager.dataset.next;
    // A connection lost before the answer or while its body came (headers of a 200, then nothing): asked again.
    const lost = (err) => Promise.reject(Object.assign(err, { retryAfter: Number.NaN }));
    loading = fetch(url, { headers: { Accept: "text/html" }, credentials: "same-origin" })
      .catch(lost)
      .then((r) => (r.ok ? r.text().catch(lost) : unavailable(r)))
      .then((text) => {
        retry.succeeded();
        appendPage(grid, pager, text, url, helpers);
        watchPager();
        return true;
      })
      .catch((err) => {
        retry.failed(err);
        return false;
      })
      .finally(() => {
        loading = null;
      });
    return loading;
  };
  const watchPager = () => {
    const pager = document.querySelector("nav.pager[data-next]");
    if (!pager || !("IntersectionObserver" in window)) return;
    observer?.disconnect();
    observer = new IntersectionObserver(
      (entries) => {
        if (entries.some((e) => e.isIntersecting)) void loadMore();
      },
      { rootMargin: "600px 0px" },
    );
    observer.observe(pager);
  };
  if (grid) watchPager();
  return loadMore;
}

/** The URL follows the page whose tiles are at the top of the window: a reload shows them first, Back returns to them. */
function keepPlaceInUrl(grid) {
  const firstTile = grid.querySelector(".thumb");
  if (firstTile) firstTile.dataset.pageUrl = location.pathname + location.search;
  let placing = false;
  const keepPlace = () => {
    placing = false;
    let url = null;
    for (const t of grid.querySelectorAll(".thumb[data-page-url]")) {
      if (t.getBoundingClientRect().top > innerHeight / 3) break;
      url = t.dataset.pageUrl;
    }
    if (url && url !== location.pathname + location.search) history.replaceState(history.state, "", url);
  };
  addEventListener(
    "scroll",
    () => {
      if (placing) return;
      placing = true;
      requestAnimationFrame(keepPlace);
    },
    { passive: true },
  );
}

(() => {
  const group = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, "\u00a0");
  // The listing's total as its count line says it: "more than 10 000" when the server stopped counting there.
  const ofTotal = (count) => `${count.dataset.more ? "more than " : ""}${group(count.dataset.total)}`;

  const grid = document.querySelector(".thumbs");
  if (grid) keepPlaceInUrl(grid);
  const loadMore = archivePaging(grid, { group, ofTotal });

  // ---- dialogs: focus kept inside, Esc closes -------------------------------------------------------------
  const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]), select, textarea, [tabindex]:not([tabindex="-1"])';
  const openDialog = () => [...document.querySelectorAll('[role="dialog"][aria-modal="true"]')].find((d) => !d.hidden);
  document.addEventListener("keydown", (e) => {
    const dialog = openDialog();
    if (!dialog || e.key !== "Tab") return;
    const items = [...dialog.querySelectorAll(FOCUSABLE)].filter((n) => !n.closest("[hidden]") && n.getClientRects().length > 0);
    if (items.length === 0) return e.preventDefault();
    const at = items.indexOf(document.activeElement);
    const to = e.shiftKey ? (at <= 0 ? items.length - 1 : at - 1) : at === -1 || at === items.length - 1 ? 0 : at + 1;
    e.preventDefault();
    items[to].focus();
  });

  // ---- lightbox -----------------------------------------------------------------------------------------
  const tiles = () => [...document.querySelectorAll(".thumbs > .thumb[data-full]")];
  let box = null;
  let parts = null;
  let current = -1;
  let opener = null;
  const el = (tag, attrs, text) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
    if (text) node.textContent = text;
    return node;
  };
  const build = () => {
    box = el("div", { class: "lightbox", role: "dialog", "aria-modal": "true", "aria-label": "Image viewer", hidden: "" });
    const stage = el("div", { class: "lb-stage" });
    const img = el("img", { alt: "", draggable: "false" });
    stage.append(img);
    const cap = el("div", { class: "lb-cap" });
    const zoom = el("button", { type: "button", class: "lb-zoom", "aria-pressed": "false" }, "Zoom (z)");
    const infoButton = el("button", { type: "button", class: "lb-info-toggle", "aria-expanded": "false" }, "Info (i)");
    const original = el("a", { class: "lb-original", href: "#" }, "Open original");
    const tools = el("div", { class: "lb-tools" });
    tools.append(zoom, infoButton, original);
    const info = el("aside", { class: "lb-info", "aria-label": "About this item", hidden: "" });
    const infoClose = el("button", { type: "button", class: "lb-info-close" }, "Hide info");
    const infoBody = el("div", {});
    info.append(infoClose, infoBody);
    infoClose.addEventListener("click", () => toggleInfo(false));
    const close = el("button", { type: "button", class: "lb-close", "aria-label": "Close (Esc)" }, "×");
    const prev = el("button", { type: "button", class: "lb-prev", "aria-label": "Previous (←)" }, "‹");
    const next = el("button", { type: "button", class: "lb-next", "aria-label": "Next (→)" }, "›");
    box.append(stage, cap, tools, info, close, prev, next);
    parts = { img, cap, zoom, infoButton, original, info, infoBody };
    close.addEventListener("click", hide);
    prev.addEventListener("click", () => step(-1));
    next.addEventListener("click", () => step(1));
    zoom.addEventListener("click", toggleZoom);
    img.addEventListener("click", toggleZoom);
    infoButton.addEventListener("click", () => toggleInfo());
    box.addEventListener("click", (e) => {
      if (e.target === box) hide();
    });
    let startX = null;
    box.addEventListener("pointerdown", (e) => {
      startX = box.classList.contains("zoomed") || e.target.closest(".lb-info") ? null : e.clientX;
    });
    box.addEventListener("pointercancel", () => {
      startX = null;
    });
    box.addEventListener("pointerup", (e) => {
      if (startX === null) return;
      const dx = e.clientX - startX;
      startX = null;
      if (Math.abs(dx) > 50) step(dx < 0 ? 1 : -1);
    });
    document.body.append(box);
  };
  const toggleZoom = () => {
    const on = box.classList.toggle("zoomed");
    parts.zoom.setAttribute("aria-pressed", String(on));
    const tile = tiles()[current];
    // Zoomed, the picture is the original when it is one a browser shows; else the medium thumbnail, larger.
    if (on && tile?.dataset.original && !tile.dataset.full.startsWith("/static/")) parts.img.src = tile.dataset.original;
  };
  /** The item page's summary (title, artist, date, folders, tags, what was archived and why), adopted as rendered. */
  let infoFor = null;
  const loadInfo = (tile) => {
    const href = tile.getAttribute("href");
    if (infoFor === href) return;
    infoFor = href;
    parts.infoBody.replaceChildren(el("p", {}, "Loading…"));
    fetch(href, { headers: { Accept: "text/html" }, credentials: "same-origin" })
      .then((r) => (r.ok ? r.text() : Promise.reject(new Error(`HTTP ${r.status}`))))
      .then((text) => {
        if (infoFor !== href) return;
        const section = new DOMParser().parseFromString(text, "text/html").querySelector("[data-info]");
        parts.infoBody.replaceChildren(section ? document.adoptNode(section) : el("p", {}, "No details."));
      })
      .catch(() => {
        if (infoFor === href) parts.infoBody.replaceChildren(el("p", {}, "The details did not load."));
      });
  };
  const toggleInfo = (force) => {
    const on = force ?? parts.info.hidden;
    parts.info.hidden = !on;
    box.classList.toggle("with-info", on);
    parts.infoButton.setAttribute("aria-expanded", String(on));
    if (on) loadInfo(tiles()[current]);
    else if (box.contains(document.activeElement) && document.activeElement.closest(".lb-info")) parts.infoButton.focus();
  };
  const show = (i) => {
    const all = tiles();
    const tile = all[i];
    if (!tile) return;
    if (!box) build();
    current = i;
    box.classList.remove("zoomed");
    parts.zoom.setAttribute("aria-pressed", "false");
    const { img, cap, original } = parts;
    img.src = tile.dataset.full;
    img.alt = tile.dataset.title || "";
    original.hidden = !tile.dataset.original;
    original.href = tile.dataset.original || "#";
    // The tile's place in the whole listing (data-pos, from the server), not among the tiles of this page.
    const count = document.querySelector(".count[data-total]");
    cap.replaceChildren(
      el("a", { href: tile.getAttribute("href") }, tile.dataset.title || "(untitled)"),
      document.createTextNode(` · ${tile.dataset.meta || ""} · ${group(tile.dataset.pos ?? i + 1)} of ${count ? ofTotal(count) : group(all.length)}`),
    );
    box.hidden = false;
    if (!parts.info.hidden) loadInfo(tile);
    if (!box.contains(document.activeElement)) box.querySelector(".lb-close").focus();
  };
  const hide = () => {
    if (!box || box.hidden) return;
    box.hidden = true;
    opener?.focus();
  };
  const step = async (by) => {
    let all = tiles();
    if (current + by >= all.length && (await loadMore())) all = tiles();
    const i = current + by;
    if (i >= 0 && i < all.length) {
      opener = all[i];
      show(i);
    }
  };
  document.addEventListener("click", (e) => {
    const tile = e.target instanceof Element ? e.target.closest(".thumbs > .thumb[data-full]") : null;
    if (!tile || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    opener = tile;
    show(tiles().indexOf(tile));
  });
  document.addEventListener("keydown", (e) => {
    if (!box || box.hidden || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "Escape") hide();
    else if (e.key === "ArrowRight") void step(1);
    else if (e.key === "ArrowLeft") void step(-1);
    else if (e.key === "z" || e.key === "+") toggleZoom();
    else if (e.key === "i") toggleInfo();
    else return;
    e.preventDefault();
  });

  // ---- keyboard shortcuts ---------------------------------------------------------------------------------
  const SHORTCUTS = [
    ["?", "this list of shortcuts"],
    ["/", "search the archive"],
    ["j / k", "next / previous item in a list or the grid"],
    ["Enter", "open the item (a tile opens in the viewer)"],
    ["← / →", "previous / next picture in the viewer, or item on an item's page"],
    ["z", "zoom the picture in the viewer"],
    ["i", "the viewer's info panel"],
    ["Esc", "close the viewer or this list"],
  ];
  let keys = null;
  let keysOpener = null;
  const showKeys = () => {
    if (!keys) {
      keys = el("div", { class: "keys", role: "dialog", "aria-modal": "true", "aria-labelledby": "keys-title", hidden: "" });
      const panel = el("div", {});
      const list = el("dl", {});
      for (const [k, what] of SHORTCUTS) {
        const dt = el("dt", {});
        dt.append(el("kbd", {}, k));
        list.append(dt, el("dd", {}, what));
      }
      const close = el("button", { type: "button" }, "Close");
      close.addEventListener("click", hideKeys);
      panel.append(el("h2", { id: "keys-title" }, "Keyboard shortcuts"), list, close);
      keys.append(panel);
      keys.addEventListener("click", (e) => {
        if (e.target === keys) hideKeys();
      });
      document.body.append(keys);
    }
    keysOpener = document.activeElement;
    keys.hidden = false;
    keys.querySelector("button").focus();
  };
  const hideKeys = () => {
    if (!keys || keys.hidden) return;
    keys.hidden = true;
    keysOpener?.focus?.();
  };
  const typing = (t) => t instanceof Element && t.closest("input, textarea, select, [contenteditable]") !== null;
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
    if (keys && !keys.hidden) {
      if (e.key === "Escape" || e.key === "?") {
        e.preventDefault();
        hideKeys();
      }
      return;
    }
    if (openDialog()) return;
    if (e.key === "?") {
      e.preventDefault();
      showKeys();
    } else if (e.key === "/") {
      const search = document.querySelector('header input[type="search"], input[type="search"]');
      if (!search) return;
      e.preventDefault();
      search.focus();
    } else if (e.key === "j" || e.key === "k") {
      const list = document.querySelector("[data-jk-list]");
      if (!list) return;
      const items = [...list.querySelectorAll("[data-jk]")];
      const at = items.findIndex((n) => n === document.activeElement || n.contains(document.activeElement));
      const to = items[at === -1 ? 0 : Math.max(0, Math.min(items.length - 1, at + (e.key === "j" ? 1 : -1)))];
      if (!to) return;
      e.preventDefault();
      if (!to.matches(FOCUSABLE)) to.setAttribute("tabindex", "-1");
      to.focus();
      to.scrollIntoView({ block: "nearest" });
      if (e.key === "j" && to === items.at(-1)) void loadMore();
    } else if ((e.key === "ArrowLeft" || e.key === "ArrowRight") && !box) {
      // An item's page: its previous/next links.
      const link = document.querySelector(`.item-nav a[data-key="${e.key}"]`);
      if (link) link.click();
    }
  });
  // The skip link lands on the grid where there is one: its first tile is the next Tab.
  const skip = document.querySelector("a.skip");
  if (skip && document.getElementById("grid")) skip.setAttribute("href", "#grid");

  // ---- running work -------------------------------------------------------------------------------------
  const activity = document.querySelector("[data-activity]");
  if (activity) {
    const state = activity.querySelector("[data-state]");
    const last = activity.querySelector("[data-last]");
    const poll = () => {
      fetch(activity.dataset.activity, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`HTTP ${r.status}`))))
        .then((a) => {
          state.className = a.busy ? "busy" : "idle";
          state.textContent = a.summary;
          if (last && a.lastSyncAt) {
            last.dataset.last = a.lastSyncAt;
            last.textContent = `last sync finished ${a.lastSyncAt.slice(0, 16).replace("T", " ")} UTC`;
          }
          setTimeout(poll, a.busy ? 1000 : 4000);
        })
        .catch(() => setTimeout(poll, 10000));
    };
    poll();
  }
})();
