-- Groups and memberships (Nakama's `groups` and `group_edge`). Times are ms since the epoch.

-- `open`: 1 open (Nakama's state 0), 0 closed. `edge_count` counts superadmins, admins and
-- members; join requests and bans do not count.
CREATE TABLE groups (
    id           BLOB    NOT NULL PRIMARY KEY,
    creator_id   BLOB    NOT NULL,
    name         TEXT    NOT NULL UNIQUE,
    description  TEXT    NOT NULL DEFAULT '',
    avatar_url   TEXT    NOT NULL DEFAULT '',
    lang_tag     TEXT    NOT NULL DEFAULT 'en',
    metadata     TEXT    NOT NULL DEFAULT '{}',
    open         INTEGER NOT NULL CHECK (open IN (0, 1)),
    edge_count   INTEGER NOT NULL CHECK (edge_count >= 0),
    max_count    INTEGER NOT NULL CHECK (max_count >= 1),
    create_time  INTEGER NOT NULL,
    update_time  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX groups_update_time_idx ON groups (update_time, id);
CREATE INDEX groups_lang_tag_idx ON groups (lang_tag, update_time, id);

-- One row per (group, user). `position` orders a state's users by when they got it.
CREATE TABLE group_edge (
    group_id    BLOB    NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    user_id     BLOB    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    state       INTEGER NOT NULL CHECK (state BETWEEN 0 AND 4),
    position    INTEGER NOT NULL,
    update_time INTEGER NOT NULL,
    PRIMARY KEY (group_id, user_id)
) WITHOUT ROWID;
CREATE INDEX group_edge_group_list_idx ON group_edge (group_id, state, position, user_id);
CREATE INDEX group_edge_user_list_idx ON group_edge (user_id, state, position, group_id);

-- A deleted user leaves its groups as Nakama's account deletion does: a group where it was
-- the only superadmin is deleted with all its memberships; elsewhere the group counts one
-- member less. (The memberships themselves go with the user by the foreign key.)
CREATE TRIGGER users_delete_leaves_groups BEFORE DELETE ON users
BEGIN
    DELETE FROM groups WHERE id IN (
        SELECT e.group_id FROM group_edge e
        WHERE e.user_id = OLD.id AND e.state = 0
          AND NOT EXISTS (
              SELECT 1 FROM group_edge o
              WHERE o.group_id = e.group_id AND o.state = 0 AND o.user_id <> OLD.id
          )
    );
    UPDATE groups SET edge_count = edge_count - 1
    WHERE id IN (SELECT group_id FROM group_edge WHERE user_id = OLD.id AND state <= 2);
END;
