-- Leaderboards (and, later, tournaments: the same row with a duration, start and end time), as
-- Nakama's `leaderboard` table. Times: create_time in ms; start_time/end_time in Unix seconds.
CREATE TABLE leaderboard (
    id             TEXT    NOT NULL PRIMARY KEY,
    authoritative  INTEGER NOT NULL DEFAULT 0,
    sort_order     INTEGER NOT NULL DEFAULT 1,
    operator       INTEGER NOT NULL DEFAULT 0,
    reset_schedule TEXT    NOT NULL DEFAULT '',
    metadata       TEXT    NOT NULL DEFAULT '{}',
    create_time    INTEGER NOT NULL,
    enable_ranks   INTEGER NOT NULL DEFAULT 0,
    category       INTEGER NOT NULL DEFAULT 0,
    description    TEXT    NOT NULL DEFAULT '',
    duration       INTEGER NOT NULL DEFAULT 0,
    start_time     INTEGER NOT NULL DEFAULT 0,
    end_time       INTEGER NOT NULL DEFAULT 0,
    join_required  INTEGER NOT NULL DEFAULT 0,
    max_size       INTEGER NOT NULL DEFAULT 0,
    max_num_score  INTEGER NOT NULL DEFAULT 0,
    title          TEXT    NOT NULL DEFAULT ''
) WITHOUT ROWID;
CREATE INDEX leaderboard_create_time_idx ON leaderboard (create_time, id);

-- One owner's record per board and period (expiry_time in Unix seconds, 0 = never resets).
-- Owners need not be users (Nakama lets the server write records for any id), so no foreign
-- key to users. Listing walks the rank index.
CREATE TABLE leaderboard_record (
    leaderboard_id TEXT    NOT NULL REFERENCES leaderboard (id) ON DELETE CASCADE,
    expiry_time    INTEGER NOT NULL DEFAULT 0,
    owner_id       BLOB    NOT NULL,
    username       TEXT,
    score          INTEGER NOT NULL DEFAULT 0 CHECK (score >= 0),
    subscore       INTEGER NOT NULL DEFAULT 0 CHECK (subscore >= 0),
    num_score      INTEGER NOT NULL DEFAULT 1,
    max_num_score  INTEGER NOT NULL DEFAULT 0,
    metadata       TEXT    NOT NULL DEFAULT '{}',
    create_time    INTEGER NOT NULL,
    update_time    INTEGER NOT NULL,
    PRIMARY KEY (leaderboard_id, expiry_time, owner_id)
) WITHOUT ROWID;
CREATE INDEX leaderboard_record_rank_idx
    ON leaderboard_record (leaderboard_id, expiry_time, score, subscore, owner_id);
CREATE INDEX leaderboard_record_owner_idx ON leaderboard_record (owner_id);
