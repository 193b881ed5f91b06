// The client's methods for the staging area (Sta.sh): submit and publish; each goes through its catalogue entry.
import { type StashPublishResult, StashPublishResultSchema, type StashSubmitResult, StashSubmitResultSchema } from "../types.ts";
import type { ClientBase } from "./core.ts";
import { licenseForm, list } from "./forms.ts";
import type { StashPublish, StashSubmit } from "./params.ts";

/** The staging area (Sta.sh) methods of the client, mixed into DaClient (src/api/client.ts). */
export function StashMethods<B extends ClientBase>(Base: B) {
  return class extends Base {
    // ---- writes: stash (scope: stash; publish also needs publish) -----------------------------------
    /**
     * Scope: stash. TODO(multipart): ApiTransport sends form bodies only, so files cannot be uploaded yet;
     * this sends the metadata fields (useful to modify an existing `itemid`). A new submission needs files.
     */
    stashSubmit(fields: StashSubmit): Promise<StashSubmitResult> {
      if ((fields as { files?: unknown }).files !== undefined) {
        throw new Error("stashSubmit: file uploads need a multipart body, which the HTTP transport does not send yet");
      }
      const { tags, ...rest } = fields;
      return this.get("stash.submit", { ...rest, tags: list(tags) }, StashSubmitResultSchema);
    }

    /** Scopes: stash, publish. */
    stashPublish(fields: StashPublish): Promise<StashPublishResult> {
      const { license, galleryids, mature_classification, extra, ...rest } = fields;
      return this.get(
        "stash.publish",
        {
          ...rest,
          ...(license ? licenseForm(license) : {}),
          galleryids: list(galleryids),
          mature_classification: list(mature_classification),
          ...extra,
        },
        StashPublishResultSchema,
      );
    }
  };
}
