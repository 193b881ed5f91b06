// dvault's dashboard script: progressive enhancement only, every page works without it. Served from
// /assets/app.<hash>.js under `script-src 'self'`; it reads what it needs from data-* attributes and JSON
// endpoints and writes text with textContent only, so nothing the service wrote can become markup or code.
//   - the archive grid: a lightbox (click a tile; ←/→, Esc, swipe), and the next page appended when the pager
//     scrolls into view (its plain links stay for browsers without script);
//   - [data-activity]: polls /api/activity (Redis and Postgres, so a worker on another host shows too).
(() => {
  const group = (n) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, "\u00a0");

  // ---- infinite scroll ----------------------------------------------------------------------------------
  const grid = document.querySelector(".thumbs");
  let loading = null;
  /** Appends the next page's tiles; resolves false when there is none. */
  const loadMore = () => {
    const pager = document.querySelector("nav.pager[data-next]");
    if (!grid || !pager) return Promise.resolve(false);
    if (loading) return loading;
    loading = fetch(pager.dataset.next, { headers: { Accept: "text/html" }, credentials: "same-origin" })
      .then((r) => (r.ok ? r.text() : Promise.reject(new Error(`HTTP ${r.status}`))))
      .then((text) => {
        const doc = new DOMParser().parseFromString(text, "text/html");
        for (const tile of doc.querySelectorAll(".thumbs > .thumb")) grid.append(document.adoptNode(tile));
        const next = doc.querySelector("nav.pager");
        if (next) pager.replaceWith(document.adoptNode(next));
        else pager.remove();
        const count = document.querySelector(".count[data-total]");
        const got = doc.querySelector(".count[data-total]");
        if (count && got) {
          count.dataset.to = got.dataset.to;
          // The total the lightbox shows is the one the newest page counted, as the line says.
          count.dataset.total = got.dataset.total;
          count.textContent = `${group(count.dataset.from)}–${group(got.dataset.to)} of ${group(got.dataset.total)}`;
        }
        watchPager();
        return true;
      })
      .catch(() => false)
      .finally(() => {
        loading = null;
      });
    return loading;
  };
  let observer = null;
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

  // ---- lightbox -----------------------------------------------------------------------------------------
  const tiles = () => [...document.querySelectorAll(".thumbs > .thumb[data-full]")];
  let box = null;
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
    const img = el("img", { alt: "", draggable: "false" });
    const cap = el("div", { class: "lb-cap" });
    const close = el("button", { type: "button", class: "lb-close", "aria-label": "Close (Esc)" }, "×");
    const prev = el("button", { type: "button", class: "lb-prev", "aria-label": "Previous (←)" }, "‹");
    const next = el("button", { type: "button", class: "lb-next", "aria-label": "Next (→)" }, "›");
    box.append(img, cap, close, prev, next);
    close.addEventListener("click", hide);
    prev.addEventListener("click", () => step(-1));
    next.addEventListener("click", () => step(1));
    box.addEventListener("click", (e) => {
      if (e.target === box) hide();
    });
    let startX = null;
    box.addEventListener("pointerdown", (e) => {
      startX = e.clientX;
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
  const show = (i) => {
    const all = tiles();
    const tile = all[i];
    if (!tile) return;
    if (!box) build();
    current = i;
    const [img, cap] = box.children;
    img.src = tile.dataset.full;
    img.alt = tile.dataset.title || "";
    // The tile's place in the whole listing (data-pos, from the server), not among the tiles of this page.
    const total = document.querySelector(".count[data-total]")?.dataset.total;
    cap.replaceChildren(
      el("a", { href: tile.getAttribute("href") }, tile.dataset.title || "(untitled)"),
      document.createTextNode(` · ${tile.dataset.meta || ""} · ${group(tile.dataset.pos ?? i + 1)} of ${group(total ?? all.length)}`),
    );
    box.hidden = false;
    box.querySelector(".lb-close").focus();
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
    if (!box || box.hidden) return;
    if (e.key === "Escape") hide();
    else if (e.key === "ArrowRight") void step(1);
    else if (e.key === "ArrowLeft") void step(-1);
    else return;
    e.preventDefault();
  });

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
