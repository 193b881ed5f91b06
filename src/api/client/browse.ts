// The client's methods for browsing and the service's static data; each goes through its catalogue entry.
import type { PageIterator } from "../transport.ts";
import {
  type Countries,
  CountriesSchema,
  type DailyDeviations,
  DailyDeviationsSchema,
  type Deviation,
  DeviationSchema,
  type MltPreview,
  MltPreviewSchema,
  type PolicyText,
  PolicyTextSchema,
  type TagSearchResponse,
  TagSearchResponseSchema,
  type Topic,
  TopicSchema,
  type TopTopics,
  TopTopicsSchema,
} from "../types.ts";
import type { ClientBase } from "./core.ts";
import { splitList } from "./forms.ts";
import type { Mature, OffsetListOptions } from "./params.ts";

/** The browse and static-data methods of the client, mixed into DaClient (src/api/client.ts). */
export function BrowseMethods<B extends ClientBase>(Base: B) {
  return class extends Base {
    // ---- static data --------------------------------------------------------------------------------
    countries(): Promise<Countries> {
      return this.get("data.countries", {}, CountriesSchema);
    }

    privacyPolicy(): Promise<PolicyText> {
      return this.get("data.privacy", {}, PolicyTextSchema);
    }

    submissionPolicy(): Promise<PolicyText> {
      return this.get("data.submission", {}, PolicyTextSchema);
    }

    termsOfService(): Promise<PolicyText> {
      return this.get("data.tos", {}, PolicyTextSchema);
    }

    // ---- browse -------------------------------------------------------------------------------------
    browseTags(tag: string, params: Mature & OffsetListOptions = {}): PageIterator<Deviation> {
      const { list, rest } = splitList(params);
      return this.offset("browse.tags", { tag, ...rest }, DeviationSchema, list);
    }

    tagSearch(tag_name: string): Promise<TagSearchResponse> {
      return this.get("browse.tags.search", { tag_name }, TagSearchResponseSchema);
    }

    /** Daily deviations of one day (`YYYY-MM-DD`, today when omitted); not paged. */
    dailyDeviations(params: { date?: string } & Mature = {}): Promise<DailyDeviations> {
      return this.get("browse.dailydeviations", params, DailyDeviationsSchema);
    }

    browseTopic(topic: string, params: Mature & OffsetListOptions = {}): PageIterator<Deviation> {
      const { list, rest } = splitList(params);
      return this.offset("browse.topic", { topic, ...rest }, DeviationSchema, list);
    }

    browseTopics(params: { num_deviations_per_topic?: number } & Mature & OffsetListOptions = {}): PageIterator<Topic> {
      const { list, rest } = splitList(params);
      return this.offset("browse.topics", rest, TopicSchema, list);
    }

    topTopics(params: Mature = {}): Promise<TopTopics> {
      return this.get("browse.toptopics", params, TopTopicsSchema);
    }

    browseHome(params: Mature & OffsetListOptions = {}): PageIterator<Deviation> {
      const { list, rest } = splitList(params);
      return this.offset("browse.home", rest, DeviationSchema, list);
    }

    mltPreview(seed: string, params: Mature = {}): Promise<MltPreview> {
      return this.get("browse.morelikethis.preview", { seed, ...params }, MltPreviewSchema);
    }
  };
}
