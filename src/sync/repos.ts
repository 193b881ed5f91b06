// The mirror repositories a sync source uses, bound to one Queryable (the pool, or a transaction).
import { CommentRepository } from "../db/comment.repository.ts";
import { DeviationRepository } from "../db/deviation.repository.ts";
import { DownloadRepository } from "../db/download.repository.ts";
import { FeedRepository } from "../db/feed.repository.ts";
import { FolderRepository } from "../db/folder.repository.ts";
import { MessageRepository } from "../db/message.repository.ts";
import { NotArchivableRepository } from "../db/not-archivable.repository.ts";
import { NoteRepository } from "../db/note.repository.ts";
import { PostRepository } from "../db/post.repository.ts";
import { StashRepository } from "../db/stash.repository.ts";
import { StaticDataRepository } from "../db/static-data.repository.ts";
import { SyncStateRepository } from "../db/sync-state.repository.ts";
import { TrackedUserRepository } from "../db/tracked-user.repository.ts";
import { UserRepository } from "../db/user.repository.ts";
import { WatchRepository } from "../db/watch.repository.ts";
import type { Queryable } from "../db/with-transaction.ts";

export type SyncRepos = {
  deviations: DeviationRepository;
  users: UserRepository;
  watch: WatchRepository;
  folders: FolderRepository;
  comments: CommentRepository;
  posts: PostRepository;
  feed: FeedRepository;
  messages: MessageRepository;
  notes: NoteRepository;
  notArchivable: NotArchivableRepository;
  stash: StashRepository;
  staticData: StaticDataRepository;
  syncState: SyncStateRepository;
  tracked: TrackedUserRepository;
  downloads: DownloadRepository;
};

export function syncRepos(db: Queryable): SyncRepos {
  return {
    deviations: new DeviationRepository(db),
    users: new UserRepository(db),
    watch: new WatchRepository(db),
    folders: new FolderRepository(db),
    comments: new CommentRepository(db),
    posts: new PostRepository(db),
    feed: new FeedRepository(db),
    messages: new MessageRepository(db),
    notes: new NoteRepository(db),
    notArchivable: new NotArchivableRepository(db),
    stash: new StashRepository(db),
    staticData: new StaticDataRepository(db),
    syncState: new SyncStateRepository(db),
    tracked: new TrackedUserRepository(db),
    downloads: new DownloadRepository(db),
  };
}
