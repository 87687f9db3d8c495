-- Friend relationships (Nakama's user_edge): one row per direction. state: 0 friend, 1 invite
-- sent, 2 invite received, 3 blocked. position orders a listing within a state (creation time,
-- ms); the destination id breaks ties, so the listing index is (source, state, position, dest).
CREATE TABLE user_edge (
    source_id      BLOB    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    destination_id BLOB    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    state          INTEGER NOT NULL CHECK (state BETWEEN 0 AND 3),
    position       INTEGER NOT NULL,
    update_time    INTEGER NOT NULL,
    metadata       TEXT    NOT NULL DEFAULT '{}',
    PRIMARY KEY (source_id, destination_id)
) WITHOUT ROWID;
CREATE INDEX user_edge_list_idx ON user_edge (source_id, state, position, destination_id);
-- The cascade on a deleted destination looks edges up by destination.
CREATE INDEX user_edge_destination_idx ON user_edge (destination_id);
