// The dashboard's pages, rendered on the server with html`` (escaped by default), one stylesheet and one small
// script from /assets (src/http/assets.ts): each page lives in src/http/pages/.
export { type ArchiveView, archivePage, tile } from "./pages/archive.ts";
export { itemPage } from "./pages/item.ts";
export { jobsPage, messagePage } from "./pages/jobs.ts";
export { layout, type NavKey } from "./pages/layout.ts";
export { type SearchView, searchPage } from "./pages/search.ts";
export { activitySummary, type OverviewActions, overviewPage } from "./pages/overview.ts";
export { PLACEHOLDER_SVG, TEXT_SVG } from "./pages/svg.ts";
