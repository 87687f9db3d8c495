-- Groups and memberships (Nakama's `groups` and `group_edge`). Times are bigint ms.

-- `open`: true open (Nakama's state 0), false closed. `edge_count` counts superadmins,
-- admins and members; join requests and bans do not count.
CREATE TABLE groups (
    id           uuid     NOT NULL PRIMARY KEY,
    creator_id   uuid     NOT NULL,
    name         text     COLLATE "C" NOT NULL CONSTRAINT groups_name_key UNIQUE,
    description  text     NOT NULL DEFAULT '',
    avatar_url   text     NOT NULL DEFAULT '',
    lang_tag     text     COLLATE "C" NOT NULL DEFAULT 'en',
    metadata     text     NOT NULL DEFAULT '{}',
    open         boolean  NOT NULL,
    edge_count   integer  NOT NULL CHECK (edge_count >= 0),
    max_count    integer  NOT NULL CHECK (max_count >= 1),
    create_time  bigint   NOT NULL,
    update_time  bigint   NOT NULL
);
CREATE INDEX groups_update_time_idx ON groups (update_time, id);
CREATE INDEX groups_lang_tag_idx ON groups (lang_tag, update_time, id);

-- One row per (group, user). `position` orders a state's users by when they got it.
CREATE TABLE group_edge (
    group_id    uuid     NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    user_id     uuid     NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    state       integer  NOT NULL CHECK (state BETWEEN 0 AND 4),
    position    bigint   NOT NULL,
    update_time bigint   NOT NULL,
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX group_edge_group_list_idx ON group_edge (group_id, state, position, user_id);
CREATE INDEX group_edge_user_list_idx ON group_edge (user_id, state, position, group_id);

-- A deleted user leaves its groups as Nakama's account deletion does: a group where it was
-- the only superadmin is deleted with all its memberships; elsewhere the group counts one
-- member less. (The memberships themselves go with the user by the foreign key.) The group
-- rows are locked first, as membership changes lock them.
CREATE FUNCTION metafi_user_leaves_groups() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM groups
    WHERE id IN (SELECT group_id FROM group_edge WHERE user_id = OLD.id)
    ORDER BY id FOR UPDATE;
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
    RETURN OLD;
END
$$;
CREATE TRIGGER users_delete_leaves_groups BEFORE DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION metafi_user_leaves_groups();
