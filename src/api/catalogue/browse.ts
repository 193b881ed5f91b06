// Catalogue entries of one area (browse, curated content, the service's static data and the placebo check); each carries its response schema, so the
// client validates an answer with the entry it sent the request for.
import {
  CategoryTreeSchema,
  CountriesSchema,
  CuratedSchema,
  DailyDeviationsSchema,
  MltPreviewSchema,
  PlaceboSchema,
  PolicyTextSchema,
  TagSearchResponseSchema,
  TopTopicsSchema,
  TopicSchema,
} from "../types.ts";
import { READ_ANY_BROWSE, USER, offset, cursor, LIST, type Entry } from "./operation.ts";
import { offsetPage, DeviationPage } from "./pages.ts";

// Browse
export const BROWSE_ENTRIES = [
  { id: "browse.categorytree", method: "GET", path: "/browse/categorytree", ...READ_ANY_BROWSE,
    purpose: "Category information for browsing", note: "categories were retired in 2022; availability uncertain (docs/service-behaviour.md#endpoint-status)",
    response: CategoryTreeSchema },
  { id: "browse.dailydeviations", method: "GET", path: "/browse/dailydeviations", ...READ_ANY_BROWSE, ...LIST, matureContent: true,
    purpose: "Daily deviations", note: "takes date=YYYY-MM-DD; returns has_more but no usable paging (docs/service-behaviour.md#browse-paging)",
    response: DailyDeviationsSchema },
  { id: "browse.deviantsyouwatch", method: "GET", path: "/browse/deviantsyouwatch", ...USER(["browse"]), ...offset(50), matureContent: true,
    listing: "A", purpose: "Deviations of users the caller watches",
    removed: { since: "2024-07-29", reason: "answers 404 \"Api endpoint not found.\" (docs/service-behaviour.md#endpoint-status)" },
    response: DeviationPage },
  { id: "browse.home", method: "GET", path: "/browse/home", ...READ_ANY_BROWSE, ...offset(50), matureContent: true,
    listing: "A", purpose: "Homepage browse",
    response: DeviationPage },
  { id: "browse.hot", method: "GET", path: "/browse/hot", ...READ_ANY_BROWSE, ...offset(undefined), matureContent: true,
    listing: "B", purpose: "Hot deviations", note: "not in any current wrapper; availability uncertain (docs/service-behaviour.md#endpoint-status)",
    response: DeviationPage },
  { id: "browse.morelikethis", method: "GET", path: "/browse/morelikethis", token: "any", scopes: ["browse", "browse.mlt"], write: false,
    ...offset(undefined), matureContent: true, purpose: "More Like This result for a seed deviation",
    removed: { since: "unknown (reported gone by dakit 0.1.11)", reason: "the page endpoint no longer exists; only /browse/morelikethis/preview remains (docs/service-behaviour.md#endpoint-status)" },
    response: DeviationPage },
  { id: "browse.morelikethis.preview", method: "GET", path: "/browse/morelikethis/preview", token: "any", scopes: ["browse", "browse.mlt"],
    write: false, matureContent: true, purpose: "More Like This preview for a seed deviation",
    response: MltPreviewSchema },
  { id: "browse.newest", method: "GET", path: "/browse/newest", ...READ_ANY_BROWSE, ...offset(120), matureContent: true,
    listing: "B", purpose: "Newest deviations", note: "120 documented, 24 effective (docs/service-behaviour.md#browse-limit-cap)",
    removed: { since: "2024-08", reason: "removed from the API (docs/service-behaviour.md#endpoint-status)" },
    response: DeviationPage },
  { id: "browse.popular", method: "GET", path: "/browse/popular", ...READ_ANY_BROWSE, ...offset(120), matureContent: true,
    purpose: "Popular deviations", note: "120 documented, 24 effective (docs/service-behaviour.md#browse-limit-cap)",
    removed: { since: "2024-08", reason: "removed from the API (docs/service-behaviour.md#endpoint-status)" },
    response: DeviationPage },
  { id: "browse.tags", method: "GET", path: "/browse/tags", ...READ_ANY_BROWSE, ...offset(50), matureContent: true,
    purpose: "Browse one tag", note: "also accepts cursor paging (docs/service-behaviour.md#browse-paging)",
    response: DeviationPage },
  { id: "browse.tags.search", method: "GET", path: "/browse/tags/search", ...READ_ANY_BROWSE, ...LIST, purpose: "Tag autocomplete",
    response: TagSearchResponseSchema },
  { id: "browse.topic", method: "GET", path: "/browse/topic", ...READ_ANY_BROWSE, ...offset(24), matureContent: true,
    listing: "A", purpose: "Deviations of a topic",
    response: DeviationPage },
  { id: "browse.topics", method: "GET", path: "/browse/topics", ...READ_ANY_BROWSE, ...offset(10), matureContent: true,
    listing: "A", purpose: "Topics with deviations of each", note: "num_deviations_per_topic; huge values give 500 (docs/service-behaviour.md#server-5xx)",
    response: offsetPage(TopicSchema) },
  { id: "browse.toptopics", method: "GET", path: "/browse/toptopics", ...READ_ANY_BROWSE, ...LIST, matureContent: true,
    listing: "A", purpose: "Top topics with an example deviation each",
    response: TopTopicsSchema },
  { id: "browse.undiscovered", method: "GET", path: "/browse/undiscovered", ...READ_ANY_BROWSE, ...offset(undefined), matureContent: true,
    purpose: "Undiscovered deviations", note: "not in any current wrapper; availability uncertain (docs/service-behaviour.md#endpoint-status)",
    response: DeviationPage },
  { id: "browse.user.journals", method: "GET", path: "/browse/user/journals", ...READ_ANY_BROWSE, ...offset(50), matureContent: true,
    purpose: "Journals of a user",
    removed: { since: "2024-08", reason: "removed; /user/profile/posts replaces it (docs/service-behaviour.md#endpoint-status)" },
    response: DeviationPage },
] as const satisfies readonly Entry[];

// Curated
export const CURATED_ENTRIES = [
  { id: "curated", method: "GET", path: "/curated", ...READ_ANY_BROWSE, listing: "B", purpose: "Available curated content",
    note: "not in any current wrapper; availability and shape uncertain (docs/service-behaviour.md#endpoint-status)",
    response: CuratedSchema },
  { id: "curated.tags", method: "GET", path: "/curated/tags", ...READ_ANY_BROWSE, purpose: "Featured tags",
    note: "not in any current wrapper; availability and shape uncertain (docs/service-behaviour.md#endpoint-status)",
    response: CuratedSchema },
] as const satisfies readonly Entry[];

// Data
export const DATA_ENTRIES = [
  { id: "data.countries", method: "GET", path: "/data/countries", token: "any", scopes: [], write: false, ...LIST, purpose: "List of countries",
    response: CountriesSchema },
  { id: "data.privacy", method: "GET", path: "/data/privacy", token: "any", scopes: [], write: false, purpose: "The service's privacy policy",
    response: PolicyTextSchema },
  { id: "data.submission", method: "GET", path: "/data/submission", token: "any", scopes: [], write: false,
    purpose: "The service's submission policy",
    response: PolicyTextSchema },
  { id: "data.tos", method: "GET", path: "/data/tos", token: "any", scopes: [], write: false, purpose: "The service's terms of service",
    response: PolicyTextSchema },
] as const satisfies readonly Entry[];

// Util
export const UTIL_ENTRIES = [
  { id: "placebo", method: "GET", path: "/placebo", token: "any", scopes: [], write: false,
    purpose: "Confirm that the access token is valid",
    response: PlaceboSchema },
] as const satisfies readonly Entry[];
