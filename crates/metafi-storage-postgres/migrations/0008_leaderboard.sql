-- Leaderboards (and, later, tournaments: the same row with a duration, start and end time), as
-- Nakama's `leaderboard` table. Times: create_time in ms; start_time/end_time in Unix seconds.
CREATE TABLE leaderboard (
    id             text     COLLATE "C" NOT NULL PRIMARY KEY,
    authoritative  boolean  NOT NULL DEFAULT false,
    sort_order     smallint NOT NULL DEFAULT 1,
    operator       smallint NOT NULL DEFAULT 0,
    reset_schedule text     NOT NULL DEFAULT '',
    metadata       text     NOT NULL DEFAULT '{}',
    create_time    bigint   NOT NULL,
    enable_ranks   boolean  NOT NULL DEFAULT false,
    category       integer  NOT NULL DEFAULT 0,
    description    text     NOT NULL DEFAULT '',
    duration       integer  NOT NULL DEFAULT 0,
    start_time     bigint   NOT NULL DEFAULT 0,
    end_time       bigint   NOT NULL DEFAULT 0,
    join_required  boolean  NOT NULL DEFAULT false,
    max_size       integer  NOT NULL DEFAULT 0,
    max_num_score  integer  NOT NULL DEFAULT 0,
    title          text     NOT NULL DEFAULT ''
);
CREATE INDEX leaderboard_create_time_idx ON leaderboard (create_time, id);

-- One owner's record per board and period (expiry_time in Unix seconds, 0 = never resets).
-- Owners need not be users (Nakama lets the server write records for any id), so no foreign
-- key to users. Listing walks the rank index.
CREATE TABLE leaderboard_record (
    leaderboard_id text     COLLATE "C" NOT NULL REFERENCES leaderboard (id) ON DELETE CASCADE,
    expiry_time    bigint   NOT NULL DEFAULT 0,
    owner_id       uuid     NOT NULL,
    username       text,
    score          bigint   NOT NULL DEFAULT 0 CHECK (score >= 0),
    subscore       bigint   NOT NULL DEFAULT 0 CHECK (subscore >= 0),
    num_score      integer  NOT NULL DEFAULT 1,
    max_num_score  integer  NOT NULL DEFAULT 0,
    metadata       text     NOT NULL DEFAULT '{}',
    create_time    bigint   NOT NULL,
    update_time    bigint   NOT NULL,
    PRIMARY KEY (leaderboard_id, expiry_time, owner_id)
);
CREATE INDEX leaderboard_record_rank_idx
    ON leaderboard_record (leaderboard_id, expiry_time, score, subscore, owner_id);
CREATE INDEX leaderboard_record_owner_idx ON leaderboard_record (owner_id);
